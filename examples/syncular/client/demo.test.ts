/**
 * The real Syncular web client (SyncClient on a bun:sqlite replica, its
 * HTTP transport and segment downloader, a WebSocket realtime connector)
 * against syncstore's demo host, examples/syncular, at SYNCULAR_DEMO_URL.
 * examples/syncular/main_test.go starts the host on each driver and runs
 * this file. The host's conventions are the ones its doc comment fixes.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from 'bun:test';
import {
  type ClientSchema,
  ClientSyncError,
  httpSegmentDownloader,
  httpSyncTransport,
  type RealtimeConnector,
  SyncClient,
  webSocketRealtimeConnector,
} from '@syncular/client';
import { BunClientDatabase } from '@syncular/client/bun';

const base = (process.env.SYNCULAR_DEMO_URL ?? '').replace(/\/+$/, '');
if (base === '') throw new Error('SYNCULAR_DEMO_URL is unset');
const wsBase = base.replace(/^http/, 'ws');

// A liveness bound (a delta that never comes would hang the run), never a
// timing assertion: every wait below is on an event.
setDefaultTimeout(60_000);

/** The demo's schema, as its generated client schema. */
const SCHEMA: ClientSchema = {
  version: 1,
  tables: [
    {
      name: 'todos',
      columns: [
        { name: 'id', type: 'string', nullable: false },
        { name: 'list_id', type: 'string', nullable: false },
        { name: 'title', type: 'string', nullable: false },
        { name: 'done', type: 'boolean', nullable: false },
        { name: 'position', type: 'integer', nullable: false },
        { name: 'weight', type: 'float', nullable: true },
        { name: 'meta', type: 'json', nullable: true },
        { name: 'blob', type: 'bytes', nullable: true },
      ],
      primaryKey: 'id',
      scopes: ['list:{list_id}'],
    },
  ],
};

/** Every test's lists are its own, so tests never see each other's rows. */
let run = 0;
function listId(name: string): string {
  return `${name}-${process.pid}-${++run}`;
}

/**
 * A WebSocket connector that authenticates with the Authorization header
 * (Bun's WebSocket takes headers; a browser's does not — there the
 * stock webSocketRealtimeConnector with ?token= is the way).
 */
function bearerSocketConnector(url: string, actor: string): RealtimeConnector {
  return (handlers) =>
    new Promise((resolve, reject) => {
      const socket = new WebSocket(url, {
        headers: { Authorization: `Bearer ${actor}` },
      } as unknown as string[]);
      let opened = false;
      socket.binaryType = 'arraybuffer';
      socket.onopen = () => {
        opened = true;
        resolve({
          send: (text) => socket.send(text),
          sendBytes: (bytes) => socket.send(bytes.slice()),
          close: () => socket.close(),
        });
      };
      socket.onmessage = (event) => {
        if (typeof event.data === 'string') handlers.onText(event.data);
        else handlers.onBinary(new Uint8Array(event.data as ArrayBuffer));
      };
      socket.onclose = () => {
        if (!opened) {
          reject(
            new ClientSyncError(
              'sync.transport_failed',
              'realtime socket closed while connecting',
              true,
            ),
          );
        }
        handlers.onClose?.();
      };
    });
}

const open: SyncClient[] = [];
afterEach(async () => {
  for (const client of open.splice(0)) await client.close();
});

async function newClient(
  actor: string,
  clientId: string,
  realtime: 'header' | 'query' = 'header',
): Promise<SyncClient> {
  const headers = { Authorization: `Bearer ${actor}` };
  const realtimeUrl = `${wsBase}/realtime?clientId=${encodeURIComponent(clientId)}`;
  const client = new SyncClient({
    database: new BunClientDatabase(':memory:'),
    schema: SCHEMA,
    clientId,
    transport: httpSyncTransport(`${base}/sync`, { headers }),
    segments: httpSegmentDownloader(`${base}/segments`, { headers }),
    realtime:
      realtime === 'header'
        ? bearerSocketConnector(realtimeUrl, actor)
        : webSocketRealtimeConnector(`${realtimeUrl}&token=${encodeURIComponent(actor)}`),
  });
  await client.start();
  open.push(client);
  return client;
}

function rows(client: SyncClient, list: string) {
  return client.query('SELECT * FROM todos WHERE list_id = ? ORDER BY id', [list]);
}

/** A todo of list; row ids are global, so each carries its list. */
function todo(id: string, list: string, title: string, position: number) {
  return {
    id: `${list}/${id}`,
    list_id: list,
    title,
    done: false,
    position,
    weight: 1.5,
    meta: '{"tags":["demo"],"n":1}',
    blob: new Uint8Array([0, 1, 2, 255]),
  };
}

async function idle(client: SyncClient) {
  const summary = await client.syncUntilIdle();
  expect(summary.failed).toEqual([]);
  return summary;
}

