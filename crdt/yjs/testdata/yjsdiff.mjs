// yjsdiff.mjs — the real-Yjs half of merge_bun_test.go (run by Bun).
//
//   bun yjsdiff.mjs gen SEED N        → JSON cases on stdout
//   bun yjsdiff.mjs check < results   → JSON verdicts on stdout
//
// gen: N random collaborations of 2–4 Y.Docs (distinct client ids) doing
// text inserts, deletes and formatting, map sets and deletes, array
// inserts and deletes, nested maps, arrays and texts, exchanging updates
// now and then. A case's updates are full states and incremental updates
// of the docs (some left out, so merges hold pending structs too), Yjs's
// own merges of some of them and state diffs.
//
// check: for each {updates, merged: [hex…]} the content of a fresh doc
// after Y.applyUpdate of every update must equal the content after each
// merged (Go's) update, and the content of Y.mergeUpdates(updates).
// Content = the roots' JSON, the text's delta with formats, the state
// vector and the pending structs' presence.
const Y = await import(`${process.env.SYNCSTORE_YJS_DIR}/dist/yjs.mjs`);

const hex = (b) => Buffer.from(b).toString('hex');
const unhex = (s) => new Uint8Array(Buffer.from(s, 'hex'));

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

// whole moves a text index off the middle of a surrogate pair: Yjs
// itself converges only order-dependently on a pair split by concurrent
// edits (each side's split replaces its halves with U+FFFD), and editors
// never split one.
function whole(t, i) {
  const s = t.toString();
  const c = s.charCodeAt(i - 1);
  return i > 0 && i < s.length && c >= 0xd800 && c <= 0xdbff ? i + 1 : i;
}

function gen(seed, n) {
  const r = rng(seed);
  const int = (k) => Math.floor(r() * k);
  const pick = (a) => a[int(a.length)];
  const words = ['a', 'bc', 'hello', ' ', 'xyz', '😀', 'é', 'long text run', '\n'];
  const cases = [];
  for (let c = 0; c < n; c++) {
    const docs = [];
    const nd = 2 + int(3);
    const updates = [];
    for (let d = 0; d < nd; d++) {
      const doc = new Y.Doc({ gc: r() < 0.5 });
      doc.clientID = 1 + d * 1000 + int(1000);
      doc.on('update', (u) => {
        if (r() < 0.35) updates.push(u);
      });
      docs.push(doc);
    }
    const steps = 5 + int(40);
    for (let s = 0; s < steps; s++) {
      const doc = pick(docs);
      const t = doc.getText('t');
      const m = doc.getMap('m');
      const a = doc.getArray('a');
      switch (int(10)) {
        case 0:
        case 1:
        case 2:
          t.insert(whole(t, int(t.length + 1)), pick(words));
          break;
        case 3:
          if (t.length > 0) {
            const i = whole(t, int(t.length));
            const j = whole(t, Math.min(t.length, i + 1 + int(5)));
            if (j > i) t.delete(i, j - i);
          }
          break;
        case 4:
          if (t.length > 0) {
            const i = whole(t, int(t.length));
            const j = whole(t, Math.min(t.length, i + 1 + int(3)));
            if (j > i) t.format(i, j - i, { bold: r() < 0.5 ? true : null });
          }
          break;
        case 5:
          m.set(pick(['k1', 'k2', 'k3']), pick([1, 'v', null, { x: [1, 2] }, true, 2.5, new Uint8Array([1, 2])]));
          break;
        case 6:
          if (r() < 0.5) m.delete(pick(['k1', 'k2', 'k3']));
          else {
            const sub = new Y.Map();
            m.set('sub', sub);
            sub.set('deep', pick(['p', 'q']));
          }
          break;
        case 7:
          a.insert(int(a.length + 1), [pick([1, 'x', { o: 1 }, [3], false]), pick([7, 'y'])]);
          break;
        case 8:
          if (a.length > 0) {
            const i = int(a.length);
            a.delete(i, 1 + int(Math.min(3, a.length - i)));
          } else {
            const yt = new Y.Text();
            a.insert(0, [yt]);
            yt.insert(0, pick(words));
          }
          break;
        case 9: {
          // exchange: one doc learns another's state (maybe partially).
          const other = pick(docs);
          if (other !== doc) Y.applyUpdate(doc, Y.encodeStateAsUpdate(other, Y.encodeStateVector(doc)));
          break;
        }
      }
    }
    for (const doc of docs) if (r() < 0.7) updates.push(Y.encodeStateAsUpdate(doc));
    if (updates.length === 0) updates.push(Y.encodeStateAsUpdate(docs[0]));
    // Yjs's own merges of some updates (they may hold skips), and a
    // state diffed against another doc's state vector.
    if (r() < 0.4) updates.push(Y.mergeUpdates(updates.filter(() => r() < 0.5)));
    if (r() < 0.3) updates.push(Y.encodeStateAsUpdate(pick(docs), Y.encodeStateVector(pick(docs))));
    cases.push({ updates: updates.map(hex) });
    for (const doc of docs) doc.destroy();
  }
  return cases;
}

// canon is JSON.stringify with object keys sorted: a Y.Map's toJSON
// orders keys by integration order, which is not content.
function canon(v) {
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon(v[k])}`)
      .join(',')}}`;
  }
  if (v instanceof Uint8Array) return `bytes:${hex(v)}`;
  return JSON.stringify(v) ?? 'undefined';
}

function content(updates) {
  const doc = new Y.Doc();
  for (const u of updates) Y.applyUpdate(doc, u);
  const out = canon({
    t: doc.getText('t').toDelta(),
    m: doc.getMap('m').toJSON(),
    a: doc.getArray('a').toJSON(),
    sv: [...Y.decodeStateVector(Y.encodeStateVector(doc)).entries()].sort((x, y) => x[0] - y[0]),
    pending: doc.store.pendingStructs !== null,
    pendingDs: doc.store.pendingDs !== null,
  });
  doc.destroy();
  return out;
}

const [mode, a1, a2] = process.argv.slice(2);
if (mode === 'gen') {
  process.stdout.write(JSON.stringify(gen(Number(a1), Number(a2))));
} else if (mode === 'check') {
  const input = JSON.parse(await new Response(Bun.stdin.stream()).text());
  const verdicts = input.map((c, i) => {
    const ups = c.updates.map(unhex);
    const want = content(ups);
    const yjsMerged = content([Y.mergeUpdates(ups)]);
    const bad = [];
    if (yjsMerged !== want) bad.push(`Y.mergeUpdates differs from applying every update (not a Go bug): ${yjsMerged} vs ${want}`);
    c.merged.forEach((m, k) => {
      let got;
      try {
        got = content([unhex(m)]);
      } catch (e) {
        got = `apply threw: ${e}`;
      }
      if (got !== want) bad.push(`merged[${k}] (${c.labels[k]}): got ${got}, want ${want}`);
    });
    return { case: i, bad };
  });
  process.stdout.write(JSON.stringify(verdicts));
} else {
  throw new Error('usage: yjsdiff.mjs gen SEED N | check');
}
