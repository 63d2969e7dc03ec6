package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// bootstrapState is the resume token of SUB_END (SPEC §4.7), opaque to
// clients: rowCursor carries the engine's bootstrap token, which is bound
// to the partition, table and scopes it was issued for.
type bootstrapState struct {
	AsOfCommitSeq int64    `json:"asOfCommitSeq"`
	Tables        []string `json:"tables"`
	TableIndex    int      `json:"tableIndex"`
	RowCursor     *string  `json:"rowCursor"`
}

// parseBootstrapState returns the engine token a subscription's
// bootstrapState carries, or restart when it has one that is unusable —
// not the shape, another table — which restarts the bootstrap (§4.7: an
// unusable resume token is never a request error).
func parseBootstrapState(f *ssp2.Subscription) (token string, restart bool) {
	if f.BootstrapState == "" {
		return "", false
	}
	var st bootstrapState
	if err := json.Unmarshal([]byte(f.BootstrapState), &st); err != nil ||
		len(st.Tables) != 1 || st.Tables[0] != f.Table || st.TableIndex != 0 ||
		st.RowCursor == nil || *st.RowCursor == "" || len(*st.RowCursor) > 1024 {
		return "", true
	}
	return *st.RowCursor, false
}

// pull runs the pull half (SPEC §4): the active subscriptions through the
// engine's streaming pull, in request order, revoked ones answered here
// in their places.
func (r *round) pull(ctx context.Context) error {
	ps := &pullStream{r: r}
	req := pullRequest{PullRequest: sync.PullRequest{ClientID: r.req.Header.ClientID, ActorID: r.id.ActorID,
		WireVersion: int64(r.wv), AtMs: r.s.nowMs()}}
	for _, sp := range r.subs {
		if !sp.active {
			continue
		}
		es := sync.PullSubscription{ID: sp.frame.ID, Table: sp.t.Name, Scopes: scopeFilter(sp.eff),
			Cursor: sp.frame.Cursor, BootstrapToken: sp.token, LimitChanges: r.limits.limitCommits, LimitRows: r.limits.limitRows}
		if es.Cursor < 0 || sp.restart {
			es.Cursor, es.BootstrapToken = sync.PullBootstrap, ""
		}
		if es.Cursor == sync.PullBootstrap && es.BootstrapToken == "" && r.limits.accept&ssp2.AcceptSQLite != 0 && sp.t.imageable {
			es.SkipSnapshot = r.imageHook(sp)
		}
		req.Subscriptions = append(req.Subscriptions, es)
		req.recordScopes = append(req.recordScopes, scopeFilter(sp.frame.Scopes))
		ps.active = append(ps.active, sp)
	}
	defer ps.close()
	resp, err := r.s.eng.pull(ctx, r.id.Partition, req, ps)
	if err != nil {
		return err
	}
	if err := ps.revokedUpTo(len(r.subs)); err != nil {
		return err
	}
	r.pulled, r.pullHead = true, resp.MaxCommitSeq
	return nil
}

// imageHook is a fresh image-lane bootstrap's SkipSnapshot (PULL-14): an
// unexpired image of the pin is served as it is, so the engine reads no
// page of it (§5.3: an image is built once and reused for every client).
// It runs on a goroutine of the pull's; the round reads what it set only
// after the engine hands the subscription over.
func (r *round) imageHook(sp *subPlan) func(context.Context, int64) (bool, error) {
	return func(ctx context.Context, asOf int64) (bool, error) {
		key := r.imageKey(sp, asOf)
		rec, found, err := r.s.segments.Find(ctx, key, r.s.nowMs())
		if err == nil && !found {
			// Another round is building this image: wait for it rather
			// than read the snapshot to build it again.
			if ch := r.s.images.inFlight(key); ch != nil {
				if err := r.s.waitFlight(ctx, ch); err != nil {
					return false, err
				}
				rec, found, err = r.s.segments.Find(ctx, key, r.s.nowMs())
			}
		}
		switch {
		case err != nil:
			return false, err
		case !found:
			sp.imageLooked = true
			return false, nil
		case !morePages(rec.RowCount, r.limits.limitRows):
			// A snapshot of one page stays on the rows lane, as when the
			// page is read (pullStream.page).
			return false, nil
		}
		sp.image = &rec
		return true, nil
	}
}

// morePages reports whether a snapshot of rows rows is more than one
// page of limitRows: the engine's PullPage.More on its first page (a full
// page at sync.MaxLimit says more).
func morePages(rows int64, limitRows int) bool {
	return rows > int64(limitRows) || limitRows >= sync.MaxLimit && rows >= int64(limitRows)
}

