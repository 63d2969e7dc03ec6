// Package ssp2 is the codec of SSP2, the wire protocol of Syncular
// clients (upstream's docs/SPEC.md): the binary envelope and its frames,
// the positional row codec generated from a schema, SSG2 rows segments,
// realtime control events, the §10 error catalog and the §11 canonical
// JSON rendering. It holds no state and does no I/O of its own beyond
// the io.Writer it is given; a server package builds on it.
//
// # Messages
//
// A message is an 8-byte envelope (magic "SSP2", wire version 1 or 2,
// kind, flags) and a sequence of length-prefixed frames ending with END.
// Decode, DecodeRequest and DecodeResponse check exactly what the SPEC
// makes a decode error (§1.7) and return an *Error carrying the §10 code
// (CodeInvalidRequest; CodeEmptyCommit for a commit without operations);
// everything else — duplicate subscription ids, unknown tables, the
// operation cap, decoding the row payloads — is the server's request
// validation. A decoded Message keeps every frame in wire order, unknown
// frames included (*UnknownFrame), so Message.Encode reproduces the
// input byte for byte. Decoded byte fields alias the input.
//
// A server answers with a ResponseWriter: one call per frame, in the
// grammar's order (§1.6), each a single Write to the underlying
// io.Writer, so nothing is buffered beyond the frame being written and a
// WebSocket binding can send one message per frame (§8.7). Whole
// messages — a realtime delta — are encoded with Message.Encode.
// MessageScanner finds the end of a message arriving in chunks.
//
// # Rows
//
// A RowCodec is compiled once per table and schema version from its
// columns (NewRowCodec, or Compile for a whole Schema IR). It decodes a
// payload into driver.Values — the engine's Go types, ready for
// sync.Store.Push: string, int64, float64, bool, driver.JSON (json and
// blob_ref), []byte (bytes and crdt), nil for NULL — and encodes them
// back, appending to a caller's buffer. Decoding checks everything §2.4
// requires (the null bitmap and its padding, NULL only where nullable,
// types, UTF-8, the i64 range, JSON documents, the BlobRef shape);
// decode errors name the column, never the value.
//
// SegmentWriter streams an SSG2 rows segment (§5.2) to an io.Writer in
// blocks and reports its segmentId; DecodeSegment and ValidateSegment
// read one with every structural check.
//
// # Realtime
//
// The socket's JSON control messages (§8): Hello, SyncWake, Heartbeat,
// PresenceEvent and PresenceError encode server events;
// ParseClientMessage reads acks and presence publishes strictly;
// ParseServerEvent reads server events (for Go clients and tests).
// TagDelta and TagRound are the binary channel tags.
//
// # Conformance
//
// Upstream's golden vectors (spec/vectors) run as tests: every valid case
// decodes, renders to its .json and re-encodes byte for byte; every
// invalid case fails with its manifest's code; mutations of the valid
// cases are refused (or, for unknown frames in legal positions,
// accepted). Where the SPEC and upstream's reference codec differ, this
// package follows the SPEC: an unknown frame between RESP_HEADER and
// LEASE is legal (ordering rules look at known frames only, §1.2 rule
// 2), and JSON members repeated inside a BlobRef or a detailsJson object
// are refused as non-canonical.
package ssp2
