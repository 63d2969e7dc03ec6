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
	modeltest.RunSeeds(t, 2, func(t *testing.T) (*sync.Store, error) {
		dsn, drop, err := Driver{}.Provision(context.Background(), base)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = drop(context.Background()) })
		return sync.Open("d1http", dsn)
	})
}
