// Package querylang is the portable query language of authoritative
// queries (AQ-1…AQ-6), shared by every driver: a host writes one SELECT
// in the SQLite-family dialect with `?`/`?N` parameters, and each engine
// admits, rewrites or runs that one text.
//
//   - lex.go: Tokenize (SQLite's lexical rules), CheckQueryText and
//     AdmitQuery: one statement, no named parameters, at most
//     MaxQueryParams parameters and MaxQueryDepth nesting (AQ-1, AQ-6).
//   - rewrite.go: the toolkit of the drivers that rewrite the text for
//     their engine (Piece, Matching, CheckCalls, PrependCTEs, …; AQ-2,
//     AQ-3).
//   - parity.go: delimiting operands and ORDER BY terms for the
//     dialect-parity rewrites (AQ-5).
//   - search.go: CheckSearchPatterns, the static rule on LIKE/GLOB
//     patterns and instr needles (literals and bind values of at most
//     MaxSearchPatternBytes; AQ-6), run by AdmitQuery.
//   - args.go: QueryArgs, an engine's rules for bind values (AQ-1, AQ-3).
//   - cost.go, seeds.go: CostlyQueries and SeedQueries, the texts every
//     driver's tests and fuzz targets rewrite (AQ-6).
//
// It holds no engine's SQL: internal/sqlitesql, drivers/d1http,
// drivers/mysql and drivers/postgres each build their engine's statements
// around an admitted text. See docs/authoritative-query.md.
package querylang
