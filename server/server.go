package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// Identity is what Config.Authenticate makes of a request: the partition
// the request works on (a tenant; it never appears on the wire, SPEC §2.1)
// and the actor it acts as. Both are V-1/V-2 identifiers of the engine:
// non-empty valid UTF-8 without NUL, at most 255 bytes.
type Identity struct {
	Partition string
	ActorID   string
}

// Config configures a Server. Schema, Authenticate and ResolveScopes are
// required; every other field has a default.
type Config struct {
	// Schema is the one schema version this server serves (SPEC §1.6: a
	// request for any other version gets the schema-floor response).
	// The store must have been ensured with its engine form:
	// store.EnsureSchema(ctx, driverSchema) where driverSchema comes from
	// Schema.DriverSchema(); New checks it.
	Schema ssp2.Schema

	// Authenticate runs on every HTTP request and WebSocket upgrade
	// (SPEC §1.1). An error answers HTTP 401 sync.auth_required — or,
	// when the error is an *ssp2.Error, that error's code and message
	// (e.g. sync.rate_limited). Its message is never sent otherwise.
	Authenticate func(r *http.Request) (Identity, error)

	// ResolveScopes returns the scopes actor id may read and write,
	// across every table (SPEC §3.2 step 3): scope variable → values,
	// where the value "*" means any value. It is called at most once per
	// sync round (memoized for the push half's write authorization,
	// §3.4), once per segment download (clientID "") and when a realtime
	// connection registers. An error fails closed: subscriptions are
	// revoked and writes refused with sync.forbidden — except an
	// *ssp2.Error, which fails the whole request with its code. A
	// variable no table declares fails the request with
	// sync.invalid_subscription (a host bug, §3.2).
	ResolveScopes func(ctx context.Context, id Identity, clientID string) (map[string][]string, error)

	// Validate, if set, is the write validator of SPEC §6.7: called for
	// each operation of a push after the row codec and the §3.4 scope
	// authorization passed, inside the push's transaction, right before
	// the row is written — for every upsert and for the delete of a row
	// that exists (a delete of an absent row writes nothing and is not
	// validated). v.Row is the row that will persist, v.Stored the row
	// before. nil accepts; a *Rejection rejects the commit with the
	// host's code (stored and replayed, never re-validated); a storage
	// error (*sync.Error) fails the push; any other error rejects it with
	// sync.constraint_violation. It dispatches on v.Table itself. nil: no
	// validation.
	Validate func(ctx context.Context, id Identity, v OpValidation) error

	// ValidateCommit, if set, is the whole-commit validator of SPEC §6.8:
	// called once per commit whose every operation passed (Validate
	// included), after all of them are staged in the push's transaction
	// and before the commit is appended, with every operation — a delete
	// of an absent row too — and a reader of the candidate state (the
	// staged writes visible). Its errors are Validate's; a *Rejection's
	// OpIndex names the operation the rejection reports (0 unless set).
	// It is never called for a replay or a commit an operation rejected.
	ValidateCommit func(ctx context.Context, r CandidateReader, c CommitValidation) error

	// Segments stores external bootstrap segments (SPEC §5): rows
	// segments too large to inline and SQLite images. nil → an in-memory
	// store bounded by Limits.MemorySegmentBytes, which is private to
	// this Server: several instances behind a load balancer need a
	// shared store (NewFileSegmentStore on a shared volume, or the host's
	// own).
	Segments SegmentStore

	// Limits bound what a client can make the server hold; zero fields
	// take the defaults documented on Limits.
	Limits Limits

	// SignedURLs, if set, issues signed segment URLs (SPEC §5.4) to
	// clients that advertise accept bit 3, served by
	// SignedSegmentHandler. nil: descriptors never carry a url.
	SignedURLs *SignedURLConfig

	// Now is the clock of every time the server reads: commit and record
	// times, segment TTLs, realtime timestamps, presence. Default
	// time.Now. A test host passes a virtual clock.
	Now func() time.Time

	// Logger receives the server's logs (failures the client cannot see,
	// protocol violations that close a socket). Default slog.Default().
	Logger *slog.Logger

	// TempDir is where SQLite images are built (SPEC §5.3), one
	// temporary file per image being built, removed once stored. ""
	// means os.TempDir().
	TempDir string

	// WebSocketOriginPatterns authorizes cross-origin WebSocket upgrades
	// (host patterns, as coder/websocket's AcceptOptions.OriginPatterns);
	// the request's own host is always authorized. Empty: same origin,
	// or no Origin header (non-browser clients).
	WebSocketOriginPatterns []string

	// Leases turns on SPEC §7.3 auth leases (docs/syncular.md, "Auth
	// leases"); the zero value is off: no LEASE frame is ever sent and a
	// resolver outage (ErrAuthorizationUnavailable) fails the round with
	// sync.auth_lease_required. On, the store must have the leases
	// capability (New checks it).
	Leases Leases

	// Blobs, if set, serves blobs (SPEC §5.9, blobs*.go): the /blobs
	// routes, the push-time existence check and the reference index. The
	// store must have the blob-refs capability (BLOB-1). nil: no blob
	// routes, and a push referencing a blob is rejected blob.not_found.
	Blobs *BlobConfig

	// CRDTMergers is the CRDT merger registry (SPEC §5.10.2): crdtType →
	// the merger of the crdt columns naming it (crdt/yjs.Merger for
	// "yjs-doc"). Set, every crdt column of Schema must name a registered
	// crdtType (New fails otherwise, §5.10.1), and a push writing a crdt
	// column writes merge(stored, pushed) — see CRDTMerger. nil: no
	// merger; a push writing a non-NULL crdt value is rejected with
	// sync.crdt_merge_failed.
	CRDTMergers map[string]CRDTMerger
}

