/**
 * Upstream's whole conformance catalog against syncstore's Go SSP2 server:
 * the real TypeScript client (tsClientDriver) and the reference codec,
 * paired with our ServerDriver over real HTTP and WebSocket to the
 * conformance host at SSP2HOST_URL. One test per scenario; a scenario
 * that requires a capability our driver does not declare is a skipped
 * test. SSP2_CATALOG_REPORT, when set, names a JSON file the per-scenario
 * results are written to (the lane script reads it).
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import {
  CATALOG,
  type Pairing,
  referenceCodecDriver,
  runScenario,
  type ScenarioResult,
  tsClientDriver,
} from '@syncular/conformance';
import { goServerDriver } from '../src/driver';

const baseUrl = process.env.SSP2HOST_URL;
if (baseUrl === undefined || baseUrl === '') {
  throw new Error('SSP2HOST_URL is unset: start cmd/ssp2host and point it here');
}
const label = process.env.SSP2_DRIVER_LABEL ?? 'syncstore-go';
const server = goServerDriver({ baseUrl, name: label });
const pairing: Pairing = {
  server,
  client: tsClientDriver,
  codec: referenceCodecDriver,
};

/** A liveness bound per scenario (a scenario waiting for a delta that
 * never comes would otherwise hang the lane); never a timing assertion. */
const SCENARIO_TIMEOUT_MS = 180_000;

/** Every scenario's result in catalog order; one that never finished
 * (timed out) stays a failure saying so. */
const results = new Map<string, ScenarioResult>(
  CATALOG.map((scenario) => [
    scenario.name,
    {
      name: scenario.name,
      specRefs: scenario.specRefs,
      status: 'fail',
      error: `did not finish within ${SCENARIO_TIMEOUT_MS} ms`,
    },
  ]),
);

afterAll(() => {
  const path = process.env.SSP2_CATALOG_REPORT;
  if (path !== undefined && path !== '') {
    writeFileSync(path, `${JSON.stringify({ pairing: label, results: [...results.values()] }, null, 2)}\n`);
  }
});

describe(`conformance: ts-web-client × ${label}`, () => {
  for (const scenario of CATALOG) {
    const name = `${scenario.name} (${scenario.specRefs.join(' ')})`;
    const missing = (scenario.requires ?? []).filter(
      (capability) => !server.capabilities.includes(capability),
    );
    if (missing.length > 0) {
      results.set(scenario.name, {
        name: scenario.name,
        specRefs: scenario.specRefs,
        status: 'skipped',
        skippedBecause: `server driver lacks capability: ${missing.join(', ')}`,
      });
      test.skip(name, () => {});
      continue;
    }
    test(
      name,
      async () => {
        let result: ScenarioResult;
        try {
          result = await runScenario(scenario, pairing);
        } catch (thrown) {
          // The harness itself failed (creating the instance, closing it).
          result = {
            name: scenario.name,
            specRefs: scenario.specRefs,
            status: 'fail',
            error: thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : String(thrown),
          };
        }
        results.set(scenario.name, result);
        if (scenario.knownDiscrepancy !== undefined) {
          expect(result.status).toBe('expected-fail');
          return;
        }
        expect(result.error ?? 'none').toBe('none');
        expect(result.status).toBe('pass');
      },
      SCENARIO_TIMEOUT_MS,
    );
  }
});
