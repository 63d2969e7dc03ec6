package d1http

import (
	"context"
	"testing"

	"github.com/syncstore/syncstore/internal/modeltest"
	"github.com/syncstore/syncstore/sync"
)

// TestModel runs the engine's model test (internal/modeltest) on the D1
// double: 8 clients, seeds 1…2, a fresh database each.
func TestModel(t *testing.T) {
	_, base := newDouble(t)
	for seed := range uint64(2) {
		t.Run(modeltest.Name(seed+1), func(t *testing.T) {
			dsn, drop, err := Driver{}.Provision(context.Background(), base)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = drop(context.Background()) }()
			store, err := sync.Open("d1http", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			t.Log(modeltest.Run(t, store, modeltest.Config{Seed: seed + 1}))
		})
	}
}
