package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/syncstore/syncstore/conformance"
)

var _ conformance.SizeReporter = (*Conn)(nil)

// TestStoreSizeBytes: the size is positive and grows with what is written.
func TestStoreSizeBytes(t *testing.T) {
	c, _ := openTest(t)
	ctx := context.Background()
	before, err := c.StoreSizeBytes(ctx)
	if err != nil || before <= 0 {
		t.Fatalf("StoreSizeBytes = %d, %v; want > 0", before, err)
	}
	for i := 0; i < 20; i++ {
		r := todoRow(fmt.Sprintf("r%03d-%0200d", i, 0), "p", "o")
		pushRows(t, c, "p1", r)
	}
	after, err := c.StoreSizeBytes(ctx)
	if err != nil || after <= before {
		t.Fatalf("StoreSizeBytes after 20 commits = %d, %v; want > %d", after, err, before)
	}
}