describe(`syncular demo host at ${base}`, () => {
  test('two clients converge', async () => {
    const list = listId('converge');
    const a = await newClient('alice', `alice-${list}`);
    const b = await newClient('bob', `bob-${list}`);
    for (const c of [a, b]) {
      c.subscribe({ id: 'todos', table: 'todos', scopes: { list_id: [list] } });
      await idle(c);
    }
    a.mutate([{ table: 'todos', op: 'upsert', values: todo('t1', list, 'from a', 1) }]);
    await idle(a);
    await idle(b);
    b.mutate([{ table: 'todos', op: 'upsert', values: todo('t2', list, 'from b', 2) }]);
    b.patch('todos', `${list}/t1`, { done: true });
    await idle(b);
    await idle(a);

    const onA = rows(a, list);
    expect(onA.map((r) => [r.id, r.title, r.done])).toEqual([
      [`${list}/t1`, 'from a', 1],
      [`${list}/t2`, 'from b', 0],
    ]);
    expect(rows(b, list)).toEqual(onA);
    // Every column type made the trip (float, json text, bytes).
    expect(onA[1]?.weight).toBe(1.5);
    expect(onA[1]?.meta).toBe('{"tags":["demo"],"n":1}');
    expect([...(onA[1]?.blob as Uint8Array)]).toEqual([0, 1, 2, 255]);
  });

  test('a conflict resolves from the server row', async () => {
    const list = listId('conflict');
    const a = await newClient('alice', `alice-${list}`);
    const b = await newClient('bob', `bob-${list}`);
    for (const c of [a, b]) {
      c.subscribe({ id: 'todos', table: 'todos', scopes: { list_id: [list] } });
      await idle(c);
    }
    a.mutate([{ table: 'todos', op: 'upsert', values: todo('t1', list, 'base', 1), baseVersion: 0 }]);
    await idle(a);
    await idle(b); // both hold t1 at version 1

    a.patch('todos', `${list}/t1`, { title: 'a wins' }, { baseVersion: 1 });
    await idle(a); // t1 → version 2

    const loser = b.patch('todos', `${list}/t1`, { done: true }, { baseVersion: 1 });
    const summary = await b.sync();
    expect(summary.rejected).toEqual([loser]);
    expect(summary.conflicts.length).toBe(1);
    const conflict = summary.conflicts[0]!;
    expect(conflict.code).toBe('sync.version_conflict');
    expect(conflict.rowId).toBe(`${list}/t1`);
    expect(conflict.serverVersion).toBe(2);
    expect(conflict.serverRow.title).toBe('a wins');

    // Resolve from the server row: keep its fields, re-apply b's intent,
    // push on its version.
    b.mutate([
      {
        table: 'todos',
        op: 'upsert',
        values: { ...conflict.serverRow, done: true },
        baseVersion: conflict.serverVersion,
      },
    ]);
    const resolved = await idle(b);
    expect(resolved.rejected).toEqual([]);
    await idle(a);
    for (const c of [a, b]) {
      const [t1] = rows(c, list);
      expect([t1?.title, t1?.done]).toEqual(['a wins', 1]);
    }
    expect(rows(a, list)).toEqual(rows(b, list));
  });

  for (const realtime of ['header', 'query'] as const) {
    test(`realtime delivers a delta (socket auth by ${realtime})`, async () => {
      const list = listId(`live-${realtime}`);
      const a = await newClient('alice', `alice-${list}`);
      const b = await newClient('bob', `bob-${list}`, realtime);
      a.subscribe({ id: 'todos', table: 'todos', scopes: { list_id: [list] } });
      await idle(a);
      b.subscribe({ id: 'todos', table: 'todos', scopes: { list_id: [list] } });
      await b.connectRealtime();
      await idle(b); // a round on the socket registers b's subscription (§8.7)

      // Resolved by the delta's apply, never by a pull of b's.
      const arrived = new Promise<void>((resolve) => {
        const off = b.onChange(() => {
          if (rows(b, list).length > 0) {
            off();
            resolve();
          }
        });
      });
      a.mutate([{ table: 'todos', op: 'upsert', values: todo('t1', list, 'live', 1) }]);
      await idle(a);
      await arrived;
      expect(rows(b, list)).toEqual(rows(a, list));
    });
  }

  test('mallory sees her list only', async () => {
    const m = await newClient('mallory', `mallory-${listId('m')}`);
    m.subscribe({ id: 'other', table: 'todos', scopes: { list_id: ['someone-else'] } });
    m.subscribe({ id: 'mine', table: 'todos', scopes: { list_id: ['mallory-list'] } });
    const summary = await idle(m);
    expect(summary.revoked).toEqual(['other']);
    expect(m.subscription('mine')?.status).toBe('active');
  });

  test('requests without a bearer actor are refused with 401', async () => {
    for (const headers of [{}, { Authorization: 'Bearer ' }]) {
      const response = await fetch(`${base}/sync`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/vnd.syncular.sync.v2', ...headers },
        body: new Uint8Array([0]),
      });
      expect(response.status).toBe(401);
      expect(((await response.json()) as { code: string }).code).toBe('sync.auth_required');
    }
  });

  test('admin prune and rotate answer JSON', async () => {
    const headers = { Authorization: 'Bearer admin' };
    const prune = await fetch(`${base}/admin/prune`, { method: 'POST', headers });
    expect(prune.status).toBe(200);
    const pruned = (await prune.json()) as Record<string, number>;
    expect(typeof pruned.horizonSeq).toBe('number');
    const rotate = await fetch(`${base}/admin/rotate`, { method: 'POST', headers });
    expect(rotate.status).toBe(200);
    const rotated = (await rotate.json()) as { logEpoch: string };
    expect(typeof rotated.logEpoch).toBe('string');
  });
});
