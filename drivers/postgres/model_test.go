package postgres

import (
	"testing"

	"github.com/syncstore/syncstore/internal/modeltest"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/sync"
)

// TestModel runs the engine's model test (internal/modeltest) on Postgres:
// 8 clients, seeds 1…2, a fresh database each.
func TestModel(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(modeltest.Name(seed+1), func(t *testing.T) {
			store, err := sync.Open("postgres", testdb.NewPostgres(t))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			t.Log(modeltest.Run(t, store, modeltest.Config{Seed: seed + 1}))
		})
	}
}
