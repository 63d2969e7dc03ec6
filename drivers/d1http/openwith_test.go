package d1http

import (
	"context"
	"database/sql"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
)

// countingTransport counts the requests it carries.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// OpenWith sends every request through the host's *http.Client, to the
// endpoint of Options (the DSN's names a server that does not exist);
// D1 has no transaction handle, so a Tx's As gives none (TX-11).
func TestOpenWithHostClientAndEndpoint(t *testing.T) {
	ctx := context.Background()
	srv := d1test.NewServer(testToken)
	t.Cleanup(srv.Close)
	dsn, _, err := Driver{}.Provision(ctx, "d1://acct?token="+testToken+"&endpoint="+srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The same database, through a DSN whose endpoint answers nothing.
	cfg, err := parseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.endpoint = "http://127.0.0.1:1"
	tr := &countingTransport{}
	c, err := OpenWith(ctx, cfg.dsn(cfg.database), Options{HTTPClient: &http.Client{Transport: tr}, Endpoint: srv.URL + "/"})
	if err != nil {
		t.Fatalf("OpenWith: %v", err)
	}
	defer c.Close()
	if err := c.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	before := tr.n.Load()
	tx, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	var stx *sql.Tx
	if driver.AsOf(tx, &stx) || driver.AsOf(c, &stx) {
		t.Fatal("a d1http Tx or Conn handed out a *sql.Tx")
	}
	if err := tx.UpsertRow(ctx, "todos", driver.Row{ID: "t1", ServerVersion: 1,
		Scopes: driver.Scopes{"project": "p7", "owner": "o1"},
		Values: driver.Values{"id": "t1", "title": "x", "done": false, "project_id": "p7", "owner_id": "o1", "updated_at": int64(1)}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tr.n.Load() <= before {
		t.Fatalf("requests through the host's client: %d before Begin, %d after Commit", before, tr.n.Load())
	}
	if _, found, err := c.GetRow(ctx, "p1", "todos", "t1"); err != nil || !found {
		t.Fatalf("row through the host's client: found=%v err=%v", found, err)
	}

	if _, err := OpenWith(ctx, dsn, Options{Endpoint: "ftp://x"}); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("OpenWith(bad endpoint) = %v, want invalid_argument", err)
	}
}