// Limits bound every resource a client can make the server hold. A zero
// field takes its default.
type Limits struct {
	// MaxRequestBytes bounds a sync request body (after gzip
	// decompression) and a socket round's request stream. A larger
	// Content-Length is refused before anything is read; a body that
	// turns out larger is refused when it crosses the bound (HTTP 413,
	// sync.invalid_request). Default 8 MiB.
	MaxRequestBytes int64
	// MaxOperationsPerRequest bounds the operations across all commits of
	// one request (SPEC §6.1, sync.too_many_operations). Default 500;
	// at most sync.MaxPushOps (1,000), the engine's bound for one commit.
	MaxOperationsPerRequest int
	// InlineSegmentMaxBytes: rows segments up to this size ride inline
	// (SEGMENT_INLINE) when the client accepts both kinds (SPEC §5.7).
	// Default 256 KiB; negative: none (every rows segment is stored and
	// referenced, unless the client accepts inline segments only).
	InlineSegmentMaxBytes int
	// MaxDeltaBytes: a realtime delta larger than this becomes a
	// delta-too-large wake-up (SPEC §8.2). Default 1 MiB.
	MaxDeltaBytes int
	// SegmentTTL is how long a stored segment serves downloads and reuse
	// (SPEC §5.1). Default 24 h.
	SegmentTTL time.Duration
	// MemorySegmentBytes bounds the default in-memory segment store (the
	// oldest segments are forgotten first; a forgotten segment answers
	// sync.not_found and the client re-pulls). Default 256 MiB.
	MemorySegmentBytes int64
	// MaxPresenceBytes bounds one published presence document (SPEC
	// §8.6.2, presence.too_large). Default 16 KiB.
	MaxPresenceBytes int
	// HeartbeatInterval is the realtime heartbeat period (SPEC §8.5).
	// Default 30 s.
	HeartbeatInterval time.Duration
	// PingInterval is how often a socket is pinged; a ping unanswered
	// within WriteTimeout closes it. Default 30 s.
	PingInterval time.Duration
	// WriteTimeout bounds one socket write (and a ping's answer); a client
	// that does not read for that long is disconnected. Default 10 s.
	WriteTimeout time.Duration
	// SendQueueMessages and SendQueueBytes bound a socket's queue of
	// control events and deltas. A delta that does not fit becomes a
	// catchup-required wake-up (SPEC §8.2 flow control); any other event
	// that does not fit disconnects the client as too slow. Defaults 256
	// messages, 4 MiB.
	SendQueueMessages int
	SendQueueBytes    int64
	// MaxConnections bounds the realtime sockets of this Server, and
	// MaxConnectionsPerClient those of one (partition, client id)
	// (sync.websocket_connection_limit, HTTP 429). Defaults 10,000 and 8.
	MaxConnections          int
	MaxConnectionsPerClient int
	// PartitionTouchInterval: the partition registry (log epoch,
	// last-seen time, SPEC §2.1) is read and refreshed at most this often
	// per partition by this Server; requests in between use the epoch it
	// read. Default 1 s; negative: every request.
	PartitionTouchInterval time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxRequestBytes         = 8 << 20
	DefaultMaxOperationsPerRequest = 500
	DefaultInlineSegmentMaxBytes   = 256 << 10
	DefaultMaxDeltaBytes           = 1 << 20
	DefaultSegmentTTL              = 24 * time.Hour
	DefaultMemorySegmentBytes      = 256 << 20
	DefaultMaxPresenceBytes        = 16 << 10
	DefaultHeartbeatInterval       = 30 * time.Second
	DefaultPingInterval            = 30 * time.Second
	DefaultWriteTimeout            = 10 * time.Second
	DefaultSendQueueMessages       = 256
	DefaultSendQueueBytes          = 4 << 20
	DefaultMaxConnections          = 10000
	DefaultMaxConnectionsPerClient = 8
	DefaultPartitionTouchInterval  = time.Second
)

