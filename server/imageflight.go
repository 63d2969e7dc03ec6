package server

import (
	"context"
	gosync "sync"
)

// imageFlights makes the SQLite image of one key (partition, epoch,
// table, schema version, scope digest, pin) built by one round at a time
// in this Server (SPEC §5.3: an image is built once and reused). Without
// it, every client of a bootstrap storm that arrives before the first
// image is stored builds the same image from the same pages: at 100,000
// rows and 50 clients, 50 builds of the same file. A round that finds the
// key being built waits for that build (bounded by its own context), then
// looks the image up again; when that build stored nothing (it failed, or
// its round ended before the snapshot's last page), the round builds its
// own without waiting again, so a build that never stores cannot chain
// every later round behind it. The zero value is ready to use.
type imageFlights struct {
	mu       gosync.Mutex
	building map[SegmentKey]chan struct{}
}

// claim takes key for the caller to build (true), or returns the channel
// that is closed when the round building it ends.
func (f *imageFlights) claim(key SegmentKey) (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.building[key]; ok {
		return false, ch
	}
	if f.building == nil {
		f.building = make(map[SegmentKey]chan struct{})
	}
	f.building[key] = make(chan struct{})
	return true, nil
}

// inFlight returns the channel of key's build, nil when none is running.
func (f *imageFlights) inFlight(key SegmentKey) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.building[key]
}

// release ends the caller's claim of key (stored, failed or abandoned),
// waking the rounds that wait for it.
func (f *imageFlights) release(key SegmentKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.building[key]; ok {
		close(ch)
		delete(f.building, key)
	}
}

// waitFlight waits for ch to close or ctx to end (ctx's error).
func (s *Server) waitFlight(ctx context.Context, ch <-chan struct{}) error {
	s.stats.imageWaits.Add(1)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
