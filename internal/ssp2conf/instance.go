package ssp2conf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// createRequest is upstream's ServerCreateOptions (driver.ts) as JSON.
// leases is parseLeases'.
type createRequest struct {
	Schema     json.RawMessage   `json:"schema"`
	Partition  string            `json:"partition"`
	NowMs      int64             `json:"nowMs"`
	Limits     *createLimits     `json:"limits"`
	SignedUrls *createSignedURLs `json:"signedUrls"`
	Leases     json.RawMessage   `json:"leases"`
	// cdnBase is where the instance's presigned blob URLs point
	// (blobs.go): http://<the create request's Host>/i/{id}/blob-cdn.
	cdnBase string
}

// createSignedURLs is upstream's ServerSignedUrlOptions: signed segment
// URLs on (signedurl.go), ttlSeconds absent = 900.
type createSignedURLs struct {
	TTLSeconds *int64 `json:"ttlSeconds"`
}

// createLimits is upstream's ServerLimitsOptions; an absent field keeps
// the server's default, a present one (0 included) is the value.
type createLimits struct {
	MaxOperationsPerRequest *int   `json:"maxOperationsPerRequest"`
	InlineSegmentMaxBytes   *int   `json:"inlineSegmentMaxBytes"`
	MaxDeltaBytes           *int   `json:"maxDeltaBytes"`
	SegmentTTLMs            *int64 `json:"segmentTtlMs"`
	MaxPresenceBytes        *int   `json:"maxPresenceBytes"`
}

// instance is one server under test: a fresh store, the SSP2 server over
// it, its virtual clock and the grant map its scope resolver answers from.
type instance struct {
	host      *Host
	id        string
	partition string
	schema    *ssp2.Schema
	engine    driver.Schema // schema's engine form
	owner     *sync.Store   // the provisioned store: owns the Conn
	store     *sync.Store   // the served one: owner's Conn through faultConn
	drop      func(context.Context) error
	srv       *server.Server
	blobs     *instanceBlobs // blobs.go

	// dsn is the store's, srvCfg what srv was made with: a restore
	// (backup.go) reopens the store and makes the server again.
	dsn    string
	srvCfg server.Config
	// gate: requests and controls hold it shared, captureBackup and
	// restoreBackup alone while the store is closed (backup.go).
	gate   gosync.RWMutex
	backup *storeBackup

	// idemFault arms faultConn's one idempotency lookup failure
	// (failNextIdempotencyLookup).
	idemFault atomic.Bool

	nowMs atomic.Int64

	mu      gosync.Mutex
	grants  map[string]map[string][]string // actor → allowed scopes
	failing bool
	// outage: resolveScopes reports server.ErrAuthorizationUnavailable
	// (setResolverOutage, SPEC §7.3.3).
	outage bool
	// validators and commitRule: the installed §6.7 and §6.8 rules
	// (validators.go); none accepts everything.
	validators map[string]opRule
	commitRule func(server.CommitValidation) error

	// presigner and signedTTL: what setBlobPresign and
	// setSignedUrlTtlSeconds set at run time (signedTTL < 0: never set),
	// kept so a restore's new server (backup.go) starts with them too.
	presigner server.BlobPresigner
	signedTTL time.Duration

	closeOnce gosync.Once
	closeErr  error
}

// newInstance creates instance id for req; urlBase is where the
// instance's signed segment URLs lead (the host's own /i/{id}/signed).
func (h *Host) newInstance(ctx context.Context, id, urlBase string, req createRequest) (_ *instance, err error) {
	leases, err := parseLeases(req.Leases)
	if err != nil {
		return nil, err
	}
	if req.Partition == "" {
		return nil, badRequest("partition is empty")
	}
	schema, err := ssp2.ParseSchema(req.Schema)
	if err != nil {
		return nil, badRequest("schema: %v", err)
	}
	engine, err := schema.DriverSchema()
	if err != nil {
		return nil, badRequest("schema: %v", err)
	}
	limits, err := req.Limits.server()
	if err != nil {
		return nil, err
	}
	signed, ttl, err := req.SignedUrls.server(urlBase)
	if err != nil {
		return nil, err
	}

	in := &instance{id: id, partition: req.Partition, schema: schema, engine: engine, grants: map[string]map[string][]string{}, signedTTL: -1}
	in.nowMs.Store(req.NowMs)

	fs, err := h.take(ctx)
	if err != nil {
		return nil, err
	}
	in.host, in.owner, in.drop, in.dsn = h, fs.store, fs.drop, fs.dsn
	defer func() {
		if err != nil {
			_ = in.close()
		}
	}()
	fc, err := newFaultConn(in.owner.Conn(), &in.idemFault)
	if err != nil {
		return nil, err
	}
	in.store = sync.OpenConn(fc)
	if err = in.store.EnsureSchema(ctx, engine); err != nil {
		return nil, fmt.Errorf("ensure the schema: %w", err)
	}
	if in.blobs, err = newInstanceBlobs(in, req.cdnBase); err != nil {
		return nil, fmt.Errorf("the blob store: %w", err)
	}
	in.srvCfg = server.Config{
		Schema:         *schema,
		Authenticate:   in.authenticate,
		ResolveScopes:  in.resolveScopes,
		Validate:       in.validate,
		ValidateCommit: in.validateCommit,
		Limits:         limits,
		SignedURLs:     signed,
		Now:            in.now,
		Logger:         h.log.With("instance", id),
		Leases:         leases,
		Blobs:          &server.BlobConfig{Store: in.blobs.store},
		// The crdt capability (crdt.go).
		CRDTMergers: crdtMergers,
	}
	in.srv, err = server.New(in.store, in.srvCfg)
	if err != nil {
		return nil, fmt.Errorf("server.New: %w", err)
	}
	if signed != nil {
		if err = in.srv.SetSignedURLTTL(ttl); err != nil {
			return nil, badRequest("signedUrls.ttlSeconds: %v", err)
		}
		in.signedTTL = ttl
	}
	return in, nil
}

