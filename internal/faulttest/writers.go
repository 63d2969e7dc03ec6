package faulttest

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// SixteenWriters runs 16 goroutines per partition (P and Q) at once, each
// pushing per CounterPush commits, and checks each partition with
// VerifyCounterLog: the sequence is exactly 1…16·per, no update is lost,
// every push result names its commit (TX-1, SEQ-4, PR-3). A push that
// fails with a retryable write_conflict (an optimistic engine lost the
// race) is run again, as sync.RunInTx would; any other error fails t.
func SixteenWriters(t *testing.T, c driver.Conn, per int) {
	t.Helper()
	const writers = 16
	ctx := context.Background()
	parts := []string{"P", "Q"}
	var wg gosync.WaitGroup
	errs := make(chan error, writers*len(parts))
	for _, p := range parts {
		for w := range writers {
			wg.Go(func() {
				for i := range per {
					for {
						err := CounterPush(ctx, c, p, fmt.Sprintf("w%d-%d", w, i))
						if driver.CodeOf(err) == driver.CodeWriteConflict {
							continue
						}
						if err != nil {
							errs <- fmt.Errorf("%s writer %d push %d: %w", p, w, i, err)
							return
						}
						break
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, p := range parts {
		VerifyCounterLog(t, c, p, int64(writers*per))
	}
}
