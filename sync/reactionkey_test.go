package sync_test

import (
	"strings"
	"testing"

	"github.com/syncstore/syncstore/sync"
)

// TestReactionKey pins the stored form of a planner's key (PUSH-16): the
// JSON array while it fits, its SHA-256 beyond, distinct per triple.
func TestReactionKey(t *testing.T) {
	if got, want := sync.ReactionKey("c1", "k<2>", `done:"t1"`), `["c1","k<2>","done:\"t1\""]`; got != want {
		t.Errorf("ReactionKey = %s, want %s", got, want)
	}
	long := strings.Repeat("é", 125) // 250 bytes
	k := sync.ReactionKey(long, "k1", "x")
	if len(k) != len("sha256:")+64 || !strings.HasPrefix(k, "sha256:") {
		t.Errorf("ReactionKey over %d bytes = %q, want sha256:<64 hex>", len(long), k)
	}
	seen := map[string][3]string{}
	for _, tr := range [][3]string{{"a", "b", "c"}, {"a", "bc", ""}, {"ab", "", "c"}, {"a,b", "c", "d"}, {"a", "b,c", "d"}, {long, "k1", "x"}, {long, "k1", "y"}} {
		k := sync.ReactionKey(tr[0], tr[1], tr[2])
		if len(k) > sync.MaxReactionKeyBytes {
			t.Errorf("ReactionKey%q is %d bytes", tr, len(k))
		}
		if prev, dup := seen[k]; dup {
			t.Errorf("ReactionKey%q = ReactionKey%q = %q", tr, prev, k)
		}
		seen[k] = tr
	}
}