// server maps upstream's limits onto server.Limits.
func (l *createLimits) server() (server.Limits, error) {
	var out server.Limits
	if l == nil {
		return out, nil
	}
	if v := l.MaxOperationsPerRequest; v != nil {
		if *v < 1 {
			return out, badRequest("limits.maxOperationsPerRequest must be ≥ 1")
		}
		out.MaxOperationsPerRequest = *v
	}
	if v := l.InlineSegmentMaxBytes; v != nil {
		if *v < 0 {
			return out, badRequest("limits.inlineSegmentMaxBytes must be ≥ 0")
		}
		// 0 is "never inline"; the server reads 0 as its default, and 1
		// says the same, since no SSG2 segment is that small.
		out.InlineSegmentMaxBytes = max(*v, 1)
	}
	if v := l.MaxDeltaBytes; v != nil {
		if *v < 1 {
			return out, badRequest("limits.maxDeltaBytes must be ≥ 1")
		}
		out.MaxDeltaBytes = *v
	}
	if v := l.SegmentTTLMs; v != nil {
		if *v < 1 {
			return out, badRequest("limits.segmentTtlMs must be ≥ 1")
		}
		out.SegmentTTL = time.Duration(*v) * time.Millisecond
	}
	if v := l.MaxPresenceBytes; v != nil {
		if *v < 1 {
			return out, badRequest("limits.maxPresenceBytes must be ≥ 1")
		}
		out.MaxPresenceBytes = *v
	}
	return out, nil
}

// now is the instance's virtual clock: it moves only by advanceClock.
func (in *instance) now() time.Time { return time.UnixMilli(in.nowMs.Load()) }

// BearerActor returns the actor of "Authorization: Bearer <actor>", and
// false when the header is missing, of another scheme or empty.
func BearerActor(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	actor := strings.TrimSpace(h[len(prefix):])
	return actor, actor != ""
}

// errNoActor is what Authenticate answers without a bearer actor; the
// server maps it to 401 sync.auth_required.
var errNoActor = errors.New("ssp2conf: no \"Authorization: Bearer <actor>\"")

func (in *instance) authenticate(r *http.Request) (server.Identity, error) {
	actor, ok := BearerActor(r)
	if !ok {
		return server.Identity{}, errNoActor
	}
	return server.Identity{Partition: in.partition, ActorID: actor}, nil
}

// errResolver is the failure setResolverFailing injects.
var errResolver = errors.New("ssp2conf: injected resolveScopes failure")

// resolveScopes answers the actor's grant (a copy): an actor never
// granted holds nothing, so its subscriptions revoke and its writes are
// refused, as upstream's host does.
func (in *instance) resolveScopes(_ context.Context, id server.Identity, _ string) (map[string][]string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.failing {
		return nil, errResolver
	}
	if in.outage {
		return nil, server.ErrAuthorizationUnavailable
	}
	g := in.grants[id.ActorID]
	out := make(map[string][]string, len(g))
	for k, v := range g {
		out[k] = append([]string(nil), v...)
	}
	return out, nil
}

// close ends the server, then closes the store and drops it in the
// background (Host.Close waits for the drop); later calls return the
// first call's error.
func (in *instance) close() error {
	in.closeOnce.Do(func() {
		in.gate.Lock() // not while a backup control runs
		defer in.gate.Unlock()
		if in.srv != nil {
			in.closeErr = in.srv.Close()
		}
		if in.store != nil {
			_ = in.store.Close() // faultConn's Close: nothing
		}
		in.host.dispose(in.owner, in.withBackupDrop(in.drop))
		in.blobs.close()
	})
	return in.closeErr
}
