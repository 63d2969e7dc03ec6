// The d1http miniflare lane: a Worker serving the shape of Cloudflare D1's
// HTTP query API through real D1 bindings (workerd's D1, run by miniflare),
// so drivers/d1http's conformance suite runs against the real engine.
//
//   POST   /client/v4/accounts/{a}/d1/database                 {"name"} → {result: {uuid, name}}
//   DELETE /client/v4/accounts/{a}/d1/database/{uuid}
//   POST   /client/v4/accounts/{a}/d1/database/{uuid}/query    rows as objects
//   POST   /client/v4/accounts/{a}/d1/database/{uuid}/raw      {columns, rows}
//   GET    /healthz                                            "ok" (no auth)
//
// Bearer auth against env.TOKEN. A request body is {sql, params} or
// {batch: [{sql, params}, …]}; a batch runs all-or-nothing, one request at
// a time per database (D1's own semantics: the statements go to the D1
// engine as one transaction).
//
// Databases: a Worker cannot create D1 databases, so server.mjs binds a
// fixed pool (DB0 … DB{n-1}). "Creating" a database takes a free binding
// and empties it (drops every table, index, view and trigger); deleting it
// empties it again and frees it. The pool is held in this isolate's memory
// (miniflare runs one isolate, and nothing persists across restarts).
//
// Statements reach the engine through the binding's own fetcher with the
// ROWS_AND_COLUMNS format — the request db.batch() sends — so rows keep
// their column order and duplicate column names (db.batch() turns rows
// into objects), and parameters reach the engine exactly as D1's HTTP API
// receives them (JSON values). The HTTP API's own checks that the engine
// does not make are made here: params must be an array (not null), at most
// 100 of them, a statement at most 100 KB.

const MAX_PARAMS = 100;
const MAX_STATEMENT_BYTES = 100 * 1024;

const pool = { slots: null, byId: new Map() }; // uuid → {slot, name}

function slotsOf(env) {
  if (pool.slots === null) {
    const n = Number(env.SLOTS);
    pool.slots = Array.from({ length: n }, () => null);
  }
  return pool.slots;
}

function json(status, body) {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function failure(status, code, message) {
  return json(status, { success: false, errors: [{ code, message }], messages: [], result: null });
}

function newId() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// engine sends statements to a D1 binding as one transaction and returns
// {ok, results} or {ok: false, message}.
async function engine(db, statements) {
  const resp = await db.fetcher.fetch("http://d1/query?resultsFormat=ROWS_AND_COLUMNS", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(statements),
  });
  const text = await resp.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    return { ok: false, message: `D1_ERROR: the engine answered HTTP ${resp.status}: ${text.slice(0, 300)}` };
  }
  if (!Array.isArray(answer)) {
    const msg = answer && (answer.error || answer.message);
    return { ok: false, message: `D1_ERROR: ${msg || "unknown engine error"}` };
  }
  return { ok: true, results: answer };
}

// empty drops every schema object of a database (D1's internal _cf_
// tables excepted).
async function empty(db) {
  for (let round = 0; round < 5; round++) {
    const r = await engine(db, [{
      sql: "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view', 'trigger') " +
        "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
      params: [],
    }]);
    if (!r.ok) throw new Error(r.message);
    const objects = r.results[0].results.rows;
    if (objects.length === 0) return;
    const drops = objects.map(([type, name]) => ({
      sql: `DROP ${type.toUpperCase()} IF EXISTS "${String(name).replaceAll('"', '""')}"`,
      params: [],
    }));
    const d = await engine(db, drops);
    if (!d.ok) throw new Error(d.message);
  }
  throw new Error("could not empty the database");
}

async function createDatabase(req, env) {
  let name = "";
  try {
    name = String((await req.json()).name || "");
  } catch {
    return failure(400, 7400, "malformed JSON body");
  }
  const slots = slotsOf(env);
  const slot = slots.indexOf(null);
  if (slot < 0) return failure(503, 7503, `every one of the ${slots.length} pooled databases is in use`);
  const uuid = newId();
  slots[slot] = uuid; // taken before the first await: allocation is atomic
  pool.byId.set(uuid, { slot, name });
  try {
    await empty(env[`DB${slot}`]);
  } catch (e) {
    slots[slot] = null;
    pool.byId.delete(uuid);
    return failure(500, 7500, `cannot empty a pooled database: ${e.message}`);
  }
  return json(200, { success: true, errors: [], messages: [], result: { uuid, name, version: "production", num_tables: 0 } });
}

async function deleteDatabase(uuid, env) {
  const entry = pool.byId.get(uuid);
  if (!entry) return failure(404, 7404, "The database could not be found");
  pool.byId.delete(uuid);
  try {
    await empty(env[`DB${entry.slot}`]);
  } finally {
    slotsOf(env)[entry.slot] = null;
  }
  return json(200, { success: true, errors: [], messages: [], result: null });
}

async function query(req, env, uuid, raw) {
  const entry = pool.byId.get(uuid);
  if (!entry) return failure(404, 7404, "The database could not be found");
  let body;
  try {
    body = await req.json();
  } catch {
    return failure(400, 7400, "malformed JSON body");
  }
  const statements = Array.isArray(body.batch) ? body.batch : [body];
  for (const s of statements) {
    if (typeof s.sql !== "string" || s.sql.trim() === "") return failure(400, 7500, "D1_ERROR: No SQL statements detected.: SQLITE_ERROR");
    if (s.params === null) return failure(400, 7500, "D1_TYPE_ERROR: params must be an array, not null");
    if (s.params === undefined) s.params = [];
    if (!Array.isArray(s.params)) return failure(400, 7500, "D1_TYPE_ERROR: params must be an array");
    if (s.params.length > MAX_PARAMS) return failure(400, 7500, "D1_ERROR: too many SQL variables at offset 0: SQLITE_ERROR");
    if (new TextEncoder().encode(s.sql).length > MAX_STATEMENT_BYTES) return failure(400, 7500, "D1_ERROR: statement too long: SQLITE_TOOBIG");
  }
  const r = await engine(env[`DB${entry.slot}`], statements.map((s) => ({ sql: s.sql, params: s.params })));
  if (!r.ok) return failure(400, 7500, r.message);
  const result = r.results.map((one) => {
    const { columns, rows } = one.results;
    const results = raw ? { columns, rows } : rows.map((row) => Object.fromEntries(columns.map((c, i) => [c, row[i]])));
    return { results, success: true, meta: one.meta };
  });
  return json(200, { success: true, errors: [], messages: [], result });
}

export default {
  async fetch(req, env) {
    const url = new URL(req.url);
    if (url.pathname === "/healthz") return new Response("ok");
    if (req.headers.get("authorization") !== `Bearer ${env.TOKEN}`) {
      return failure(401, 10000, "Authentication error");
    }
    const m = url.pathname.match(/^\/client\/v4\/accounts\/([^/]+)\/d1\/database(?:\/([^/]+)(?:\/(query|raw))?)?\/?$/);
    if (!m) return failure(404, 7000, "No route for that URI");
    const [, , uuid, op] = m;
    try {
      if (!uuid && req.method === "POST") return await createDatabase(req, env);
      if (uuid && !op && req.method === "DELETE") return await deleteDatabase(uuid, env);
      if (uuid && op && req.method === "POST") return await query(req, env, uuid, op === "raw");
    } catch (e) {
      return failure(500, 7500, `D1_ERROR: ${e && e.message ? e.message : String(e)}`);
    }
    return failure(405, 10405, "Method not allowed");
  },
};
