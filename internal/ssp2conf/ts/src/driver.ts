/**
 * A ServerDriver (upstream's @syncular/conformance seam, src/driver.ts)
 * for syncstore's Go SSP2 server, reached over real HTTP and WebSocket
 * through the conformance host (internal/ssp2conf, cmd/ssp2host):
 *
 *   POST /instances               create → {id}
 *   POST /i/{id}/sync             §1.1, Authorization: Bearer <actor>
 *   GET  /i/{id}/segments/{seg}   §5.5, X-Syncular-Scopes
 *   GET  /i/{id}/realtime         §8, WebSocket, ?clientId=
 *   GET  /i/{id}/signed/{seg}?st= §5.4 signed segment URL, no credential
 *   POST /i/{id}/ctl/{op}         host controls (JSON)
 *   PUT|GET /i/{id}/blobs/{blob}  §5.9.3/§5.9.5 (POST …/upload-grant)
 *   GET|PUT <presigned blob url>  the host's object store + CDN role
 *
 * It declares the optional capabilities the host serves (CAPABILITIES);
 * the runner skips the scenarios of the others. Everything crossing the
 * seam is bytes or JSON, as the seam's design rule asks; the network
 * between is real.
 */
import type {
  BlobDownloadResult,
  BlobUploadGrantResult,
  BytesResult,
  DriverError,
  DriverScopeMap,
  RealtimeConnection,
  RealtimeConnectResult,
  RealtimeSink,
  RetentionOptions,
  ServerCapability,
  ServerCreateOptions,
  ServerDriver,
  ServerInstance,
  ServerRowState,
  CommitValidatorInstallSpec,
  ValidatorInstallSpec,
} from '@syncular/conformance';

/** The optional capabilities the host serves (docs/syncular.md). */
export const CAPABILITIES: readonly ServerCapability[] = [
  'idempotency-fault',
  'validators',
  'commit-validators',
  'signed-urls',
  'leases',
  'blobs',
  'blob-presign',
  'crdt',
  'backup-restore',
];

const SSP2_CONTENT_TYPE = 'application/vnd.syncular.sync.v2';

/** A host or protocol answer that is not the §10.1 JSON shape: a bug of
 * the host or the server, surfaced loudly. */
export class HostError extends Error {
  override readonly name = 'HostError';
}

async function errorOf(response: Response, what: string): Promise<DriverError> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HostError(
      `${what}: HTTP ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`,
    );
  }
  const e = body as Partial<Record<keyof DriverError, unknown>>;
  if (typeof e.code !== 'string' || typeof e.message !== 'string') {
    throw new HostError(
      `${what}: HTTP ${response.status} without the §10.1 error shape: ${text.slice(0, 200)}`,
    );
  }
  return {
    code: e.code,
    message: e.message,
    ...(typeof e.category === 'string' ? { category: e.category } : {}),
    ...(typeof e.retryable === 'boolean' ? { retryable: e.retryable } : {}),
    ...(typeof e.recommendedAction === 'string'
      ? { recommendedAction: e.recommendedAction }
      : {}),
  };
}

function bearer(actorId: string): string {
  return `Bearer ${actorId}`;
}

class GoServerInstance implements ServerInstance {
  readonly #base: string;
  readonly #sockets = new Set<WebSocket>();
  #closed = false;

  constructor(base: string) {
    this.#base = base;
  }

