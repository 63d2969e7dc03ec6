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
	modeltest.RunSeeds(t, 4, func(t *testing.T) (*sync.Store, error) {
		return sync.Open("sqlite", filepath.Join(t.TempDir(), "model.db"))
	})
}
