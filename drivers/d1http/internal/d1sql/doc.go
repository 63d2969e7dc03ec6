// Package d1sql is the SQL that only drivers/d1http runs on Cloudflare D1:
// the batch guards, stamps and idempotency tokens that stand in for
// interactive transactions (batch.go; TX-1, TX-9, SEQ-4), the variants of
// internal/sqlitesql's reads whose integers come back as text over D1's
// JSON transport (batch.go, reactions.go; VAL-1), row values as JSON text
// (values.go), the multi-row upsert within D1's bound-parameter limit
// (upsert.go), and the rewrite of an authoritative query for D1 (query.go;
// AQ-1…AQ-5). Everything else D1 runs is internal/sqlitesql's SQLite SQL,
// shared with drivers/sqlite. It holds no connection and runs nothing.
package d1sql
