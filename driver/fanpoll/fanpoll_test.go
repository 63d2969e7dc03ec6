package fanpoll_test

import (
	"context"
	"errors"
	"fmt"
	gosync "sync"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/driver/fanpoll"
)

// heads is a table of partition heads the Hub polls, with a switch that
// makes polls fail (an engine that is down) and a count of reads.
type heads struct {
	mu    gosync.Mutex
	m     map[string]int64
	down  bool
	reads int
}

func (h *heads) set(p string, seq int64) { h.mu.Lock(); h.m[p] = seq; h.mu.Unlock() }

func (h *heads) read(_ context.Context, after string, limit int) ([]driver.CommitWake, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reads++
	if h.down {
		return nil, errors.New("connection refused")
	}
	var out []driver.CommitWake
	for i := range 3000 { // partitions p0000…p2999, sorted
		p := fmt.Sprintf("p%04d", i)
		if seq, ok := h.m[p]; ok && p > after && len(out) < limit {
			out = append(out, driver.CommitWake{Partition: p, CommitSeq: seq})
		}
	}
	return out, nil
}

func await(t *testing.T, ch <-chan driver.CommitWake, p string, seq int64) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case w, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed waiting for %s@%d", p, seq)
			}
			if w.Partition == p && w.CommitSeq >= seq {
				return
			}
		case <-timeout:
			t.Fatalf("no wake for %s@%d", p, seq)
		}
	}
}

// TestHubCatchesUpAfterFailedPolls: commits made while every poll fails
// are announced by the first poll that succeeds (never silence); heads
// present before Subscribe wake nobody; more than one page of partitions
// is read.
func TestHubCatchesUpAfterFailedPolls(t *testing.T) {
	h := &heads{m: map[string]int64{}}
	for i := range 2500 { // three pages
		h.set(fmt.Sprintf("p%04d", i), 7)
	}
	hub := &fanpoll.Hub{Heads: h.read, Interval: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := hub.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.set("p2400", 8) // on the third page
	await(t, ch, "p2400", 8)
	h.mu.Lock()
	h.down = true
	h.mu.Unlock()
	h.set("p0001", 9)
	h.set("p0002", 9)
	time.Sleep(20 * time.Millisecond) // several failed polls
	select {
	case w := <-ch:
		if w.Partition != "p2400" {
			t.Fatalf("a wake while every poll failed: %+v", w)
		}
	default:
	}
	h.mu.Lock()
	h.down = false
	h.mu.Unlock()
	await(t, ch, "p0001", 9)
}

// TestHubPublishAndClose: Publish wakes at once (no poll needed); a wake
// reaches every subscriber; the channel closes when ctx ends, and the
// last subscriber leaving stops the polling; Subscribe fails when the
// baseline cannot be read.
func TestHubPublishAndClose(t *testing.T) {
	h := &heads{m: map[string]int64{}}
	hub := &fanpoll.Hub{Heads: h.read, Interval: time.Hour} // polls never tick
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	a, err := hub.Subscribe(ctx1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hub.Subscribe(ctx2)
	if err != nil {
		t.Fatal(err)
	}
	hub.Publish(driver.CommitWake{Partition: "x", CommitSeq: 3})
	await(t, a, "x", 3)
	await(t, b, "x", 3)
	cancel1()
	for range a {
	}
	cancel2()
	for range b {
	}
	h.mu.Lock()
	h.down = true
	h.mu.Unlock()
	if _, err := hub.Subscribe(context.Background()); driver.CodeOf(err) != driver.CodeUnavailable {
		t.Fatalf("Subscribe with the engine down: %v, want %s", err, driver.CodeUnavailable)
	}
	h.mu.Lock()
	h.down = false
	h.mu.Unlock()
	c, err := hub.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hub.Close()
	for range c { // closes although its ctx never ends
	}
	if _, err := hub.Subscribe(context.Background()); driver.CodeOf(err) != driver.CodeClosed {
		t.Fatalf("Subscribe after Close: %v, want %s", err, driver.CodeClosed)
	}
}
