package conformance_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestBindingCasesCatchBrokenDrivers runs the client-record, registry and
// pull cases against wrappers of the SQLite driver whose Tx.BindClient
// breaks CR-7: the binding cases must fail, and only they.
func TestBindingCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^(CR|REG|PULL)-[0-9]+/`)
	runBroken(t, []brokenDriver{
		// A BindClient that binds nothing: another actor pushes under a
		// client id, and two first calls both land.
		{name: "bind-client-binds-nothing", match: match, want: []string{"CR-7"},
			wrap: func(c driver.Conn) driver.Conn { return &bindBroken{connWrap: connWrap{c}} }},
		// A binding that lands with Commit only: a rejected push leaves
		// its client id free.
		{name: "rejection-drops-the-binding", match: match, want: []string{"CR-7"},
			wrap: func(c driver.Conn) driver.Conn { return &bindBroken{connWrap: connWrap{c}, commitOnly: true} }},
	})
}

// bindBroken wraps a Conn whose Txs bind no client (commitOnly: bind
// only at Commit, never at CommitRejected).
type bindBroken struct {
	connWrap
	commitOnly bool
}

func (c *bindBroken) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &bindBrokenTx{txWrap: txWrap{tx}, c: c}, nil
}

type bindBrokenTx struct {
	txWrap
	c    *bindBroken
	bind func(ctx context.Context) error
}

func (t *bindBrokenTx) BindClient(ctx context.Context, clientID, actorID string, atMs int64) error {
	if t.c.commitOnly {
		t.bind = func(ctx context.Context) error { return t.Tx.BindClient(ctx, clientID, actorID, atMs) }
	}
	return nil
}

func (t *bindBrokenTx) Commit(ctx context.Context) error {
	if t.bind != nil {
		if err := t.bind(ctx); err != nil {
			_ = t.Tx.Rollback(ctx)
			return err
		}
	}
	return t.Tx.Commit(ctx)
}