  async #control<T>(op: string, body: unknown = {}): Promise<T> {
    const response = await fetch(`${this.#base}/ctl/${op}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) {
      throw new HostError(`host control ${op}: HTTP ${response.status}: ${text}`);
    }
    return JSON.parse(text) as T;
  }

  async handleSyncRequest(
    actorId: string,
    request: Uint8Array,
  ): Promise<BytesResult> {
    const response = await fetch(`${this.#base}/sync`, {
      method: 'POST',
      headers: {
        'Content-Type': SSP2_CONTENT_TYPE,
        Authorization: bearer(actorId),
      },
      body: request.slice(),
    });
    if (!response.ok) {
      return { ok: false, error: await errorOf(response, 'POST /sync') };
    }
    return { ok: true, bytes: new Uint8Array(await response.arrayBuffer()) };
  }

  async downloadSegment(
    actorId: string,
    segmentId: string,
    scopesHeaderJson: string,
  ): Promise<BytesResult> {
    const response = await fetch(
      `${this.#base}/segments/${encodeURIComponent(segmentId)}`,
      {
        headers: {
          Authorization: bearer(actorId),
          'X-Syncular-Scopes': scopesHeaderJson,
        },
      },
    );
    if (!response.ok) {
      return { ok: false, error: await errorOf(response, 'GET /segments') };
    }
    return { ok: true, bytes: new Uint8Array(await response.arrayBuffer()) };
  }

  /**
   * §8.1 attach. The connection is handed back once the server's `hello`
   * arrived (and went to the sink): "connected" means the handshake is
   * done, as an in-process hub's connect is. Server-initiated closes go to
   * `sink.onClose`; a close this side asked for does not.
   */
  async connectRealtime(
    actorId: string,
    clientId: string,
    sink: RealtimeSink,
  ): Promise<RealtimeConnectResult> {
    const url = `${this.#base.replace(/^http/, 'ws')}/realtime?clientId=${encodeURIComponent(clientId)}`;
    const headers = { Authorization: bearer(actorId) };
    // Bun's WebSocket takes headers (browsers' does not).
    const socket = new WebSocket(url, { headers } as unknown as string[]);
    socket.binaryType = 'arraybuffer';
    this.#sockets.add(socket);
    let closedHere = false;
    let settled = false;
    return new Promise<RealtimeConnectResult>((resolve) => {
      const connection: RealtimeConnection = {
        send: (text) => socket.send(text),
        sendBinary: (bytes) => socket.send(bytes.slice()),
        close: () => {
          closedHere = true;
          socket.close();
        },
      };
      socket.onmessage = (event) => {
        if (typeof event.data === 'string') {
          sink.onText(event.data);
          if (!settled) {
            settled = true;
            resolve({ ok: true, connection });
          }
        } else {
          sink.onBinary(new Uint8Array(event.data as ArrayBuffer));
        }
      };
      socket.onclose = () => {
        this.#sockets.delete(socket);
        if (!settled) {
          settled = true;
          // The upgrade was refused, or the server closed before hello:
          // ask the same URL without an upgrade for the §10.1 body.
          void this.#connectError(url, headers).then((error) =>
            resolve({ ok: false, error }),
          );
          return;
        }
        if (!closedHere) sink.onClose?.();
      };
    });
  }

  async #connectError(
    url: string,
    headers: Record<string, string>,
  ): Promise<DriverError> {
    const response = await fetch(url.replace(/^ws/, 'http'), { headers });
    if (!response.ok) return errorOf(response, 'GET /realtime');
    return {
      code: 'sync.transport_failed',
      message: `the realtime socket closed before hello (a plain GET answered HTTP ${response.status})`,
    };
  }

  /**
   * `signed-urls`: the §5.4 URL host's role. The host issues URLs leading
   * to its own `/i/{id}/signed/…` route (served by the instance's
   * `SignedSegmentHandler`, which verifies the `st` token on the server's
   * clock), so the URL is fetched exactly as issued, with no credential:
   * the URL is the whole grant. A URL leading elsewhere was not issued by
   * this instance.
   */
  async fetchSegmentUrl(url: string): Promise<BytesResult> {
    if (!url.startsWith(`${this.#base}/signed/`)) {
      return {
        ok: false,
        error: {
          code: 'sync.not_found',
          message: 'not a signed URL of this instance',
        },
      };
    }
    const response = await fetch(url);
    if (!response.ok) {
      return { ok: false, error: await errorOf(response, 'GET signed URL') };
    }
    return { ok: true, bytes: new Uint8Array(await response.arrayBuffer()) };
  }

  /** §5.9.3 upload: PUT /blobs/{blobId}, the raw bytes. */
  async uploadBlob(
    actorId: string,
    blobId: string,
    bytes: Uint8Array,
    mediaType?: string,
  ): Promise<{ ok: true } | { ok: false; error: DriverError }> {
    const response = await fetch(
      `${this.#base}/blobs/${encodeURIComponent(blobId)}`,
      {
        method: 'PUT',
        headers: {
          Authorization: bearer(actorId),
          'Content-Type': mediaType ?? 'application/octet-stream',
        },
        body: bytes.slice(),
      },
    );
    if (!response.ok) {
      return { ok: false, error: await errorOf(response, 'PUT /blobs') };
    }
    await response.arrayBuffer();
    return { ok: true };
  }

  /**
   * §5.9.5 download: the bytes, or — presign on — the JSON envelope
   * {url, urlExpiresAtMs} (the server never serves a blob's own bytes as
   * application/json, so the content type tells them apart).
   */
  async downloadBlob(actorId: string, blobId: string): Promise<BlobDownloadResult> {
    const response = await fetch(
      `${this.#base}/blobs/${encodeURIComponent(blobId)}`,
      { headers: { Authorization: bearer(actorId) } },
    );
    if (!response.ok) {
      return { ok: false, error: await errorOf(response, 'GET /blobs') };
    }
    if ((response.headers.get('content-type') ?? '').includes('application/json')) {
      const body = (await response.json()) as { url?: unknown; urlExpiresAtMs?: unknown };
      if (typeof body.url !== 'string' || typeof body.urlExpiresAtMs !== 'number') {
        throw new HostError(`GET /blobs: a JSON answer without {url, urlExpiresAtMs}`);
      }
      return { ok: true, url: body.url, urlExpiresAtMs: body.urlExpiresAtMs };
    }
    return { ok: true, bytes: new Uint8Array(await response.arrayBuffer()) };
  }

  /** `signed-urls`: the TTL of URLs issued from now on (0 ⇒ born expired). */
  async setSignedUrlTtlSeconds(ttlSeconds: number): Promise<void> {
    await this.#control('setSignedUrlTtlSeconds', { ttlSeconds });
  }

  /** §5.9.5 CDN hop: GET the presigned url, no host authentication. */
  async fetchBlobUrl(url: string): Promise<BytesResult> {
    const response = await fetch(url);
    if (!response.ok) {
      return { ok: false, error: await errorOf(response, 'GET <blob url>') };
    }
    return { ok: true, bytes: new Uint8Array(await response.arrayBuffer()) };
  }

  /** §5.9.3 upload grant: POST /blobs/{blobId}/upload-grant. */
  async uploadBlobGrant(
    actorId: string,
    blobId: string,
    byteLength: number,
    mediaType?: string,
  ): Promise<BlobUploadGrantResult> {
    const response = await fetch(
      `${this.#base}/blobs/${encodeURIComponent(blobId)}/upload-grant`,
      {
        method: 'POST',
        headers: { Authorization: bearer(actorId), 'Content-Type': 'application/json' },
        body: JSON.stringify({
          byteLength,
          ...(mediaType !== undefined ? { mediaType } : {}),
        }),
      },
    );
    if (!response.ok) {
      return { ok: false, error: await errorOf(response, 'POST /blobs/…/upload-grant') };
    }
    const body = (await response.json()) as {
      url?: unknown;
      urlExpiresAtMs?: unknown;
      present?: unknown;
    };
    if (typeof body.url === 'string') {
      return {
        ok: true,
        grant: {
          kind: 'url',
          url: body.url,
          ...(typeof body.urlExpiresAtMs === 'number'
            ? { urlExpiresAtMs: body.urlExpiresAtMs }
            : {}),
        },
      };
    }
    if (body.present === true) return { ok: true, grant: { kind: 'present' } };
    return { ok: true, grant: { kind: 'none' } };
  }

  /** §5.9.3 object-store hop: PUT the bytes to the presigned url, no host auth. */
  async putBlobUrl(
    url: string,
    bytes: Uint8Array,
  ): Promise<{ ok: true } | { ok: false; error: DriverError }> {
    const response = await fetch(url, { method: 'PUT', body: bytes.slice() });
    if (!response.ok) {
      return { ok: false, error: await errorOf(response, 'PUT <blob url>') };
    }
    await response.arrayBuffer();
    return { ok: true };
  }

  async setBlobPresign(enabled: boolean): Promise<void> {
    await this.#control('setBlobPresign', { enabled });
  }

  async setAllowedScopes(
    actorId: string,
    allowed: DriverScopeMap,
  ): Promise<void> {
    await this.#control('setAllowedScopes', { actorId, allowed });
  }

  async installValidators(specs: readonly ValidatorInstallSpec[]): Promise<void> {
    await this.#control('installValidators', { specs });
  }

  async installCommitValidator(spec?: CommitValidatorInstallSpec): Promise<void> {
    await this.#control('installCommitValidator', spec !== undefined ? { spec } : {});
  }

  /** `backup-restore`: a whole-store copy by the engine (the host stops
   * the instance while it copies). */
  async captureBackup(): Promise<void> {
    await this.#control('captureBackup');
  }

  /** `backup-restore`: the store put back to the copy, every partition's
   * log epoch rotated (§2.1), then a new server over it. */
  async restoreBackup(): Promise<void> {
    await this.#control('restoreBackup');
  }

  async failNextIdempotencyLookup(): Promise<void> {
    await this.#control('failNextIdempotencyLookup');
  }

  async setResolverFailing(failing: boolean): Promise<void> {
    await this.#control('setResolverFailing', { failing });
  }

  async setResolverOutage(outage: boolean): Promise<void> {
    await this.#control('setResolverOutage', { outage });
  }

  async revokeLease(leaseId: string): Promise<void> {
    await this.#control('revokeLease', { leaseId });
  }

  async advanceClock(ms: number): Promise<void> {
    await this.#control('advanceClock', { ms });
  }

  async nowMs(): Promise<number> {
    return (await this.#control<{ nowMs: number }>('nowMs')).nowMs;
  }

  async prune(retention?: RetentionOptions): Promise<number> {
    const out = await this.#control<{ horizonSeq: number }>(
      'prune',
      retention !== undefined ? { retention } : {},
    );
    return out.horizonSeq;
  }

  async getMaxCommitSeq(): Promise<number> {
    return (await this.#control<{ seq: number }>('getMaxCommitSeq')).seq;
  }

  async getHorizonSeq(): Promise<number> {
    return (await this.#control<{ seq: number }>('getHorizonSeq')).seq;
  }

  async readRows(table: string): Promise<ServerRowState[]> {
    return (await this.#control<{ rows: ServerRowState[] }>('readRows', { table }))
      .rows;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const socket of this.#sockets) socket.close();
    this.#sockets.clear();
    await this.#control('close');
  }
}

export interface GoServerDriverOptions {
  /** The host's base URL, e.g. `http://127.0.0.1:41234`. */
  readonly baseUrl: string;
  /** Driver name in reports (default `syncstore-go`). */
  readonly name?: string;
}

/** The ServerDriver for the conformance host at `options.baseUrl`. */
export function goServerDriver(options: GoServerDriverOptions): ServerDriver {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const capabilities = CAPABILITIES;
  return {
    name: options.name ?? 'syncstore-go',
    capabilities,
    async create(create: ServerCreateOptions): Promise<ServerInstance> {
      const response = await fetch(`${baseUrl}/instances`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(create),
      });
      const text = await response.text();
      if (!response.ok) {
        throw new HostError(`create an instance: HTTP ${response.status}: ${text}`);
      }
      const { id } = JSON.parse(text) as { id: string };
      return new GoServerInstance(`${baseUrl}/i/${encodeURIComponent(id)}`);
    },
  };
}
