package driver

import (
	"context"
	"testing"
)

// asConn is a fake Conn with As: it hands out the string "conn handle" to
// a *string target; its Tx values hand out "tx handle".
type asConn struct{ *fconn }

func (c asConn) As(target any) bool { return setString(target, "conn handle") }

func (c asConn) Begin(ctx context.Context, p string) (Tx, error) {
	tx, err := c.fconn.Begin(ctx, p)
	return asTx{tx}, err
}

type asTx struct{ Tx }

func (t asTx) As(target any) bool { return setString(target, "tx handle") }

func setString(target any, v string) bool {
	p, ok := target.(*string)
	if ok {
		*p = v
	}
	return ok
}

// The escape hatch reaches through wrappers (two layers) to the driver's
// own As, for the Conn and its Tx; a target the driver does not know, and
// a driver without As, answer false.
func TestWrapForwardsAs(t *testing.T) {
	ctx := context.Background()
	w := WrapConn(WrapConn(asConn{&fconn{}}, Hooks{}), Hooks{})
	var got string
	if !AsOf(w, &got) || got != "conn handle" {
		t.Fatalf("As through the wrapped Conn = %q, want %q", got, "conn handle")
	}
	var n int
	if AsOf(w, &n) {
		t.Fatal("As with a target the driver does not know returned true")
	}
	tx, err := w.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	got = ""
	if !AsOf(tx, &got) || got != "tx handle" {
		t.Fatalf("As through the wrapped Tx = %q, want %q", got, "tx handle")
	}

	plain := WrapConn(&fconn{}, Hooks{})
	if AsOf(plain, &got) {
		t.Fatal("As through a wrapper of a Conn without As returned true")
	}
	ptx, err := plain.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if AsOf(ptx, &got) {
		t.Fatal("As through a wrapper of a Tx without As returned true")
	}
	if AsOf(nil, &got) {
		t.Fatal("AsOf(nil) returned true")
	}
}
