// Package testlane says which test lanes run: the README's test command
// runs every conformance case on every reachable driver once; the full
// lanes run under SYNCSTORE_TEST_FULL=1. It imports nothing beyond the
// standard library, so the public suite's tests can use it without
// pulling test engines into a third-party driver's module graph.
package testlane

import (
	"os"
	"testing"
)

// FullEnv is the variable that turns on the full lanes: the suite run again
// several ways per driver (over a host's pool, against deliberately broken
// drivers, on a second engine lane), storms and long model runs. The
// README's test command leaves it unset and runs every conformance case on
// every reachable driver once; .ci/run sets it for a separate step that
// runs only the full lanes (docs/testing.md lists them).
const FullEnv = "SYNCSTORE_TEST_FULL"

// Full reports whether SYNCSTORE_TEST_FULL=1.
func Full() bool { return os.Getenv(FullEnv) == "1" }

// RequireFull skips t, saying so with the variable's name, unless
// SYNCSTORE_TEST_FULL=1. lane says what is skipped.
func RequireFull(t testing.TB, lane string) {
	t.Helper()
	if !Full() {
		t.Skipf("SKIPPED full lane (%s): set %s=1 to run it (.ci/run does)", lane, FullEnv)
	}
}
