package conformance

import (
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// TestCorpusWithinStaticCost: no entry of the corpora is refused by the
// static cost rule of querylang (AQ-6), so the rule never breaks
// AQ-2/AQ-5's answers nor turns an AQ-1/AQ-2 refusal (query_invalid) into
// a query_limit on any driver.
func TestCorpusWithinStaticCost(t *testing.T) {
	all := append(append(aqCorpus(), aqCorpusExtra()...), aqParityCorpus()...)
	n := 0
	for _, e := range all {
		n++
		if _, err := querylang.CheckQueryText(e.sql); driver.CodeOf(err) == driver.CodeQueryLimit {
			t.Errorf("%s/corpus/%s: %v", e.rule, e.name, err)
		}
	}
	if n < 100 {
		t.Fatalf("only %d entries checked", n)
	}
}
