package server

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// A round is one sync request and its response (SPEC §1.5, §1.6), the same
// on both bindings (POST /sync and a socket round, §8.7): prepare decodes
// and validates the request (everything that fails it before a byte of the
// response), stream runs the push half then the pull half and writes the
// response frame by frame.
type round struct {
	s     *Server
	id    Identity
	req   *ssp2.Request
	wv    uint16
	entry sync.PartitionEntry
	g     grant
	// lease is the §7.3 lease this round issued or refreshed, sent as
	// LEASE right after RESP_HEADER; nil when none was (§7.3.3).
	lease *ssp2.Lease
	// floor: the schema-floor response; reset: the epoch reset response
	// (§1.6, §2.1). Either ends the response after RESP_HEADER.
	floor, reset bool
	subs         []*subPlan
	limits       pullLimits

	rw      *ssp2.ResponseWriter
	hdr     ssp2.RespHeader
	started bool

	// Set by a completed pull, for the socket binding's registration
	// replace (§8.7): the head the pull served through.
	pulled   bool
	pullHead int64
	// applied, when set (a socket round), hears of each commit the round
	// applied, as it lands.
	applied func(sync.Commit)
}

// subPlan is one requested subscription: its table, whether it is active
// (§3.2) and its effective scopes, and the engine token its bootstrapState
// carries.
type subPlan struct {
	index  int
	frame  *ssp2.Subscription
	t      *table
	active bool
	eff    scopeMap
	digest string
	// token is the engine's bootstrap token from a usable bootstrapState;
	// restart marks a bootstrapState that was unusable (a fresh bootstrap,
	// §4.7).
	token   string
	restart bool
	// Set by the pull's SkipSnapshot hook (a fresh bootstrap on the image
	// lane, §5.3): the stored image of the pin was looked up, and found.
	imageLooked bool
	image       *SegmentRecord
	// held is the seq through which the client holds the subscription
	// after the round's SUB_END (its nextCursor; −1 while a bootstrap
	// continues): the realtime registration the round installs covers
	// the log up to it (§8.7).
	held int64
}

// pullLimits are PULL_HEADER's limits, clamped (§4.2).
type pullLimits struct {
	limitCommits, limitRows, maxPages int
	accept                            uint8
}

func clamp(v int32, lo, hi, def int) int {
	if v == 0 {
		return def
	}
	return max(lo, min(hi, int(v)))
}

// clampPull applies §4.2's silent clamps, then the engine's bounds: a
// bootstrap page holds at most sync.MaxLimit (10,000) rows where SSP2
// allows 50,000.
func clampPull(h *ssp2.PullHeader) pullLimits {
	return pullLimits{
		limitCommits: clamp(h.LimitCommits, 1, 1000, 1000),
		limitRows:    min(clamp(h.LimitSnapshotRows, 1, 50000, 1000), sync.MaxLimit),
		maxPages:     clamp(h.MaxSnapshotPages, 1, 50, 4),
		accept:       h.Accept,
	}
}

