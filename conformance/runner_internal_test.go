package conformance

import (
	"context"
	"testing"
	"time"
)

// A case abandoned at its timeout that registers a cleanup afterwards (the
// drop of a store it was still provisioning) must have it run, or the store
// leaks.
func TestCleanupAfterTimeoutStillRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	rt := newRunT(ctx, "late")
	release := make(chan struct{})
	ran := make(chan struct{})
	if rt.run(func() {
		<-release
		rt.Cleanup(func() { close(ran) })
	}) {
		t.Fatal("run reported a finished case although it was still blocked")
	}
	close(release)
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a cleanup registered after the case was abandoned never ran")
	}
}
