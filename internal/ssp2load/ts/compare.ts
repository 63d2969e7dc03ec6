/**
 * syncstore's side-by-side runner over upstream Syncular's load suite
 * (.ci/load-compare.sh copies it into load/src/ of a workspace; run it
 * there with bun). Every scenario runs, unchanged, against every target,
 * interleaved (scenario by scenario, the target order rotating), each run
 * on a fresh server process and a fresh database:
 *
 *   upstream-sqlite   upstream's load server, bun:sqlite in memory
 *   upstream-pg       upstream's load server, SYNCULAR_PG_URL = a new database
 *   ours-sqlite       ssp2load -driver sqlite   (a temporary SQLite file)
 *   ours-postgres     ssp2load -driver postgres (a new database)
 *   ours-mysql        ssp2load -driver mysql    (a new database)
 *
 * It prints one table (throughput, round latency, commit→delta latency,
 * server peak RSS, server CPU per round, the generator's CPU, errors, the
 * scenario's own threshold verdict) and the ratios ours/upstream, and
 * writes every figure as JSON.
 *
 *   bun run src/compare.ts [--smoke] [--targets a,b] [--scenarios x,y] [--out FILE]
 *
 * Environment: SSP2LOAD_BIN (the ssp2load binary), SYNCULAR_LOAD_PG_ADMIN_URL
 * (where upstream-pg's databases are made; default
 * postgres://postgres@127.0.0.1:5432/postgres).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentile } from './metrics';
import type { Scenario, ScenarioResult } from './scenario';
import { bootstrapStorm } from './scenarios/bootstrap-storm';
import { maintenanceChurn } from './scenarios/maintenance-churn';
import { mixedSoak } from './scenarios/mixed-soak';
import { pushPull } from './scenarios/push-pull';
import { reconnectStorm } from './scenarios/reconnect-storm';
import { loadCounters } from './vclient';

const SCENARIOS: readonly Scenario[] = [
  pushPull,
  bootstrapStorm,
  reconnectStorm,
  maintenanceChurn,
  mixedSoak,
];

interface Target {
  readonly name: string;
  /** SYNCULAR_LOAD_TARGET for the launcher (server.ts). */
  readonly launch: string;
  /** The upstream target its ratios are taken against (ours only). */
  readonly baseline?: string;
  readonly pg?: boolean;
}

const TARGETS: readonly Target[] = [
  { name: 'upstream-sqlite', launch: 'upstream' },
  { name: 'upstream-pg', launch: 'upstream', pg: true },
  { name: 'ours-sqlite', launch: 'go:sqlite', baseline: 'upstream-sqlite' },
  { name: 'ours-postgres', launch: 'go:postgres', baseline: 'upstream-pg' },
  // Upstream has no MySQL lane: ours on MariaDB is set beside upstream on
  // PostgreSQL, the other networked database.
  { name: 'ours-mysql', launch: 'go:mysql', baseline: 'upstream-pg' },
];

const PG_ADMIN =
  process.env.SYNCULAR_LOAD_PG_ADMIN_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';

interface Row {
  readonly scenario: string;
  readonly target: string;
  readonly wallSec: number;
  readonly rounds: number;
  readonly roundsPerSec: number;
  readonly commitsPerSec: number;
  readonly rowsPerSec: number;
  readonly roundP50: number;
  readonly roundP95: number;
  readonly roundP99: number;
  readonly deltaCount: number;
  readonly deltaP50: number;
  readonly deltaP95: number;
  readonly wakes: number;
  readonly peakRssMb: number;
  readonly serverCpuSec: number | null;
  readonly serverCpuMsPerRound: number | null;
  readonly generatorCpuSec: number;
  readonly failedVus: number;
  readonly serverRequestErrors: number;
  readonly pass: boolean;
  readonly failedChecks: readonly string[];
  readonly result: ScenarioResult;
}

function parseArgs(argv: readonly string[]) {
  let smoke = false;
  let targets = TARGETS.map((t) => t.name);
  let scenarios = SCENARIOS.map((s) => s.name);
  let out = join(tmpdir(), `load-compare-${Date.now()}.json`);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--smoke') smoke = true;
    else if (a === '--targets') targets = (argv[++i] ?? '').split(',');
    else if (a === '--scenarios') scenarios = (argv[++i] ?? '').split(',');
    else if (a === '--out') out = argv[++i] ?? out;
    else throw new Error(`unknown argument ${a}`);
  }
  for (const t of targets) {
    if (!TARGETS.some((x) => x.name === t)) throw new Error(`unknown target ${t}`);
  }
  for (const s of scenarios) {
    if (!SCENARIOS.some((x) => x.name === s)) {
      throw new Error(`unknown scenario ${s}`);
    }
  }
  return { smoke, targets, scenarios, out };
}

