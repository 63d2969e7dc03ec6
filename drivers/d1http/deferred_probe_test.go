package d1http

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// TestDeferredHostsPushDense (SEQ-4, PUSH-1, PUSH-7, TX-9): three Conns on
// one database push to two partitions at once (faulttest.HostsPush: Push,
// bare driver pushes begun from the stamp a Conn knows and retried on
// write_conflict, RunInTx): every push once, seqs 1…N.
func TestDeferredHostsPushDense(t *testing.T) {
	ctx := context.Background()
	srv, _ := newDouble(t)
	dsn, _, err := Driver{}.Provision(ctx, "d1://acct?token="+testToken+"&endpoint="+srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	conns := []driver.Conn{openProvisioned(t, dsn), openProvisioned(t, dsn), openProvisioned(t, dsn)}
	_, conflicts := faulttest.HostsPush(t, conns, conformance.TestSchema(), 12)
	t.Logf("%d write conflicts retried", conflicts)
}
