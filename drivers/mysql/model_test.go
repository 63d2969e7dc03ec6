package mysql

import (
	"testing"

	"github.com/syncstore/syncstore/internal/modeltest"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/sync"
)

// TestModel runs the engine's model test (internal/modeltest) on MySQL:
// 8 clients, seeds 1…2, a fresh database each.
func TestModel(t *testing.T) {
	modeltest.RunSeeds(t, 2, func(t *testing.T) (*sync.Store, error) { return sync.Open("mysql", testdb.NewMySQL(t)) })
}