// prepare decodes body and validates the request: decode errors (§1.7),
// epoch and wire version (§2.1), the schema floor (§1.6), the client id
// (§1.5), the operation cap (§6.1), accept bits (§4.2), subscriptions
// (§3.2, §4.1, §4.3), and resolves scopes once (§3.2, §3.4). A returned
// *ssp2.Error fails the request before any response byte; any other error
// is a storage failure. socketClient, when non-empty, is the socket's
// client id, which the request must carry (§8.7).
func (s *Server) prepare(ctx context.Context, id Identity, body []byte, socketClient string) (*round, error) {
	req, err := ssp2.DecodeRequest(body)
	if err != nil {
		return nil, err // an *ssp2.Error
	}
	r := &round{s: s, id: id, req: req, wv: req.WireVersion}
	h := req.Header
	if socketClient != "" && h.ClientID != socketClient {
		return nil, perr(ssp2.CodeInvalidClientID, "a socket round's clientId must be the connection's (§8.7)")
	}
	if r.entry, err = s.touch(ctx, id.Partition); err != nil {
		return nil, err
	}
	if r.wv == 1 && r.entry.EpochRequired {
		return nil, perr(ssp2.CodeClientWireUnsupported, "this partition's log epoch rotated: it serves only clients that validate log epochs (wire version 2, §2.1)")
	}
	if r.wv >= 2 && h.LogEpoch == "" && len(req.Commits) > 0 {
		return nil, perr(ssp2.CodeInvalidRequest, "an epoch acquisition request (no logEpoch) must not carry push commits (§2.1)")
	}
	r.reset = r.wv >= 2 && h.LogEpoch != r.entry.Epoch
	r.hdr = ssp2.RespHeader{LatestSchemaVersion: ssp2.Some(s.version)}
	if r.wv >= 2 {
		r.hdr.LogEpoch, r.hdr.ResetRequired = r.entry.Epoch, r.reset
	}
	if h.SchemaVersion != s.version {
		r.floor = true
		r.hdr.RequiredSchemaVersion = ssp2.Some(s.version)
		return r, nil
	}
	if r.reset {
		return r, nil
	}
	if strings.HasPrefix(h.ClientID, sync.RemoteCommandPrefix) {
		return nil, perr(ssp2.CodeInvalidClientID, "the clientId uses the reserved server-command namespace (§1.5)")
	}
	if n := req.Operations(); n > s.lim.MaxOperationsPerRequest {
		return nil, perr(ssp2.CodeTooManyOperations, "the request carries %d operations; this server takes at most %d per request (§6.1)", n, s.lim.MaxOperationsPerRequest)
	}
	if req.Pull != nil {
		if req.Pull.Accept&(ssp2.AcceptInlineRows|ssp2.AcceptExternalRows) == 0 {
			return nil, perr(ssp2.CodeInvalidRequest, "accept must include rows segments (bit 0 or 1, §4.2)")
		}
		if len(req.Subscriptions) > sync.MaxPullSubscriptions {
			return nil, perr(ssp2.CodeInvalidRequest, "the request carries %d subscriptions; this server takes at most %d", len(req.Subscriptions), sync.MaxPullSubscriptions)
		}
		r.limits = clampPull(req.Pull)
	}
	seen := make(map[string]bool, len(req.Subscriptions))
	for i, f := range req.Subscriptions {
		if seen[f.ID] {
			return nil, perr(ssp2.CodeInvalidSubscription, "subscription #%d repeats an id (§4.1)", i)
		}
		seen[f.ID] = true
		t, ok := s.tables[f.Table]
		if !ok {
			return nil, perr(ssp2.CodeUnknownTable, "subscription #%d names a table this server does not serve (§4.3)", i)
		}
		if pe := checkRequested(t, f.Scopes); pe != nil {
			return nil, pe
		}
		r.subs = append(r.subs, &subPlan{index: i, frame: f, t: t})
	}
	if len(req.Commits) > 0 || len(r.subs) > 0 {
		if r.g, r.lease, err = s.resolveRound(ctx, id, h.ClientID); err != nil {
			return nil, err
		}
	}
	for _, sp := range r.subs {
		sp.eff, sp.active = effective(sp.frame.Scopes, r.g)
		if sp.active {
			sp.digest = ssp2.ScopeDigest(sp.eff)
			sp.token, sp.restart = parseBootstrapState(sp.frame)
		}
	}
	return r, nil
}

// begin writes RESP_HEADER before the response's first other frame. Until
// then nothing is written, so a failure is still a request-level error.
func (r *round) begin() error {
	if r.started {
		return nil
	}
	r.started = true
	if err := r.rw.Header(&r.hdr); err != nil || r.lease == nil {
		return err
	}
	return r.rw.Lease(r.lease)
}

// stream writes the response to w: one Write per frame. It returns an
// *ssp2.Error when the request fails before the first frame (answer it as
// a request-level error); after that, a protocol failure is written
// in-band (ERROR, END) and stream returns nil; any other error is a
// storage failure, the response unfinished (abort it: a truncated
// response is §1.4 rule 5's signal).
func (r *round) stream(ctx context.Context, w io.Writer) error {
	r.rw = ssp2.NewResponseWriter(w, r.wv)
	if r.floor || r.reset {
		if err := r.begin(); err != nil {
			return err
		}
		return r.rw.End()
	}
	for i, c := range r.req.Commits {
		if err := r.pushCommit(ctx, i, c); err != nil {
			return r.fail(err)
		}
	}
	if r.req.Pull != nil {
		if err := r.pull(ctx); err != nil {
			return r.fail(err)
		}
	}
	if err := r.begin(); err != nil {
		return err
	}
	return r.rw.End()
}

// fail ends the response after err: before the first frame, a protocol
// error is returned for a request-level answer; after it, written in-band.
// A storage failure is returned as it is.
func (r *round) fail(err error) error {
	pe := engineErr(err)
	if pe == nil {
		return err
	}
	if !r.started {
		return pe
	}
	body := pe.Body()
	if werr := r.rw.Error(body.Frame()); werr != nil {
		return errors.Join(err, werr)
	}
	return r.rw.End()
}
