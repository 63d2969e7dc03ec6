package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/syncstore/syncstore/internal/modeltest"
	"github.com/syncstore/syncstore/sync"
)

// TestModel runs the engine's model test (internal/modeltest) on SQLite:
// 8 clients, seeds 1…4.
func TestModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(modeltest.Name(seed+1), func(t *testing.T) {
			store, err := sync.Open("sqlite", filepath.Join(t.TempDir(), "model.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			t.Log(modeltest.Run(t, store, modeltest.Config{Seed: seed + 1}))
		})
	}
}