// imageKey is the key of sp's SQLite image pinned at asOf.
func (r *round) imageKey(sp *subPlan, asOf int64) SegmentKey {
	return SegmentKey{Partition: r.id.Partition, LogEpoch: r.entry.Epoch, Table: sp.t.Name,
		SchemaVersion: r.s.version, MediaType: ssp2.MediaSQLite, ScopeDigest: sp.digest, AsOfCommitSeq: asOf}
}

// pullStream is the pull half's sink: it writes each subscription's
// section as the engine streams it.
type pullStream struct {
	r      *round
	active []*subPlan // the subscriptions sent to the engine, in order
	k      int        // the next of active
	next   int        // the next request subscription to write
	cur    subState
	seg    bytes.Buffer
	row    []byte
	image  *imageBuilder
	// imageKey is the key image is built for, claimed in
	// Server.images until close.
	imageKey     SegmentKey
	imageClaimed bool
}

// subState is the subscription being streamed.
type subState struct {
	plan      *subPlan
	res       sync.PullResult
	pages     int
	truncated bool
	last      int64
	imageDone bool
}

// close drops an image being built (its file, and this round's claim
// of its key).
func (ps *pullStream) close() {
	if ps.image != nil {
		ps.image.close()
		ps.image = nil
		if ps.imageClaimed {
			ps.r.s.images.release(ps.imageKey)
		}
	}
}

// revokedUpTo writes the sections of the revoked subscriptions before
// request index end (§3.3: no data, empty effective scopes, the request
// cursor echoed).
func (ps *pullStream) revokedUpTo(end int) error {
	for ; ps.next < end; ps.next++ {
		sp := ps.r.subs[ps.next]
		if sp.active {
			continue
		}
		if err := ps.r.begin(); err != nil {
			return err
		}
		if err := ps.r.rw.SubStart(&ssp2.SubStart{ID: sp.frame.ID, Status: ssp2.SubRevoked,
			ReasonCode: string(ssp2.CodeScopeRevoked), EffectiveScopes: map[string][]string{}}); err != nil {
			return err
		}
		if err := ps.r.rw.SubEnd(&ssp2.SubEnd{NextCursor: sp.frame.Cursor}); err != nil {
			return err
		}
	}
	return nil
}

func (ps *pullStream) start(ctx context.Context, res sync.PullResult) error {
	sp := ps.active[ps.k]
	ps.k++
	if err := ps.revokedUpTo(sp.index); err != nil {
		return err
	}
	ps.next = sp.index + 1
	ps.cur = subState{plan: sp, res: res}
	if err := ps.r.begin(); err != nil {
		return err
	}
	f := &ssp2.SubStart{ID: sp.frame.ID, Status: ssp2.SubActive, EffectiveScopes: sp.eff, Bootstrap: res.Bootstrap}
	if res.Status != sync.PullActive {
		// §4.6: a cursor below the horizon is reset; the client
		// bootstraps again with cursor -1.
		f = &ssp2.SubStart{ID: sp.frame.ID, Status: ssp2.SubReset, ReasonCode: string(ssp2.CodeCursorExpired),
			EffectiveScopes: map[string][]string{}}
	}
	if err := ps.r.rw.SubStart(f); err != nil {
		return err
	}
	if res.Skipped {
		// The image the hook found stands for the snapshot (§5.3).
		if sp.image == nil {
			return errors.New("ssp2 server: a skipped snapshot without its image")
		}
		ps.cur.imageDone = true
		return ps.r.rw.SegmentRef(ps.ref(*sp.image))
	}
	return nil
}

// commits writes an incremental window (§4.5), trimmed so a response
// never carries more than limitCommits changes except one commit alone:
// commits past the limit are left for the next pull, whose cursor is the
// last commit delivered.
func (ps *pullStream) commits(ctx context.Context, cs []sync.Commit) error {
	st := &ps.cur
	t := st.plan.t
	limit := ps.r.limits.limitCommits
	delivered := 0
	for i, c := range cs {
		n := len(c.Changes)
		if delivered > 0 && delivered+n > limit {
			st.truncated = true
			break
		}
		f, err := ps.commitFrame(t, c)
		if err != nil {
			return err
		}
		if err := ps.r.rw.Commit(f); err != nil {
			return err
		}
		delivered += n
		st.last = c.Seq
		if delivered >= limit && i < len(cs)-1 {
			st.truncated = true
			break
		}
	}
	return nil
}

