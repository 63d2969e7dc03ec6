// Package storelayout is the engine-neutral part of syncstore's storage,
// shared by every driver (SQLite, D1, MySQL, PostgreSQL):
//
//   - layout.go: Layout, the canonical stored layout of a schema (JSON in
//     the "schema_layout" meta entry), compared on every EnsureSchema
//     (SCH-3, SCH-4), and RetiredTables; migration.go: CheckMigration,
//     SCH-6's rules of which schema changes a migration may make, so every
//     engine refuses the same ones.
//   - codec.go: the stored text of a change's scopes and of a client's
//     subscriptions (CR-1), and JSONList, a value list as one JSON
//     parameter.
//   - scopefilter.go: PickKey and Matcher, how a window or scan read
//     picks its driving scope key and checks the others (WIN-3, V-6).
//
// It holds no SQL: each engine's statements live with the engine
// (internal/sqlitesql for SQLite and D1, drivers/mysql, drivers/postgres).
package storelayout
