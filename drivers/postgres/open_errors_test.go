package postgres

import (
	"net/url"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// TestOpenFailureCodes: a DSN that can never work is permanent
// (invalid_argument with the server's reason), an unreachable server is
// retryable: an unknown database or role is never sync.storage.internal
// with only "SQLSTATE 3D000".
func TestOpenFailureCodes(t *testing.T) {
	server := testdb.PostgresServer(t)
	role, err := url.Parse(testdb.PostgresDSNFor(server, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	role.User = url.User("syncstore_no_such_role")
	refused := testdb.RefusedAddr(t)
	testdb.CheckOpenFailures(t, Driver{}, []testdb.OpenFailure{
		{Name: "unknown database", DSN: testdb.PostgresDSNFor(server, "syncstore_no_such_db_"+testdb.RandomName()),
			Code: driver.CodeInvalidArgument, Reason: "does not exist (SQLSTATE 3D000)"},
		{Name: "unknown role", DSN: role.String(), Code: driver.CodeInvalidArgument, Reason: `role "syncstore_no_such_role"`},
		{Name: "nothing listening", DSN: "postgres://postgres@" + refused + "/postgres?sslmode=disable&connect_timeout=5",
			Code: driver.CodeUnavailable, Reason: "connection refused"},
	})
}