// commitFrame encodes one commit of table t's window.
func (ps *pullStream) commitFrame(t *table, c sync.Commit) (*ssp2.Commit, error) {
	f := &ssp2.Commit{CommitSeq: c.Seq, CreatedAtMs: c.CreatedAtMs, ActorID: c.ActorID, Tables: []string{t.Name},
		Changes: make([]ssp2.CommitChange, len(c.Changes))}
	ps.row = ps.row[:0]
	offs := make([]int, 0, len(c.Changes)+1)
	for i, ch := range c.Changes {
		cc := ssp2.CommitChange{RowID: ch.RowID, Op: opOf(ch.Op), Scopes: ch.Scopes}
		offs = append(offs, len(ps.row))
		if ch.Op == sync.OpUpsert {
			cc.RowVersion = ch.RowVersion
			var err error
			if ps.row, err = t.Codec.Append(ps.row, ch.Values); err != nil {
				return nil, err
			}
		}
		f.Changes[i] = cc
	}
	offs = append(offs, len(ps.row))
	for i := range f.Changes {
		if f.Changes[i].Op == ssp2.OpUpsert {
			f.Changes[i].Row = ps.row[offs[i]:offs[i+1]:offs[i+1]]
		}
	}
	return f, nil
}

func opOf(o sync.Op) ssp2.Op {
	if o == sync.OpDelete {
		return ssp2.OpDelete
	}
	return ssp2.OpUpsert
}

// page takes one bootstrap page: the SQLite image lane at a table's start
// when the client accepts images and the snapshot is more than one page
// (§5.3), else one rows segment per page, inline or stored (§5.2, §5.7).
func (ps *pullStream) page(ctx context.Context, p sync.PullPage) (bool, error) {
	sts := &ps.r.s.stats
	raise(&sts.peakPages, sts.livePages.Add(1))
	defer sts.livePages.Add(-1)
	st := &ps.cur
	if ps.image != nil {
		return ps.imagePage(ctx, p)
	}
	if st.pages == 0 && p.AfterRowID == "" && p.More && ps.r.limits.accept&ssp2.AcceptSQLite != 0 && st.plan.t.imageable {
		return ps.imageStart(ctx, p)
	}
	if err := ps.rowsSegment(ctx, p); err != nil {
		return false, err
	}
	st.pages++
	return st.pages < ps.r.limits.maxPages, nil
}

// rowsSegment writes one page as a rows segment: inline when the client
// accepts inline segments and it is small enough (or the client accepts
// no other), else stored and referenced.
func (ps *pullStream) rowsSegment(ctx context.Context, p sync.PullPage) error {
	st := &ps.cur
	t := st.plan.t
	ps.seg.Reset()
	sw, err := ssp2.NewSegmentWriter(&ps.seg, ssp2.SegmentHeader{Table: t.Name, SchemaVersion: ps.r.s.version, Columns: t.Columns})
	if err != nil {
		return err
	}
	for _, row := range p.Rows {
		if err := sw.WriteRow(row.ServerVersion, row.Values); err != nil {
			return err
		}
	}
	info, err := sw.Close()
	if err != nil {
		return err
	}
	raise(&ps.r.s.stats.peakSegmentBytes, int64(ps.seg.Cap()))
	accept := ps.r.limits.accept
	inline := accept&ssp2.AcceptInlineRows != 0 &&
		(ps.seg.Len() <= ps.r.s.lim.InlineSegmentMaxBytes || accept&ssp2.AcceptExternalRows == 0)
	if inline {
		return ps.r.rw.SegmentInline(ps.seg.Bytes())
	}
	rec := ps.record(ssp2.MediaRows, info)
	rec.RowCursor = p.AfterRowID
	if p.More && len(p.Rows) > 0 {
		rec.NextRowCursor = p.Rows[len(p.Rows)-1].ID
	}
	if err := ps.r.s.segments.Put(ctx, rec, bytes.NewReader(ps.seg.Bytes())); err != nil {
		return err
	}
	return ps.r.rw.SegmentRef(ps.ref(rec))
}

// record returns the stored-segment record of a segment of the current
// subscription.
func (ps *pullStream) record(m ssp2.MediaType, info ssp2.SegmentInfo) SegmentRecord {
	st := &ps.cur
	now := ps.r.s.nowMs()
	return SegmentRecord{ID: info.ID, MediaType: m, Partition: ps.r.id.Partition, LogEpoch: ps.r.entry.Epoch,
		Table: st.plan.t.Name, SchemaVersion: ps.r.s.version, ScopeDigest: st.plan.digest,
		AsOfCommitSeq: st.res.AsOfCommitSeq, RowCount: info.RowCount, ByteLength: info.ByteLength,
		CreatedAtMs: now, ExpiresAtMs: now + ps.r.s.lim.SegmentTTL.Milliseconds()}
}

