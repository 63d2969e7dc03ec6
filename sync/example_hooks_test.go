package sync_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/sync"
)

// opMetrics counts calls, errors by code and time spent, per Call.Op (a
// stand-in for a metrics library's counters and histograms). The
// partition is left out of the labels: it is the host's data, and there
// may be millions.
type opMetrics struct {
	mu     gosync.Mutex
	calls  map[string]int
	errors map[string]int
	spent  time.Duration
}

func (m *opMetrics) hooks() sync.Hooks {
	return sync.Hooks{Start: func(ctx context.Context, c sync.Call) (context.Context, func(error)) {
		start := time.Now()
		return ctx, func(err error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.calls[c.Op]++
			if err != nil {
				m.errors[c.Op+" "+string(sync.CodeOf(err))]++
			}
			m.spent += time.Since(start)
		}
	}}
}

// A host counts every call of its Store, by operation and error code.
func ExampleHooks() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "syncstore-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sync.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	m := &opMetrics{calls: map[string]int{}, errors: map[string]int{}}
	store.SetHooks(m.hooks())

	if err := store.EnsureSchema(ctx, notesSchema()); err != nil {
		panic(err)
	}
	for _, id := range []string{"n1", "n2"} {
		if _, err := store.Push(ctx, "tenant-1", sync.PushRequest{ClientID: "c1", ClientCommitID: "k-" + id,
			ActorID: "a1", Ops: []sync.PushOp{noteOp(id, "hello", nil)}}); err != nil {
			panic(err)
		}
	}
	_, _, _ = store.GetRow(ctx, "tenant-1", "no_such_table", "n1") // rejected: still counted

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range slices.Sorted(maps.Keys(m.calls)) {
		fmt.Println(op, m.calls[op])
	}
	for k, n := range m.errors {
		fmt.Println("error:", k, n)
	}
	// Output:
	// Store.EnsureSchema 1
	// Store.GetRow 1
	// Store.Push 2
	// error: Store.GetRow sync.storage.unknown_table 1
}