func (l Limits) withDefaults() (Limits, error) {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	defi := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxRequestBytes, DefaultMaxRequestBytes)
	defi(&l.MaxOperationsPerRequest, DefaultMaxOperationsPerRequest)
	defi(&l.InlineSegmentMaxBytes, DefaultInlineSegmentMaxBytes)
	defi(&l.MaxDeltaBytes, DefaultMaxDeltaBytes)
	defd(&l.SegmentTTL, DefaultSegmentTTL)
	def(&l.MemorySegmentBytes, DefaultMemorySegmentBytes)
	defi(&l.MaxPresenceBytes, DefaultMaxPresenceBytes)
	defd(&l.HeartbeatInterval, DefaultHeartbeatInterval)
	defd(&l.PingInterval, DefaultPingInterval)
	defd(&l.WriteTimeout, DefaultWriteTimeout)
	defi(&l.SendQueueMessages, DefaultSendQueueMessages)
	def(&l.SendQueueBytes, DefaultSendQueueBytes)
	defi(&l.MaxConnections, DefaultMaxConnections)
	defi(&l.MaxConnectionsPerClient, DefaultMaxConnectionsPerClient)
	defd(&l.PartitionTouchInterval, DefaultPartitionTouchInterval)
	switch {
	case l.MaxRequestBytes < 64:
		return l, errors.New("server: Limits.MaxRequestBytes must be at least 64")
	case l.MaxOperationsPerRequest < 1 || l.MaxOperationsPerRequest > sync.MaxPushOps:
		return l, fmt.Errorf("server: Limits.MaxOperationsPerRequest must be 1…%d", sync.MaxPushOps)
	case l.MaxDeltaBytes < 0, l.MaxPresenceBytes < 0,
		l.SendQueueMessages < 0, l.SendQueueBytes < 0, l.MaxConnections < 0,
		l.MaxConnectionsPerClient < 0, l.MemorySegmentBytes < 0:
		return l, errors.New("server: negative limit")
	case l.SegmentTTL < time.Millisecond:
		return l, errors.New("server: Limits.SegmentTTL must be at least 1 ms")
	case l.HeartbeatInterval < 0, l.PingInterval < 0, l.WriteTimeout < 0:
		return l, errors.New("server: negative interval")
	case l.SendQueueBytes < int64(l.MaxDeltaBytes):
		return l, errors.New("server: Limits.SendQueueBytes must hold one MaxDeltaBytes delta")
	}
	return l, nil
}

