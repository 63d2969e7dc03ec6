package sync_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// wClaimCounter counts the claims a store makes, by sync.Hooks (every
// Store call is one driver call): per-partition and across partitions.
type wClaimCounter struct {
	mu      gosync.Mutex
	byOp    map[string]int
	onClaim func(n int) // called with the number of claims so far
}

func (c *wClaimCounter) hooks() syncstore.Hooks {
	return syncstore.Hooks{Start: func(ctx context.Context, call syncstore.Call) (context.Context, func(error)) {
		if call.Op != "Store.ClaimReactions" && call.Op != "Store.ClaimDueReactions" {
			return ctx, nil
		}
		c.mu.Lock()
		c.byOp[call.Op]++
		n := c.byOp["Store.ClaimReactions"] + c.byOp["Store.ClaimDueReactions"]
		on := c.onClaim
		c.mu.Unlock()
		if on != nil {
			on(n)
		}
		return ctx, nil
	}}
}

func (c *wClaimCounter) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byOp[op]
}

// TestWorkerIdleCostIndependentOfPartitions runs an idle Worker over
// 1,000 partitions for a fixed number of polling rounds and counts its
// claims (RX-12): one per round, not one per partition per round. Bounded
// by counts: the rounds are counted by the Partitions func, and the run
// ends at the start of the round after the last counted one.
func TestWorkerIdleCostIndependentOfPartitions(t *testing.T) {
	const parts, rounds = 1000, 5
	names := make([]string, parts)
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%04d", i)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// listed runs the Worker over the listed partitions and returns its
	// per-partition and across-partition claims.
	listed := func(t *testing.T, s *syncstore.Store) (per, across int) {
		cnt := &wClaimCounter{byOp: map[string]int{}}
		s.SetHooks(cnt.hooks())
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var seen atomic.Int64
		list := syncstore.StaticPartitions(names...)
		w, err := syncstore.NewWorker(s, syncstore.WorkerConfig{Owner: "w", PollInterval: time.Millisecond, Logger: quiet,
			Partitions: func(ctx context.Context) ([]string, error) {
				if seen.Add(1) > rounds {
					cancel()
					return nil, ctx.Err()
				}
				return list(ctx)
			}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Handle("mail", func(context.Context, string, syncstore.Reaction) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx); err != nil {
			t.Fatal(err)
		}
		return cnt.get("Store.ClaimReactions"), cnt.get("Store.ClaimDueReactions")
	}
	t.Run("listed", func(t *testing.T) {
		if per, across := listed(t, wStore(t)); per != 0 || across != rounds {
			t.Errorf("an idle Worker over %d listed partitions made %d per-partition and %d across-partition claims in %d rounds; want 0 and %d (RX-12: one claim a round)",
				parts, per, across, rounds, rounds)
		}
	})
	// A driver without reactions-across keeps the loop: one claim per
	// partition per round (documented).
	t.Run("listed-without-reactions-across", func(t *testing.T) {
		s := wStore(t)
		if per, across := listed(t, syncstore.OpenConn(noAcross{s.Conn(), s.Conn().(driver.ReactionsConn)})); per != rounds*parts || across != 0 {
			t.Errorf("an idle Worker over %d listed partitions without reactions-across made %d per-partition and %d across-partition claims in %d rounds; want %d and 0",
				parts, per, across, rounds, rounds*parts)
		}
	})

	t.Run("every-partition", func(t *testing.T) {
		s := wStore(t)
		cnt := &wClaimCounter{byOp: map[string]int{}}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cnt.onClaim = func(n int) {
			if n >= rounds {
				cancel()
			}
		}
		s.SetHooks(cnt.hooks())
		w, err := syncstore.NewWorker(s, syncstore.WorkerConfig{Owner: "w", PollInterval: time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Handle("mail", func(context.Context, string, syncstore.Reaction) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if per, across := cnt.get("Store.ClaimReactions"), cnt.get("Store.ClaimDueReactions"); per != 0 || across != rounds {
			t.Errorf("an idle Worker with Partitions nil made %d per-partition and %d across-partition claims; want 0 and %d (RX-12)", per, across, rounds)
		}
	})
}

// The per-partition loop still runs reactions on a driver without
// reactions-across.
func TestWorkerWithoutReactionsAcross(t *testing.T) {
	base := wStore(t)
	s := syncstore.OpenConn(noAcross{base.Conn(), base.Conn().(driver.ReactionsConn)})
	wEnqueue(t, s, "p1", wIn("k1", "mail", 3))
	wEnqueue(t, s, "p2", wIn("k2", "mail", 3))
	w := newWorker(t, s, wConfig(&events{}, "p1", "p2"), map[string]syncstore.Handler{
		"mail": func(context.Context, string, driver.Reaction) error { return nil }})
	stop := wRun(t, w)
	waitStatus(t, s, "p1", "k1", driver.ReactionCompleted)
	waitStatus(t, s, "p2", "k2", driver.ReactionCompleted)
	stop()
}
