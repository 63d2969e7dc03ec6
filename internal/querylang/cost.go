package querylang

import "strings"

// CostlyQueries are query texts of about 100 KB shaped to make a rewriter
// slow (AQ-6): deep nests just under MaxQueryDepth repeated to fill the
// text, long flat chains of one operator, long argument and IN lists, and
// the nests of the attacks that once took minutes (4,950 nested CASTs,
// 24,700 nested divisions), which CheckQueryText refuses by depth. Every
// driver's tests rewrite each one (name → text; all read table todos with
// columns id and title) and the fuzz targets start from them.
func CostlyQueries() map[string]string {
	nest := func(open, core, close string, n int) string {
		return strings.Repeat(open, n) + core + strings.Repeat(close, n)
	}
	fill := func(unit string) string {
		var b strings.Builder
		b.WriteString("SELECT ")
		for b.Len() < 98_000 {
			if b.Len() > 7 {
				b.WriteString(", ")
			}
			b.WriteString(unit)
		}
		b.WriteString(" FROM todos")
		return b.String()
	}
	d := MaxQueryDepth - 1
	return map[string]string{
		"nested-cast-attack":     "SELECT " + nest("CAST(", "1", " AS INTEGER)", 4950) + " FROM todos",
		"nested-division-attack": "SELECT " + nest("1/(", "1", ")", 24_700) + " FROM todos",
		"casts-at-max-depth":     fill(nest("CAST(", "1", " AS INTEGER)", d)),
		"divisions-at-max-depth": fill(nest("1/(", "1", ")", d)),
		"calls-at-max-depth":     fill(nest("abs(", "id", ")", d)),
		"flat-sum":               "SELECT " + strings.Repeat("1+", 33_000) + "1 FROM todos",
		"flat-division-chain":    "SELECT (" + strings.Repeat("1/", 33_000) + "1) FROM todos",
		"flat-concatenation":     "SELECT " + strings.Repeat("title || ", 10_000) + "id FROM todos",
		"long-argument-list":     "SELECT max(" + strings.Repeat("1,", 33_000) + "1) FROM todos",
		"long-in-list":           "SELECT 1 FROM todos WHERE id IN (" + strings.Repeat("'a',", 20_000) + "'a')",
		"many-likes":             "SELECT 1 FROM todos WHERE " + strings.Repeat("title LIKE 'a' OR ", 5000) + "1",
		"nested-case":            "SELECT " + nest("CASE WHEN 1 THEN ", "1", " END", 3000) + " FROM todos",
		"not-chain":              "SELECT " + strings.Repeat("NOT ", 20_000) + "1 FROM todos",
	}
}
