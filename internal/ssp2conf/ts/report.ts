/**
 * Prints the catalog lane's reports (written by test/catalog.test.ts via
 * SSP2_CATALOG_REPORT): one line per scenario — pass, skip (with the
 * capability that gates it), LOOP (an upstream loopback assumption that
 * did not hold this run, with the SPEC section and why) or FAIL (with the
 * error) — then a summary per driver. Exits 1 when any scenario that ran (one
 * no capability gates, or one of a capability the driver declares) did not pass
 * on any driver, when any scenario was skipped (the driver declares every
 * capability of the catalog, so a skip means one was dropped), or a report
 * is missing.
 *
 *   bun report.ts sqlite=/tmp/sqlite.json postgres=/tmp/pg.json …
 */
import { existsSync, readFileSync } from 'node:fs';

interface Result {
  readonly name: string;
  readonly specRefs: readonly string[];
  readonly status: string;
  readonly error?: string;
  readonly skippedBecause?: string;
  /** For a loopback-assumption scenario: the SPEC section and why. */
  readonly knownDiscrepancy?: string;
  /** Wall time of the scenario, instance creation and close included. */
  readonly ms?: number;
}

let bad = false;
const summary: string[] = [];
for (const arg of process.argv.slice(2)) {
  const eq = arg.indexOf('=');
  const driver = arg.slice(0, eq);
  const path = arg.slice(eq + 1);
  console.log(`\n--- SSP2 catalog on ${driver}`);
  if (!existsSync(path)) {
    console.log(`  no report (${path}): the run did not finish`);
    summary.push(`${driver}: NO REPORT`);
    bad = true;
    continue;
  }
  const report = JSON.parse(readFileSync(path, 'utf8')) as {
    results: Result[];
  };
  let passed = 0;
  let skipped = 0;
  const failed: string[] = [];
  const loopback: string[] = [];
  for (const r of report.results) {
    const refs = r.specRefs.join(' ');
    if (r.status === 'pass' || r.status === 'expected-fail') {
      passed++;
      const held = r.knownDiscrepancy !== undefined ? ' [an upstream loopback assumption; it held this run]' : '';
      console.log(`  pass  ${r.name} (${refs}) ${r.ms ?? '?'} ms${held}`);
    } else if (r.status === 'loopback') {
      loopback.push(r.name);
      const error = (r.error ?? '').replace(/\s+/g, ' ').slice(0, 200);
      console.log(`  LOOP  ${r.name} (${refs}) ${r.ms ?? '?'} ms — this run: ${error}`);
      console.log(`        upstream loopback assumption, not gating: ${r.knownDiscrepancy ?? ''}`);
    } else if (r.status === 'skipped') {
      skipped++;
      console.log(`  skip  ${r.name} (${refs}) [${r.skippedBecause ?? ''}]`);
    } else {
      failed.push(r.name);
      const error = (r.error ?? r.status).replace(/\s+/g, ' ').slice(0, 400);
      console.log(`  FAIL  ${r.name} (${refs}) ${r.ms ?? '?'} ms — ${error}`);
    }
  }
  const loops = loopback.length > 0 ? `, ${loopback.length} loopback-assumption (${loopback.join(', ')})` : '';
  const line = `${driver}: ${passed} passed, ${skipped} skipped${loops}, ${failed.length} failed`;
  summary.push(failed.length > 0 ? `${line}: ${failed.join(', ')}` : line);
  if (failed.length > 0 || skipped > 0) bad = true;
}
console.log('\n--- SSP2 catalog summary');
for (const line of summary) console.log(`  ${line}`);
process.exit(bad ? 1 : 0);