func segmentRef(rec SegmentRecord) *ssp2.SegmentRef {
	f := &ssp2.SegmentRef{SegmentID: rec.ID, MediaType: rec.MediaType, Table: rec.Table, ByteLength: rec.ByteLength,
		RowCount: rec.RowCount, AsOfCommitSeq: rec.AsOfCommitSeq, ScopeDigest: rec.ScopeDigest}
	if rec.RowCursor != "" {
		f.RowCursor = ssp2.Some(rec.RowCursor)
	}
	if rec.NextRowCursor != "" {
		f.NextRowCursor = ssp2.Some(rec.NextRowCursor)
	}
	return f
}

// imageStart begins the SQLite image lane: an unexpired image for the
// same (partition, epoch, table, schema version, scope digest, pin) is
// served as it is (§5.3: never rebuilt per client); otherwise the image is
// built from this and every following page.
func (ps *pullStream) imageStart(ctx context.Context, p sync.PullPage) (bool, error) {
	st := &ps.cur
	key := ps.r.imageKey(st.plan, st.res.AsOfCommitSeq)
	find := func() (bool, error) {
		rec, found, err := ps.r.s.segments.Find(ctx, key, ps.r.s.nowMs())
		if err != nil || !found {
			return false, err
		}
		st.imageDone = true
		return true, ps.r.rw.SegmentRef(ps.ref(rec))
	}
	if !st.plan.imageLooked { // the hook looked it up at this pin already
		if served, err := find(); served || err != nil {
			return false, err
		}
	}
	claimed, ch := ps.r.s.images.claim(key)
	if !claimed {
		// Built by another round now: wait once and look again; when that
		// build stored nothing, build this round's own, unclaimed.
		if err := ps.r.s.waitFlight(ctx, ch); err != nil {
			return false, err
		}
		if served, err := find(); served || err != nil {
			return false, err
		}
	}
	b, err := newImageBuilder(st.plan.t, ps.r.s.cfg.TempDir, &ps.r.s.stats)
	if err != nil {
		if claimed {
			ps.r.s.images.release(key)
		}
		return false, err
	}
	ps.image, ps.imageKey, ps.imageClaimed = b, key, claimed
	ps.r.s.stats.imagesBuilt.Add(1)
	if ps.r.s.onImageBuild != nil {
		ps.r.s.onImageBuild()
	}
	return ps.imagePage(ctx, p)
}

// imagePage adds a page to the image being built; after the last page it
// stores the image and writes its SEGMENT_REF.
func (ps *pullStream) imagePage(ctx context.Context, p sync.PullPage) (bool, error) {
	if err := ps.image.add(p.Rows); err != nil {
		return false, err
	}
	if p.More {
		return true, nil
	}
	return false, ps.finishImage(ctx)
}

// finishImage stores the image being built and writes its SEGMENT_REF:
// after the page that says no more, or at the bootstrap's end when the
// last page was full (a page of sync.MaxLimit rows says more, and the
// engine ends the snapshot without another page).
func (ps *pullStream) finishImage(ctx context.Context) error {
	st := &ps.cur
	b := ps.image
	defer ps.close()
	f, info, err := b.finish(ps.r.s.version, st.res.AsOfCommitSeq, st.plan.digest)
	if err != nil {
		return err
	}
	defer f.Close()
	rec := ps.record(ssp2.MediaSQLite, info)
	if err := ps.r.s.segments.Put(ctx, rec, f); err != nil {
		return err
	}
	st.imageDone = true
	return ps.r.rw.SegmentRef(ps.ref(rec))
}

func (ps *pullStream) end(ctx context.Context, res sync.PullResult) error {
	st := &ps.cur
	sp := st.plan
	if ps.image != nil {
		// The snapshot ended after a full last page: the image holds
		// every row. Ended with a token instead, its rows would be in
		// no frame: refuse rather than answer a bootstrap without them.
		if res.Status != sync.PullActive || !res.Bootstrap || res.BootstrapToken != "" {
			ps.close()
			return errors.New("ssp2 server: a SQLite image build ended before its snapshot's last page")
		}
		if err := ps.finishImage(ctx); err != nil {
			return err
		}
	}
	f := &ssp2.SubEnd{NextCursor: res.NextCursor}
	switch {
	case res.Status != sync.PullActive:
		f.NextCursor = sp.frame.Cursor
	case res.Bootstrap:
		f.NextCursor = res.AsOfCommitSeq
		if res.BootstrapToken != "" && !st.imageDone {
			tok := res.BootstrapToken
			b, err := json.Marshal(bootstrapState{AsOfCommitSeq: res.AsOfCommitSeq, Tables: []string{sp.t.Name}, RowCursor: &tok})
			if err != nil {
				return err
			}
			f.BootstrapState = sync.JSON(b)
		}
	case st.truncated:
		f.NextCursor = st.last
	}
	sp.held = f.NextCursor
	if f.BootstrapState != "" {
		sp.held = -1
	}
	return ps.r.rw.SubEnd(f)
}
