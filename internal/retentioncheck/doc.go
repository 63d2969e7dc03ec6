// Package retentioncheck holds the cross-check of the retention rule
// (contract group RET) against upstream Syncular's: the same histories —
// commits with their creation times, client records with cursors and
// update times, a horizon already reached, a policy in upstream's terms
// (activeWindowMs, ageForceMs, minRetainedCommits; absent = upstream's
// default) — are pruned by sync.Store.Prune on SQLite and by upstream's
// pruneCommitLog over upstream's own SqliteServerStorage, and must reach
// the same horizon, except the differences docs/retention.md lists, for
// which each side must reach the horizon stated.
//
// prune.ts is upstream's side, run with Bun in a workspace of upstream's
// packages that shared/syncular/setup.sh makes (once per test process, in
// a temporary directory; SYNCULAR_WORKSPACE and SYNCULAR_BUN, both set,
// name a ready one). Without the shared/syncular materials the upstream
// half is skipped loudly; with them, a workspace that cannot be made (no
// npm, no network) skips it too, or fails it when
// SYNCSTORE_TEST_REQUIRE_DB=1. Our half always runs.
package retentioncheck
