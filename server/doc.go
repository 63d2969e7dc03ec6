// Package server serves upstream Syncular's wire protocol, SSP2, over a
// *sync.Store: a Syncular client (the web client, a native client, the
// conformance client) syncs with a Go host through it.
//
// A Server is an http.Handler. Mount it where the client expects it
// (compose with http.StripPrefix); relative to that mount it serves
//
//	POST /sync            a sync round: push commits, pull subscriptions
//	GET  /realtime        the realtime channel (WebSocket): deltas,
//	                      wake-ups, presence, sync rounds over the socket
//	GET  /segments/{id}   a stored bootstrap segment, re-authorized
//
// and, with Config.SignedURLs, SignedSegmentHandler is a second handler,
// mounted where SignedURLConfig.BaseURL leads (a CDN's origin): the
// signed segment URLs of §5.4, served without authentication.
//
// The host supplies authentication (Config.Authenticate: request → the
// partition and the actor), authorization (Config.ResolveScopes: actor →
// the scope values it may read and write), the schema (Config.Schema, the
// one version served), and bounds (Config.Limits). The protocol layer
// holds no storage logic: every round is engine calls — Store.PushWith
// for each commit with the write-path authorization as its hooks,
// Store.PullTo streaming the subscriptions, Store.SubscribeCommits and
// Store.ReadCommits for realtime fanout, Store.AckClientCursor for acks —
// so several host instances behind a load balancer serve one store on
// every driver.
//
// # A round
//
// A request (SPEC §1.5) is decoded, then validated before any response
// byte: the partition's log epoch (§2.1: a missing or stale epoch gets
// the reset response; wire version 1 is refused after a rotation), the
// schema version (§1.6: any version but Config.Schema's gets the floor
// response), the client id (reserved prefix, bound to another actor),
// the operation cap, the accept bits, the subscriptions. ResolveScopes
// runs once; effective scopes are requested ∩ allowed per subscription
// (§3.2). Then each PUSH_COMMIT is one engine push — authorized against
// the stored row, or the inserted one (§3.4); scope columns kept on
// update — and the subscriptions are streamed in request order: commits
// of an incremental window (§4.5), or bootstrap pages (§4.7) as rows
// segments, inline or stored (§5.2, §5.7), or as one SQLite image per
// table when the client accepts images and the table is larger than one
// page (§5.3; reused for every client of the same scopes at the same pin).
// Errors before the response starts are JSON (§10.1) with an HTTP status;
// after, an in-band ERROR frame.
//
// Both bindings run the same round: POST /sync and a socket round (§8.7)
// differ in framing only.
//
// # Realtime
//
// A socket registers the subscriptions of its client's last pull (§8.1)
// and receives each later commit they match as a delta, or a wake-up when
// the client is behind, a round is in flight, or the delta is too large
// (§8.2, §8.3); a socket round replaces its registrations at round end.
// Presence (§8.6) is per (partition, scope key), in memory, visible to
// exactly the sockets registered on the key. Each socket has a bounded
// send queue, a write timeout and pings: a slow or dead client holds a
// bounded amount of memory for a bounded time, and a closed socket leaves
// nothing behind.
//
// # Time
//
// Every time the server reads — commit times, client records, segment
// TTLs, realtime timestamps — comes from Config.Now, so a test host
// drives it with a virtual clock. New keeps no global state: a process
// may run one Server per tenant, per test, per conformance scenario.
//
// docs/syncular.md maps the SPEC onto the engine and lists where this
// server differs from upstream's and why.
package server
