// Starts the miniflare lane: worker.js on workerd (miniflare), with a pool
// of in-memory D1 databases, on 127.0.0.1. Used by .ci/start-miniflare.sh.
//
//   node server.mjs [--port 8788] [--slots 24]
//
// The bearer token is env SYNCSTORE_D1_TOKEN (default "syncstore-test").
// It prints "listening http://127.0.0.1:PORT" once requests are served and
// runs until it gets SIGTERM or SIGINT.
import { Miniflare } from "miniflare";
import { fileURLToPath } from "node:url";
import path from "node:path";

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const port = Number(arg("port", "8788"));
const slots = Number(arg("slots", "24"));
const token = process.env.SYNCSTORE_D1_TOKEN || "syncstore-test";
const here = path.dirname(fileURLToPath(import.meta.url));

const d1Databases = {};
for (let i = 0; i < slots; i++) d1Databases[`DB${i}`] = `syncstore-slot-${i}`;

const mf = new Miniflare({
  host: "127.0.0.1",
  port,
  modules: true,
  scriptPath: path.join(here, "worker.js"),
  compatibilityDate: "2026-04-01",
  d1Databases,
  d1Persist: false,
  bindings: { TOKEN: token, SLOTS: String(slots) },
});
const url = await mf.ready;
console.log(`listening ${url.origin}`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await mf.dispose();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
