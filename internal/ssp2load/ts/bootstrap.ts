/**
 * syncstore's bootstrap benchmark: upstream Syncular's real TypeScript
 * client (SyncClient over bun:sqlite, @syncular/client) bootstraps N seeded
 * rows from a fresh local database to a fully applied replica, timed from
 * the client's creation to syncUntilIdle's return, against
 *
 *   upstream-inproc   upstream's bench lane (bench/src/loopback.ts): the
 *                     server library in this process, bytes passed by
 *                     function call — upstream's own "100k rows" figure
 *   upstream-sqlite   upstream's load server over loopback HTTP, bun:sqlite
 *   upstream-pg       upstream's load server over loopback HTTP, PostgreSQL
 *                     (only when --targets names it: its seeding is slow)
 *   ours-sqlite       ssp2load -driver sqlite   over loopback HTTP
 *   ours-postgres     ssp2load -driver postgres over loopback HTTP
 *   ours-mysql        ssp2load -driver mysql    over loopback HTTP
 *
 * on both lanes the client supports: rows (accept 0b0011, upstream's bench
 * limits: 50,000 rows a page, 50 pages a round) and the SQLite image
 * (accept 0b0111, §5.3). Each cell is one discarded warm-up run (on the
 * image lane the cold run that builds the image; reported as "cold") and
 * --runs timed runs; the median is reported. Every run checks the replica:
 * count(*) must be N, and the downloaded segments must be of the lane's
 * kind (a SQLite file on the image lane, none on the rows lane) — a fast
 * wrong answer fails the run.
 *
 * Server memory: the HTTP servers' peak resident set during the cell, read
 * exactly from /proc/<pid>/status VmHWM after resetting it
 * (/proc/<pid>/clear_refs = 5) when the cell starts, and the resident set
 * after seeding. The server's pid is the owner of its listening socket.
 * upstream-inproc shares this process with the client: its figure is the
 * process's peak growth over the cell, client included (as upstream's
 * bench reports it).
 *
 * .ci/load-compare.sh --bootstrap copies this file into bench/ of a
 * workspace made by shared/syncular/setup.sh (load/src holds our launcher
 * and compare.ts) and runs it there:
 *
 *   bun run src/bootstrap.ts [--rows 10000,100000] [--targets a,b]
 *                            [--lanes rows,image] [--runs 5] [--out FILE]
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ClientSchema,
  httpSegmentDownloader,
  httpSyncTransport,
  type SegmentDownloader,
  SyncClient,
  type SyncTransport,
} from '@syncular/client';
import { openBunDatabase } from '@syncular/client/bun';
import { encodeRow } from '@syncular/core';
import {
  compileSchema,
  handleSegmentDownload,
  handleSyncRequest,
} from '@syncular/server';
import { createPgDb, dropPgDb } from '../../load/src/compare';
import {
  SCHEMA as LOAD_SCHEMA,
  STORM_PROJECT,
  TABLE,
} from '../../load/src/fixture';
import { type LoadServer, spawnServer } from '../../load/src/harness';
import {
  PROJECT_ID as BENCH_PROJECT,
  COLUMNS,
  PARTITION,
  rowId,
  rowValues,
  SCHEMA,
  seededRandom,
} from './fixture';
import { type BenchServer, createBenchServer } from './loopback';

interface Target {
  readonly name: string;
  /** SYNCULAR_LOAD_TARGET for the launcher; undefined: in this process. */
  readonly launch?: string;
  readonly pg?: boolean;
}

const TARGETS: readonly Target[] = [
  { name: 'upstream-inproc' },
  { name: 'upstream-sqlite', launch: 'upstream' },
  { name: 'upstream-pg', launch: 'upstream', pg: true },
  { name: 'ours-sqlite', launch: 'go:sqlite' },
  { name: 'ours-postgres', launch: 'go:postgres' },
  { name: 'ours-mysql', launch: 'go:mysql' },
];

/** The client's §4.2 limits per lane, as upstream's bench sets them. */
const LANES = {
  rows: { limitSnapshotRows: 50_000, maxSnapshotPages: 50, accept: 0b0011 },
  image: { accept: 0b0111 },
} as const;
type Lane = keyof typeof LANES;

const CLIENT_SCHEMA: ClientSchema = {
  version: LOAD_SCHEMA.version,
  tables: LOAD_SCHEMA.tables.map((t) => ({
    name: t.name,
    columns: t.columns,
    primaryKey: t.primaryKey,
    scopes: t.scopes,
  })),
};

