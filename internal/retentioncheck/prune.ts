// prune.ts runs upstream Syncular's pruneCommitLog over upstream's own
// SqliteServerStorage (in memory) for each history read as JSON on stdin,
// and prints the horizon each reaches as JSON on stdout:
//
//   bun run prune.ts WORKSPACE/packages/server/src/index-bun.ts < histories.json
//
// Input: {"histories": [{"name", "nowMs", "horizonSeq", "commits": [createdAtMs…],
// "clients": [{"clientId", "cursor", "updatedAtMs"}…], "retention"?: {…}}…]}
// (null lists are empty);
// commit i of "commits" (from 1) is created at commits[i-1]; horizonSeq > 0 is
// raised and pruned through before the prune; "retention" is passed to
// pruneCommitLog as given (an absent option is upstream's default).
// Output: {"horizons": {name: horizon…}}. The Go test retentioncheck_test.go
// writes the input and compares the horizons with Store.Prune's.

interface Client {
  readonly clientId: string;
  readonly cursor: number;
  readonly updatedAtMs: number;
}

interface History {
  readonly name: string;
  readonly nowMs: number;
  readonly horizonSeq: number;
  readonly commits: readonly number[] | null;
  readonly clients: readonly Client[] | null;
  readonly retention?: Record<string, number>;
}

const entry = process.argv[2];
if (entry === undefined) throw new Error('usage: bun run prune.ts SERVER_ENTRY < histories.json');
const { SqliteServerStorage, pruneCommitLog } = await import(entry);
const input = JSON.parse(await Bun.stdin.text()) as { histories: History[] };
const horizons: Record<string, number> = {};
for (const h of input.histories) {
  const storage = new SqliteServerStorage(':memory:');
  const partition = 'p';
  const commits = h.commits ?? [];
  if (commits.length > 0) {
    const tx = await storage.begin(partition);
    for (const [i, createdAtMs] of commits.entries()) {
      await tx.appendCommit({ clientId: 'writer', clientCommitId: `c${i + 1}`, actorId: 'a', createdAtMs, changes: [] });
    }
    await tx.commit();
  }
  for (const c of h.clients ?? []) {
    await storage.putClientRecord(partition, {
      clientId: c.clientId,
      actorId: 'a',
      wireVersion: 2,
      cursor: c.cursor,
      updatedAtMs: c.updatedAtMs,
      subscriptions: [],
    });
  }
  if (h.horizonSeq > 0) {
    await storage.setHorizonSeq(partition, h.horizonSeq);
    await storage.pruneCommitsThrough(partition, h.horizonSeq);
  }
  horizons[h.name] = await pruneCommitLog({
    storage,
    partition,
    nowMs: h.nowMs,
    ...(h.retention !== undefined ? { retention: h.retention } : {}),
  });
}
console.log(JSON.stringify({ horizons }));
