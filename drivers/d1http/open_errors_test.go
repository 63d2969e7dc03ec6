package d1http

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// TestOpenFailureCodes: a DSN D1 will never accept (a refused token, an
// unknown database) is permanent (invalid_argument with D1's reason); an
// endpoint that does not answer is retryable; a refused token or an
// unknown database is never sync.storage.internal.
func TestOpenFailureCodes(t *testing.T) {
	srv, base := newDouble(t)
	dsn, _, err := Driver{}.Provision(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "&endpoint=" + srv.URL + "&request_timeout_ms=2000&max_attempts=2"
	testdb.CheckOpenFailures(t, Driver{}, []testdb.OpenFailure{
		{Name: "refused token", DSN: "d1://acct/" + cfg.database + "?token=wrong" + endpoint,
			Code: driver.CodeInvalidArgument, Reason: "Authentication error"},
		{Name: "unknown database", DSN: "d1://acct/00000000-0000-0000-0000-000000000000?token=" + testToken + endpoint,
			Code: driver.CodeInvalidArgument, Reason: "could not be found"},
		{Name: "nothing listening", DSN: "d1://acct/" + cfg.database + "?token=" + testToken +
			"&endpoint=http://" + testdb.RefusedAddr(t) + "&request_timeout_ms=2000&max_attempts=2",
			Code: driver.CodeUnavailable, Reason: "connection refused"},
	})
}
