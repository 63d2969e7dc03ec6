package ssp2_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/internal/upstream"
	"github.com/syncstore/syncstore/ssp2"
)

// TestCatalogMatchesSpec reads the §10.2 table out of upstream's SPEC and
// holds the catalog to it, row for row.
func TestCatalogMatchesSpec(t *testing.T) {
	spec := string(readFile(t, filepath.Join(upstream.Require(t), "docs", "SPEC.md")))
	start := strings.Index(spec, "### 10.2 Codes")
	end := strings.Index(spec, "### 10.3")
	if start < 0 || end < start {
		t.Fatal("no §10.2 in SPEC.md")
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\| ([a-z-]+) \\| (yes|no) \\| ([A-Za-z]+) \\|")
	var want []ssp2.CatalogEntry
	for _, m := range row.FindAllStringSubmatch(spec[start:end], -1) {
		want = append(want, ssp2.CatalogEntry{Code: ssp2.Code(m[1]), Category: m[2], Retryable: m[3] == "yes", RecommendedAction: m[4]})
	}
	if len(want) < 30 {
		t.Fatalf("parsed only %d rows of §10.2", len(want))
	}
	if d := cmp.Diff(want, ssp2.Catalog()); d != "" {
		t.Errorf("catalog differs from SPEC §10.2 (-spec +catalog):\n%s", d)
	}
	for _, e := range want {
		if got, ok := ssp2.Lookup(e.Code); !ok || got != e {
			t.Errorf("Lookup(%s) = %+v, %v", e.Code, got, ok)
		}
	}
}

func TestErrorBody(t *testing.T) {
	b := ssp2.NewErrorBody(ssp2.CodeSegmentExpired, "expired")
	b.Details = `{"segmentId":"sha256:ab"}`
	j, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"code":"sync.segment_expired","category":"not-found","retryable":true,"recommendedAction":"retryLater","message":"expired","details":{"segmentId":"sha256:ab"}}`; string(j) != want {
		t.Errorf("got %s", j)
	}
	f := b.Frame()
	if f.Code != "sync.segment_expired" || !f.Retryable || f.Details != b.Details {
		t.Errorf("frame %+v", f)
	}
	if ub := ssp2.NewErrorBody("app.custom", "m"); ub.Category != "internal" || ub.RecommendedAction != "inspectServer" {
		t.Errorf("a code outside the catalog: %+v", ub)
	}
	b.Details = `{`
	if _, err := json.Marshal(b); err == nil {
		t.Error("details that are not JSON were marshalled")
	}
	// Decode errors carry their body and compare by code.
	_, err = ssp2.Decode([]byte("SSP2\x01\x00\x01\x00"))
	var de *ssp2.Error
	if !errors.As(err, &de) || de.Body().Category != "invalid-request" || !errors.Is(err, &ssp2.Error{Code: ssp2.CodeInvalidRequest}) || errors.Is(err, &ssp2.Error{Code: ssp2.CodeEmptyCommit}) {
		t.Errorf("decode error %v", err)
	}
}
