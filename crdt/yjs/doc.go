// Package yjs merges Yjs updates without a JavaScript runtime: the
// server-side merger of SSP2's crdtType "yjs-doc" (upstream Syncular's
// SPEC §5.10.2; docs/syncular.md "CRDT columns").
//
// An update (format v1, what Y.encodeStateAsUpdate and Y.mergeUpdates
// write) is lib0-encoded: per client, a run of structs — items with their
// content (text, JSON, binary, embeds, formats, shared types, sub-docs,
// "any" values, deleted ranges), GC ranges and skips — then the delete
// set. Merge reads every input completely (any malformed or over-bound
// input is an *Error, nothing merged), lays each client's structs on its
// clock line once, unites the delete sets and writes one update. It never
// integrates items into a document: what Yjs does on apply — ordering
// concurrent inserts, pending structs whose dependencies are missing — is
// left to the clients, which all receive the same merged bytes. That is
// enough for the merger contract (commutative, associative, idempotent in
// content) because a Yjs update is a set of structs identified by
// (client, clock) plus a set of deleted ranges, and both sets only grow.
//
// Tests compare it with real Yjs (merge_bun_test.go, under Bun, gated by
// SYNCSTORE_YJS_DIR) and fuzz its decoder (FuzzMerge).
package yjs