// Server serves SSP2 clients over one *sync.Store. It is an http.Handler;
// see ServeHTTP for its routes. Each Server holds its own state (realtime
// sessions, presence, the default segment store, a fanout subscription),
// so a process may run many; none is global. Safe for concurrent use.
type Server struct {
	store    *sync.Store
	cfg      Config
	lim      Limits
	log      *slog.Logger
	schema   *ssp2.Compiled
	version  int32
	tables   map[string]*table
	declared map[string]bool // every scope variable any table declares
	segments SegmentStore
	urls     *urlSigner // nil: no signed URLs
	blobs    *blobState // nil: blobs off (blobs.go)
	eng      engine
	reg      registryCache
	hub      *hub
	stats    stats
	images   imageFlights // SQLite images being built (§5.3)
	// onImageBuild, when set (tests), runs as a round begins building an
	// image, before its first page is added.
	onImageBuild func()

	ctx    context.Context
	cancel context.CancelFunc
	wg     gosync.WaitGroup
	closed gosync.Once
}

// table is a served table: its schema IR, codec and patterns, and the
// engine's table.
type table struct {
	*ssp2.CompiledTable
	engine sync.Table
	// scopeVar[variable] is the first pattern declaring it (its prefix
	// makes presence scope keys).
	scopeVar map[string]ssp2.CompiledPattern
	// imageable: no encrypted column (an image would copy ciphertext
	// without the client's per-row decrypt pass, SPEC §5.11).
	imageable bool
	// crdtCols and blobCols index the columns whose pushed values the
	// server cannot take without a merger or a blob store.
	crdtCols, blobCols []int
	// crdtMergers[i] merges crdtCols[i] (nil: no Config.CRDTMergers).
	crdtMergers []CRDTMerger
}

