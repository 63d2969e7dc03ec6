package conformance

// More attacks on the authoritative-query boundary (AQ-1…AQ-3), aimed at
// the drivers that rewrite a query instead of asking an engine authorizer
// (PostgreSQL, MySQL, D1). Same entry shape and outcomes as
// cap_query_corpus.go.

// aqCorpusExtra returns the entries.
func aqCorpusExtra() []aqEntry {
	return nil
}
