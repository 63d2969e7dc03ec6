package d1http

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/internal/testlane"
)

// MiniflareEnv names the miniflare lane's endpoint, e.g.
// http://127.0.0.1:8788 (printed by .ci/start-miniflare.sh).
const MiniflareEnv = "SYNCSTORE_TEST_D1_MINIFLARE"

// miniflareBase returns the base DSN of the miniflare lane (see
// drivers/d1http/miniflare), skipping the test when MiniflareEnv is unset
// and failing it when the lane does not answer and
// SYNCSTORE_TEST_REQUIRE_DB=1 (CI) — otherwise skipping it too.
func miniflareBase(t testing.TB) string {
	t.Helper()
	endpoint := os.Getenv(MiniflareEnv)
	if endpoint == "" {
		t.Skipf("the miniflare lane is off: run .ci/start-miniflare.sh and set %s to the endpoint it prints", MiniflareEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/healthz", nil)
	if err == nil {
		var resp *http.Response
		if resp, err = http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("healthz: HTTP %s", resp.Status)
			}
		}
	}
	if err != nil {
		if os.Getenv("SYNCSTORE_TEST_REQUIRE_DB") == "1" {
			t.Fatalf("%s=%s does not answer (%v) and SYNCSTORE_TEST_REQUIRE_DB=1: start it with .ci/start-miniflare.sh", MiniflareEnv, endpoint, err)
		}
		t.Skipf("%s=%s does not answer (%v): start it with .ci/start-miniflare.sh", MiniflareEnv, endpoint, err)
	}
	token := os.Getenv(TokenEnv)
	if token == "" {
		token = "syncstore-test"
	}
	return "d1://acct?token=" + token + "&endpoint=" + endpoint
}

// TestConformanceMiniflare runs the whole shared suite against the driver
// over the miniflare lane: D1's real engine (workerd) behind a Worker
// serving D1's HTTP shape, one pooled database emptied per case. A full
// lane: it runs under SYNCSTORE_TEST_FULL=1 (docs/testing.md); the
// README's test command runs the suite on d1http once, over the double.
func TestConformanceMiniflare(t *testing.T) {
	testlane.RequireFull(t, "the suite again on the miniflare lane")
	base := miniflareBase(t)
	h, err := conformance.HarnessFor("d1http", Driver{}, base, expectedCaps, false)
	if err != nil {
		t.Fatal(err)
	}
	h.Unreachable = unreachableStore
	conformance.Run(t, h)
}