// oxlint-disable-next-line typescript/no-explicit-any -- Bun.SQL is version-fluid.
const BunSQL = (Bun as any).SQL as new (url: string) => any;

/** A fresh PostgreSQL database for one upstream-pg run; returns its URL. */
export async function createPgDb(name: string): Promise<string> {
  const admin = new BunSQL(PG_ADMIN);
  try {
    await admin.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropPgDb(name: string): Promise<void> {
  const admin = new BunSQL(PG_ADMIN);
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

async function waitStats(
  file: string,
): Promise<{ cpuUserUs: number; cpuSysUs: number } | null> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      return JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return null;
}

function pct(values: readonly number[], p: number): number {
  return percentile([...values].sort((a, b) => a - b), p);
}

let runNo = 0;

async function runOne(
  scenario: Scenario,
  target: Target,
  smoke: boolean,
): Promise<Row> {
  runNo += 1;
  const profile = smoke ? 'smoke' : 'full';
  const config = smoke ? scenario.smoke : scenario.full;
  const statsFile = join(tmpdir(), `load-stats-${process.pid}-${runNo}.json`);
  rmSync(statsFile, { force: true });
  const dbName = `sload_${process.pid}_${runNo}`;
  process.env.SYNCULAR_LOAD_TARGET = target.launch;
  process.env.SYNCULAR_LOAD_STATS = statsFile;
  delete process.env.SYNCULAR_PG_URL;
  if (target.pg === true) process.env.SYNCULAR_PG_URL = await createPgDb(dbName);
  loadCounters.reset();
  const cpu0 = process.cpuUsage();
  let result: ScenarioResult;
  try {
    result = await scenario.run({ profile, config });
  } finally {
    delete process.env.SYNCULAR_PG_URL;
  }
  const gen = process.cpuUsage(cpu0);
  const stats = await waitStats(statsFile);
  rmSync(statsFile, { force: true });
  if (target.pg === true) await dropPgDb(dbName);

  const wallSec = result.wallMs / 1000;
  const rounds = loadCounters.rounds;
  const serverCpuSec =
    stats === null ? null : (stats.cpuUserUs + stats.cpuSysUs) / 1e6;
  return {
    scenario: scenario.name,
    target: target.name,
    wallSec,
    rounds,
    roundsPerSec: rounds / wallSec,
    commitsPerSec: loadCounters.pushes / wallSec,
    rowsPerSec: loadCounters.rows / wallSec,
    roundP50: pct(loadCounters.roundLatenciesMs, 50),
    roundP95: pct(loadCounters.roundLatenciesMs, 95),
    roundP99: pct(loadCounters.roundLatenciesMs, 99),
    deltaCount: loadCounters.deltaLatenciesMs.length,
    deltaP50: pct(loadCounters.deltaLatenciesMs, 50),
    deltaP95: pct(loadCounters.deltaLatenciesMs, 95),
    wakes: loadCounters.wakes,
    peakRssMb: result.server.peakRssBytes / 1_048_576,
    serverCpuSec,
    serverCpuMsPerRound:
      serverCpuSec === null || rounds === 0
        ? null
        : (serverCpuSec * 1000) / rounds,
    generatorCpuSec: (gen.user + gen.system) / 1e6,
    failedVus: result.failedVus,
    serverRequestErrors: result.server.requestErrors,
    pass: result.pass,
    failedChecks: result.checks.filter((c) => !c.ok).map((c) => c.name),
    result,
  };
}

const f = (v: number | null, d = 1): string =>
  v === null || !Number.isFinite(v) ? '—' : v.toFixed(d);

function table(rows: readonly Row[]): string {
  const head = [
    'scenario',
    'server',
    'rounds/s',
    'commits/s',
    'rows/s',
    'round p50/p95/p99 ms',
    'commit→delta p50/p95 ms (n)',
    'peak RSS MB',
    'server CPU s (ms/round)',
    'gen CPU s',
    'errors',
    'thresholds',
  ];
  const lines = [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
  ];
  for (const r of rows) {
    lines.push(
      `| ${[
        r.scenario,
        r.target,
        f(r.roundsPerSec),
        f(r.commitsPerSec),
        f(r.rowsPerSec, 0),
        `${f(r.roundP50)} / ${f(r.roundP95)} / ${f(r.roundP99)}`,
        r.deltaCount === 0
          ? `— (${r.wakes} wakes)`
          : `${f(r.deltaP50, 0)} / ${f(r.deltaP95, 0)} (${r.deltaCount})`,
        f(r.peakRssMb, 0),
        `${f(r.serverCpuSec, 2)} (${f(r.serverCpuMsPerRound, 2)})`,
        f(r.generatorCpuSec, 2),
        `${r.failedVus}` +
          (r.serverRequestErrors > 0 ? ` (+${r.serverRequestErrors} srv)` : ''),
        r.pass ? 'PASS' : `FAIL: ${r.failedChecks.join('; ')}`,
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

/** Ours / upstream, and whether issue 33's goal holds. */
function ratios(rows: readonly Row[]): string {
  const head = [
    'scenario',
    'ours vs upstream',
    'rounds/s ×(≥2)',
    'p99 ×(≤0.5)',
    'peak RSS ×(≤0.5)',
    'CPU/round ×(≤0.5)',
  ];
  const lines = [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
  ];
  const goal = (x: number | null, ok: (x: number) => boolean) =>
    x === null || !Number.isFinite(x)
      ? '—'
      : `${x.toFixed(2)} ${ok(x) ? 'met' : 'not met'}`;
  for (const r of rows) {
    const t = TARGETS.find((x) => x.name === r.target);
    if (t?.baseline === undefined) continue;
    const b = rows.find(
      (x) => x.scenario === r.scenario && x.target === t.baseline,
    );
    if (b === undefined) continue;
    const cpu =
      r.serverCpuMsPerRound !== null && b.serverCpuMsPerRound !== null
        ? r.serverCpuMsPerRound / b.serverCpuMsPerRound
        : null;
    lines.push(
      `| ${[
        r.scenario,
        `${r.target} / ${b.target}`,
        goal(r.roundsPerSec / b.roundsPerSec, (x) => x >= 2),
        goal(r.roundP99 / b.roundP99, (x) => x <= 0.5),
        goal(r.peakRssMb / b.peakRssMb, (x) => x <= 0.5),
        goal(cpu, (x) => x <= 0.5),
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const cli = parseArgs(process.argv.slice(2));
  const scenarios = SCENARIOS.filter((s) => cli.scenarios.includes(s.name));
  const targets = TARGETS.filter((t) => cli.targets.includes(t.name));
  const rows: Row[] = [];
  const t0 = performance.now();
  for (const [i, scenario] of scenarios.entries()) {
    // Rotate the order so no server always runs first (or last).
    const order = targets.map((_, j) => targets[(i + j) % targets.length]!);
    for (const target of order) {
      process.stderr.write(`load-compare: ${scenario.name} × ${target.name}\n`);
      const row = await runOne(scenario, target, cli.smoke);
      process.stderr.write(
        `  ${row.pass ? 'PASS' : 'FAIL'} ${f(row.roundsPerSec)} rounds/s, p99 ${f(row.roundP99)} ms, ${row.failedVus} failed VUs` +
          (row.result.errors.length > 0
            ? `; first error: ${row.result.errors[0]}`
            : '') +
          '\n',
      );
      rows.push(row);
    }
  }
  const order = (r: Row) =>
    SCENARIOS.findIndex((s) => s.name === r.scenario) * 100 +
    TARGETS.findIndex((t) => t.name === r.target);
  rows.sort((a, b) => order(a) - order(b));
  const profile = cli.smoke ? 'smoke' : 'full';
  console.log(
    `\nupstream load suite, ${profile} profile, ${new Date().toISOString()}, ` +
      `${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
  );
  console.log(table(rows));
  console.log('\nours / upstream (goal in brackets):\n');
  console.log(ratios(rows));
  writeFileSync(cli.out, JSON.stringify({ profile, rows }, null, 2));
  console.log(`\nJSON: ${cli.out}`);
  if (rows.some((r) => !r.pass)) process.exitCode = 1;
}

// bootstrap.ts imports the PostgreSQL helpers above without running the suite.
if (import.meta.main) await main();