// New returns a Server over store for cfg. The store's ensured schema must
// be cfg.Schema's engine form (an error says what differs). Pushes run
// with the store's push options (Store.SetPushOptions: a host's
// PlanReactions, ValidateCommit…) and the server's own Authorize,
// ValidateOp and clock for the call (Store.PushWith). New starts no
// goroutine: the commit-fanout subscription starts with the first
// realtime connection. Close ends it.
func New(store *sync.Store, cfg Config) (*Server, error) {
	if store == nil {
		return nil, errors.New("server: nil store")
	}
	if cfg.Authenticate == nil || cfg.ResolveScopes == nil {
		return nil, errors.New("server: Config.Authenticate and Config.ResolveScopes are required")
	}
	if cfg.Schema.Version < 1 || cfg.Schema.Version > 1<<31-1 {
		return nil, errors.New("server: Config.Schema.Version must be 1…2^31−1 (SSP2 schemaVersion is an i32)")
	}
	compiled, err := ssp2.Compile(&cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	want, err := cfg.Schema.DriverSchema()
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	want, err = sync.CompileSchema(want)
	if err != nil {
		return nil, fmt.Errorf("server: the schema's engine form: %w", err)
	}
	have, ok := store.Schema()
	if !ok {
		return nil, errors.New("server: the store has no ensured schema: call store.EnsureSchema with Config.Schema.DriverSchema() first")
	}
	if !reflect.DeepEqual(normalizeSchema(have), normalizeSchema(want)) {
		return nil, errors.New("server: the store's ensured schema is not Config.Schema's engine form (Schema.DriverSchema)")
	}
	lim, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.Leases.check(store); err != nil {
		return nil, err
	}
	urls, err := newURLSigner(cfg.SignedURLs)
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		store:    store,
		cfg:      cfg,
		lim:      lim,
		log:      cfg.Logger,
		schema:   compiled,
		version:  int32(cfg.Schema.Version),
		tables:   map[string]*table{},
		declared: map[string]bool{},
		segments: cfg.Segments,
		urls:     urls,
	}
	for _, ct := range compiled.Tables() {
		t := &table{CompiledTable: ct, scopeVar: map[string]ssp2.CompiledPattern{}, imageable: true}
		for _, et := range want.Tables {
			if et.Name == ct.Name {
				t.engine = et
			}
		}
		for _, p := range ct.Patterns {
			if _, ok := t.scopeVar[p.Variable]; !ok {
				t.scopeVar[p.Variable] = p
			}
			s.declared[p.Variable] = true
		}
		for i, c := range ct.Columns {
			switch {
			case c.Encrypted:
				t.imageable = false
			case c.Type == ssp2.TypeCRDT:
				t.crdtCols = append(t.crdtCols, i)
			case c.Type == ssp2.TypeBlobRef:
				t.blobCols = append(t.blobCols, i)
			}
		}
		if err := crdtMergers(&cfg, t); err != nil {
			return nil, err
		}
		s.tables[ct.Name] = t
	}
	if s.segments == nil {
		s.segments = NewMemorySegmentStore(lim.MemorySegmentBytes)
	}
	if s.blobs, err = newBlobState(cfg.Blobs); err != nil {
		return nil, err
	}
	if s.blobs != nil && !store.Supports(sync.CapBlobRefs) {
		return nil, errors.New("server: Config.Blobs needs a store with the blob-refs capability (BLOB-1)")
	}
	s.eng = newEngine(store, cfg.Now)
	s.reg = registryCache{entries: map[string]registryEntry{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.hub = newHub(s)
	return s, nil
}

// stats count what a pull holds at once, for tests of bounded memory.
type stats struct {
	livePages, peakPages   atomic.Int64 // bootstrap pages being handled
	peakSegmentBytes       atomic.Int64 // largest rows-segment buffer
	liveImages, peakImages atomic.Int64 // SQLite images being built
	imagesBuilt            atomic.Int64 // SQLite image builds begun
	imageWaits             atomic.Int64 // rounds that waited for another's build (imageFlights)
}

func raise(peak *atomic.Int64, v int64) {
	for {
		p := peak.Load()
		if v <= p || peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// normalizeSchema makes two compiled schemas comparable: nil and empty
// slices alike.
func normalizeSchema(s sync.Schema) sync.Schema {
	out := sync.Schema{Version: s.Version}
	for _, t := range s.Tables {
		nt := sync.Table{Name: t.Name, PrimaryKey: t.PrimaryKey}
		nt.Columns = append([]sync.Column{}, t.Columns...)
		nt.Scopes = append([]sync.Scope{}, t.Scopes...)
		for _, ix := range t.Indexes {
			nt.Indexes = append(nt.Indexes, sync.Index{Name: ix.Name, Columns: append([]string{}, ix.Columns...), Unique: ix.Unique})
		}
		if nt.Indexes == nil {
			nt.Indexes = []sync.Index{}
		}
		out.Tables = append(out.Tables, nt)
	}
	return out
}

// Close ends every realtime socket (going away), stops the commit-fanout
// subscription and waits for the server's goroutines. Requests in flight
// finish on their own; sockets opened after Close are refused. A second
// call is a no-op. The store and the segment store stay open: they are
// the host's.
func (s *Server) Close() error {
	s.closed.Do(func() {
		s.cancel()
		s.hub.closeAll()
		s.wg.Wait()
	})
	return nil
}

// RotateLogEpoch gives partition a new, unpredictable log epoch (SPEC §2.1,
// the backup-restore rule): the store marks epoch validation required and
// forgets the partition's client cursors, and this Server closes its
// realtime sessions on the partition, whose clients reconnect, get the
// reset response and bootstrap again. Other instances must be fenced by
// the operator (restarted, or RotateLogEpoch's effect awaited: they read
// the registry every Limits.PartitionTouchInterval). It returns the new
// epoch. A whole store restored from a backup is rotated with
// RotateAllLogEpochs before any Server serves it.
func (s *Server) RotateLogEpoch(ctx context.Context, partition string) (string, error) {
	epoch := newEpoch()
	e, err := s.store.RotatePartitionLogEpoch(ctx, partition, epoch, s.nowMs())
	if err != nil {
		return "", err
	}
	s.reg.put(partition, e, s.cfg.Now())
	s.hub.fencePartition(partition)
	return e.Epoch, nil
}

// Capabilities lists the optional SSP2 server capabilities this server
// serves, by upstream's names (of signed-urls, blobs, blob-presign, crdt,
// validators, commit-validators, leases, backup-restore,
// idempotency-fault): validators and commit-validators (Config.Validate,
// Config.ValidateCommit), idempotency-fault (a storage's unreadable
// push result answered as §6.3's retryable sync.idempotency_cache_miss,
// nothing applied), backup-restore (the restore procedure rotates every
// partition's epoch, RotateAllLogEpochs), with Config.SignedURLs signed-urls, with
// Config.Leases leases (SPEC §7.3), with Config.Blobs blobs and
// blob-presign (§5.9), and with Config.CRDTMergers crdt (§5.10).
// docs/syncular.md says what a client meets for the others.
func (s *Server) Capabilities() []string {
	caps := []string{"validators", "commit-validators", "idempotency-fault", "backup-restore"}
	if s.urls != nil {
		caps = append(caps, "signed-urls")
	}
	if s.cfg.Leases.on() {
		caps = append(caps, "leases")
	}
	if s.blobs != nil {
		// blobs (Config.Blobs) and blob-presign (a presigner, now or via
		// SetBlobPresigner later).
		caps = append(caps, "blobs", "blob-presign")
	}
	if s.cfg.CRDTMergers != nil {
		caps = append(caps, "crdt")
	}
	return caps
}

func (s *Server) nowMs() int64 { return s.cfg.Now().UnixMilli() }

// newEpoch returns a fresh, unpredictable log epoch: 128 random bits,
// base64url.
func newEpoch() string {
	var b [16]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// registryCache keeps each partition's registry entry for
// Limits.PartitionTouchInterval, so a busy partition touches the
// registry once per interval rather than once per request.
type registryCache struct {
	mu      gosync.Mutex
	entries map[string]registryEntry
}

type registryEntry struct {
	entry sync.PartitionEntry
	at    time.Time
}

// maxRegistryEntries bounds registryCache: past it, it is emptied (the next
// request of each partition touches the registry again).
const maxRegistryEntries = 100_000

func (c *registryCache) get(p string, now time.Time, every time.Duration) (sync.PartitionEntry, bool) {
	if every < 0 {
		return sync.PartitionEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[p]
	if !ok || now.Sub(e.at) >= every || now.Before(e.at) {
		return sync.PartitionEntry{}, false
	}
	return e.entry, true
}

func (c *registryCache) put(p string, e sync.PartitionEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxRegistryEntries {
		clear(c.entries)
	}
	c.entries[p] = registryEntry{entry: e, at: now}
}

// touch returns partition's registry entry (creating the partition's
// first epoch), refreshing its last-seen time at most once per
// Limits.PartitionTouchInterval (SPEC §2.1).
func (s *Server) touch(ctx context.Context, partition string) (sync.PartitionEntry, error) {
	now := s.cfg.Now()
	if e, ok := s.reg.get(partition, now, s.lim.PartitionTouchInterval); ok {
		return e, nil
	}
	e, err := s.store.TouchPartition(ctx, partition, now.UnixMilli(), newEpoch())
	if err != nil {
		return sync.PartitionEntry{}, err
	}
	s.reg.put(partition, e, now)
	return e, nil
}