function parseArgs(argv: readonly string[]) {
  let rows = [10_000, 100_000];
  // upstream-pg only when named: upstream's load server seeds PostgreSQL
  // row by row (~3 ms a row on a busy 2-core machine).
  let targets = TARGETS.filter((t) => t.pg !== true).map((t) => t.name);
  let lanes: Lane[] = ['rows', 'image'];
  let runs = 5;
  let out = join(tmpdir(), `bootstrap-bench-${Date.now()}.json`);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i] ?? '';
    if (a === '--rows') rows = next().split(',').map(Number);
    else if (a === '--targets') targets = next().split(',');
    else if (a === '--lanes') lanes = next().split(',') as Lane[];
    else if (a === '--runs') runs = Number(next());
    else if (a === '--out') out = next();
    else throw new Error(`unknown argument ${a}`);
  }
  for (const t of targets) {
    if (!TARGETS.some((x) => x.name === t)) throw new Error(`unknown target ${t}`);
  }
  for (const l of lanes) {
    if (!(l in LANES)) throw new Error(`unknown lane ${l}`);
  }
  for (const n of rows) {
    if (!Number.isInteger(n) || n <= 0) throw new Error(`bad row count ${n}`);
  }
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`bad --runs ${runs}`);
  return { rows, targets, lanes, runs, out };
}

// -- server memory from /proc ----------------------------------------------

