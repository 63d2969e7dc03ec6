package partgate

import (
	"context"
	"errors"
	"testing"
)

func TestGates(t *testing.T) {
	var gs Gates[int64]
	ctx := context.Background()
	a, err := gs.Enter(ctx, "p")
	if err != nil || a.Known {
		t.Fatalf("first Enter: known %v, %v; want unknown, nil", a.Known, err)
	}
	if _, ok := gs.TryEnter("p"); ok {
		t.Fatal("TryEnter succeeded while the partition is held")
	}
	if b, ok := gs.TryEnter("q"); !ok {
		t.Fatal("TryEnter of another partition failed")
	} else {
		gs.Leave(b, 0, false, false)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := gs.Enter(cctx, "p"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enter behind a held partition with an ended context: %v", err)
	}
	got := make(chan Entered[int64])
	go func() {
		e, _ := gs.Enter(ctx, "p")
		got <- e
	}()
	gs.Leave(a, 7, true, false)
	b := <-got
	if !b.Known || b.V != 7 {
		t.Fatalf("after Leave(7, known): %+v", b)
	}
	gs.Leave(b, 8, true, true) // a guard failed: backed off
	c, err := gs.Enter(ctx, "p")
	if err != nil || c.Known {
		t.Fatalf("after a conflict: known %v, %v; want unknown for Backoff", c.Known, err)
	}
	gs.Leave(c, 9, false, false)
	gs.Leave(Entered[int64]{}, 0, true, false) // a zero Entered is ignored
	if d, ok := gs.TryEnter("p"); !ok || d.Known {
		t.Fatalf("after Leave(known false): %+v, %v", d, ok)
	}
}