/** The pid owning the socket listening on 127.0.0.1:port (Linux /proc). */
function listenerPid(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is f[1] (addr:PORT), st is f[3] (0A = LISTEN), inode f[9].
      if (f.length > 9 && f[1]?.endsWith(`:${hex}`) && f[3] === '0A') {
        inodes.add(`socket:[${f[9]}]`);
      }
    }
  }
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`))) return Number(pid);
      } catch {
        // the fd closed meanwhile
      }
    }
  }
  throw new Error(`no process listens on port ${port}`);
}

/** VmRSS and VmHWM of a process, in bytes. */
function memOf(pid: number | 'self'): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) =>
    Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) *
    1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** User+system CPU time of a process, in ms (/proc/<pid>/stat). */
function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime (fields 14, 15 of stat(5), counted from the state, 3),
  // in clock ticks of 10 ms.
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** Resets the process's peak resident set (VmHWM) to its current one. */
function resetPeak(pid: number | 'self'): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

// -- the client ---------------------------------------------------------------

const SQLITE_MAGIC = new TextEncoder().encode('SQLite format 3\0');

function isSqliteImage(bytes: Uint8Array): boolean {
  return SQLITE_MAGIC.every((b, i) => bytes[i] === b);
}

interface Endpoint {
  readonly transport: SyncTransport;
  readonly segments: SegmentDownloader;
  readonly project: string;
}

interface RunResult {
  readonly ms: number;
  readonly imageSegments: number;
  readonly rowSegments: number;
}

/**
 * One bootstrap: a fresh client on a fresh in-memory database subscribes
 * to the project and syncs until idle; then the replica is checked.
 */
async function bootstrapOnce(
  ep: Endpoint,
  lane: Lane,
  rows: number,
): Promise<RunResult> {
  let imageSegments = 0;
  let rowSegments = 0;
  const count = (bytes: Uint8Array) => {
    if (isSqliteImage(bytes)) imageSegments++;
    else rowSegments++;
    return bytes;
  };
  const segments = Object.assign(
    async (r: Parameters<SegmentDownloader>[0]) => count(await ep.segments(r)),
    ep.segments.fetchUrl === undefined
      ? {}
      : {
          fetchUrl: async (url: string) =>
            count(await (ep.segments.fetchUrl as (u: string) => Promise<Uint8Array>)(url)),
        },
  ) as SegmentDownloader;
  const t0 = performance.now();
  const client = new SyncClient({
    database: openBunDatabase(),
    schema: CLIENT_SCHEMA,
    clientId: crypto.randomUUID(),
    transport: ep.transport,
    segments,
    limits: LANES[lane],
  });
  try {
    await client.start();
    client.subscribe({
      id: 'bench',
      table: TABLE,
      scopes: { project_id: [ep.project] },
    });
    await client.syncUntilIdle();
    const ms = performance.now() - t0;
    const n = Number(
      client.query(`SELECT count(*) AS n FROM "${TABLE}"`)[0]?.n ?? -1,
    );
    if (n !== rows) throw new Error(`replica has ${n} rows, want ${rows}`);
    if (lane === 'image' && imageSegments !== 1) {
      // A snapshot that fits one page (1,000 rows) comes inline, no image.
      throw new Error(
        `image lane downloaded ${imageSegments} images (want 1; under 1,000 rows the snapshot is inline)`,
      );
    }
    if (lane === 'rows' && imageSegments !== 0) {
      throw new Error(`rows lane downloaded ${imageSegments} images`);
    }
    return { ms, imageSegments, rowSegments };
  } finally {
    await client.close();
  }
}

function httpEndpoint(baseUrl: string): Endpoint {
  return {
    transport: httpSyncTransport(`${baseUrl}/sync`),
    segments: httpSegmentDownloader(`${baseUrl}/segments`),
    project: STORM_PROJECT,
  };
}

/**
 * upstream's bench seeding (loopback.ts seedServerRows: the same rows from
 * the same generator and seed, straight into storage), committed every
 * 5,000 rows as upstream's load server seeds, with a temporary index
 * dropped before any client runs. Upstream's SqliteServerStorage.writeRow
 * deletes a row's scopes by (partition, tbl, row_id), which
 * sync_row_scopes' primary key (partition, tbl, var, value, row_id) cannot
 * serve: every written row scans the table's scopes, so seeding is
 * quadratic (2,000 rows 1.2 s, 20,000 rows 57 s here; 100,000 rows did
 * not finish in 10 minutes). Not timed.
 */
async function seedBatched(server: BenchServer, count: number): Promise<void> {
  const rand = seededRandom(0xb6b6b6);
  await server.storage.ensureSchema(compileSchema(SCHEMA));
  // oxlint-disable-next-line typescript/no-explicit-any -- bun:sqlite handle.
  const db = (server.storage as any).db as { exec(sql: string): void } | undefined;
  db?.exec(
    'CREATE INDEX bench_seed_scopes ON sync_row_scopes(partition, tbl, row_id)',
  );
  for (let start = 0; start < count; start += 5_000) {
    const tx = await server.storage.begin(PARTITION);
    for (let i = start; i < Math.min(start + 5_000, count); i++) {
      await tx.upsertRow(TABLE, {
        rowId: rowId(i),
        serverVersion: 1,
        scopes: { project_id: BENCH_PROJECT },
        payload: encodeRow(COLUMNS, rowValues(i, rand)),
      });
    }
    await tx.commit();
  }
  db?.exec('DROP INDEX bench_seed_scopes');
}

// -- cells ----------------------------------------------------------------------

interface Cell {
  readonly target: string;
  readonly rows: number;
  readonly lane: Lane;
  readonly medianMs: number;
  readonly coldMs: number;
  readonly allMs: readonly number[];
  readonly rowsPerSec: number;
  readonly segmentsPerRun: number;
  /** Server RSS when the cell started (after seeding), bytes; null in-process. */
  readonly serverRssStart: number | null;
  /** Server peak RSS during the cell (VmHWM), bytes; in-process: growth. */
  readonly serverPeakRss: number;
  /** Server CPU time per bootstrap (mean over the cell's runs, warm-up
   * included), ms; null in-process. */
  readonly serverCpuMsPerRun: number | null;
  readonly seedMs: number;
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil(s.length / 2) - 1)] ?? NaN;
}

async function runCell(
  target: string,
  ep: Endpoint,
  pid: number | 'self',
  lane: Lane,
  rows: number,
  runs: number,
  seedMs: number,
): Promise<Cell> {
  Bun.gc(true);
  const start = memOf(pid);
  const cpu0 = pid === 'self' ? 0 : cpuMsOf(pid);
  resetPeak(pid);
  const all: number[] = [];
  let coldMs = 0;
  let segs = 0;
  for (let i = 0; i <= runs; i++) {
    const r = await bootstrapOnce(ep, lane, rows);
    if (i === 0) coldMs = r.ms;
    else all.push(r.ms);
    segs = r.imageSegments + r.rowSegments;
  }
  const end = memOf(pid);
  const cpu = pid === 'self' ? null : (cpuMsOf(pid) - cpu0) / (runs + 1);
  const med = median(all);
  return {
    target,
    rows,
    lane,
    medianMs: med,
    coldMs,
    allMs: all,
    rowsPerSec: Math.round(rows / (med / 1000)),
    segmentsPerRun: segs,
    serverRssStart: pid === 'self' ? null : start.rss,
    serverPeakRss: pid === 'self' ? end.hwm - start.rss : end.hwm,
    serverCpuMsPerRun: cpu,
    seedMs,
  };
}

async function runTarget(
  t: Target,
  rows: number,
  lanes: readonly Lane[],
  runs: number,
  runNo: number,
): Promise<Cell[]> {
  const cells: Cell[] = [];
  if (t.launch === undefined) {
    const t0 = performance.now();
    const server = createBenchServer();
    await seedBatched(server, rows);
    const seedMs = performance.now() - t0;
    const ep: Endpoint = {
      transport: (bytes) => handleSyncRequest(bytes, server.ctx),
      segments: async (r) =>
        (
          await handleSegmentDownload(server.ctx, {
            segmentId: r.segmentId,
            scopesHeader: r.requestedScopesJson,
          })
        ).bytes,
      project: BENCH_PROJECT,
    };
    try {
      for (const lane of lanes) {
        cells.push(await runCell(t.name, ep, 'self', lane, rows, runs, seedMs));
      }
    } finally {
      await server.close();
    }
    return cells;
  }
  const dbName = `sboot_${process.pid}_${runNo}`;
  process.env.SYNCULAR_LOAD_TARGET = t.launch;
  delete process.env.SYNCULAR_LOAD_STATS;
  delete process.env.SYNCULAR_PG_URL;
  if (t.pg === true) process.env.SYNCULAR_PG_URL = await createPgDb(dbName);
  let server: LoadServer | undefined;
  try {
    const t0 = performance.now();
    server = await spawnServer({ seedRows: rows });
    const seedMs = performance.now() - t0;
    const pid = listenerPid(Number(new URL(server.baseUrl).port));
    const ep = httpEndpoint(server.baseUrl);
    for (const lane of lanes) {
      cells.push(await runCell(t.name, ep, pid, lane, rows, runs, seedMs));
    }
  } finally {
    await server?.stop();
    delete process.env.SYNCULAR_PG_URL;
    if (t.pg === true) await dropPgDb(dbName);
  }
  return cells;
}

// -- report ---------------------------------------------------------------------

const mb = (b: number | null) => (b === null ? '—' : (b / 1_048_576).toFixed(0));
const ms = (v: number) => v.toFixed(v < 100 ? 1 : 0);

function table(cells: readonly Cell[]): string {
  const head = [
    'rows',
    'lane',
    'server',
    'median ms (cold)',
    'rows/s',
    'runs ms',
    'server RSS after seed MB',
    'server peak RSS MB',
    'server CPU ms/run',
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const c of cells) {
    lines.push(
      `| ${[
        c.rows.toLocaleString('en-US'),
        c.lane,
        c.target,
        `${ms(c.medianMs)} (${ms(c.coldMs)})`,
        c.rowsPerSec.toLocaleString('en-US'),
        c.allMs.map(ms).join(', '),
        mb(c.serverRssStart),
        c.serverRssStart === null
          ? `+${mb(c.serverPeakRss)} (process, client incl.)`
          : mb(c.serverPeakRss),
        c.serverCpuMsPerRun === null ? '—' : c.serverCpuMsPerRun.toFixed(0),
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const cli = parseArgs(process.argv.slice(2));
  const targets = TARGETS.filter((t) => cli.targets.includes(t.name));
  const cells: Cell[] = [];
  const t0 = performance.now();
  const load0 = loadavg();
  let runNo = 0;
  for (const [i, rows] of cli.rows.entries()) {
    // Rotate the order so no server always runs first (or last).
    const order = targets.map((_, j) => targets[(i + j) % targets.length]!);
    for (const t of order) {
      runNo++;
      process.stderr.write(`bootstrap: ${rows} rows × ${t.name}\n`);
      const got = await runTarget(t, rows, cli.lanes, cli.runs, runNo);
      for (const c of got) {
        process.stderr.write(
          `  ${c.lane}: median ${ms(c.medianMs)} ms (cold ${ms(c.coldMs)}), ` +
            `server peak RSS ${mb(c.serverPeakRss)} MB, ` +
            `server CPU ${c.serverCpuMsPerRun?.toFixed(0) ?? '—'} ms/run, seeded in ${ms(c.seedMs)} ms\n`,
        );
      }
      cells.push(...got);
    }
  }
  const key = (c: Cell) =>
    c.rows * 1000 +
    cli.lanes.indexOf(c.lane) * 100 +
    TARGETS.findIndex((t) => t.name === c.target);
  cells.sort((a, b) => key(a) - key(b));
  console.log(
    `\nbootstrap to a fully applied replica (upstream's TS client, bun:sqlite), ` +
      `${cli.runs} runs after a warm-up, ${new Date().toISOString()}, ` +
      `${((performance.now() - t0) / 1000).toFixed(0)} s, Bun ${Bun.version}, ` +
      `load average ${load0.map((x) => x.toFixed(2)).join(' ')} at the start, ` +
      `${loadavg().map((x) => x.toFixed(2)).join(' ')} at the end\n`,
  );
  console.log(table(cells));
  writeFileSync(
    cli.out,
    JSON.stringify({ runs: cli.runs, loadavg: [load0, loadavg()], cells }, null, 2),
  );
  console.log(`\nJSON: ${cli.out}`);
}

await main();
