// Package commitwindow is the engine-free half of ReadCommitWindow every
// driver shares: it groups the candidate changes a driver reads from its
// change-scope index, in (seq, idx) order, into commits, keeps the
// changes whose scopes match the filter's other keys (WIN-3), appends a
// commit whole with only its matching changes in their original order
// (WIN-2), and applies the stop rule: reading stops after the commit that
// brings the matched changes to ≥ LimitChanges (WIN-4). Deletes carry no
// Values and RowVersion 0 (WIN-6). The reads and the cursor checks stay
// in the drivers.
package commitwindow

import (
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// Grouper groups one window read's candidates, across one or more reads
// of consecutive (seq, idx) ranges.
type Grouper struct {
	engine  string // prefixes the decode error: "sqlite"
	q       driver.WindowQuery
	match   storelayout.Matcher
	out     []driver.Commit
	cur     *driver.Commit
	matched int
	done    bool
}

// New returns the Grouper of q, whose candidates come from the index of
// the filter key key (the other keys are matched here). engine prefixes
// its errors ("sqlite").
func New(engine string, q driver.WindowQuery, key string) *Grouper {
	return &Grouper{engine: engine, q: q, match: storelayout.NewMatcher(q.Filter, key)}
}

// Next takes the next candidate, of commit seq. When seq starts a commit
// it ends the previous one and reports start: the caller then calls
// Start with seq's metadata before Change. stop: the previous commit
// brought the matched changes to LimitChanges (WIN-4); the read is done
// and the caller reads no further candidate.
func (g *Grouper) Next(seq int64) (start, stop bool) {
	if g.cur != nil && g.cur.Seq == seq {
		return false, false
	}
	g.flush()
	if g.matched >= g.q.LimitChanges {
		g.done = true
		return false, true
	}
	return true, false
}

// Start begins commit seq with the metadata of meta (its Seq is set to
// seq).
func (g *Grouper) Start(seq int64, meta driver.Commit) {
	meta.Seq = seq
	g.cur = &meta
}

// Change adds a candidate change of the commit begun last, if its scopes
// (stored JSON) match the filter's other keys (WIN-3). An upsert carries
// version and, when hasValues, the stored values JSON decoded; a delete
// neither (WIN-6). Errors: malformed scopes (storelayout.DecodeScopes'),
// malformed values (CodeInternal).
func (g *Grouper) Change(rowID, op, scopes string, values []byte, hasValues bool, version int64) error {
	sc, err := storelayout.DecodeScopes(scopes)
	if err != nil {
		return err
	}
	if !g.match.Match(sc) {
		return nil
	}
	ch := driver.Change{Table: g.q.Table, RowID: rowID, Op: driver.Op(op), Scopes: sc}
	if ch.Op == driver.OpUpsert {
		ch.RowVersion = version
		if hasValues {
			if ch.Values, err = driver.DecodeValues(values); err != nil {
				return driver.Wrap(driver.CodeInternal, err, "%s: decode stored change values", g.engine)
			}
		}
	}
	g.cur.Changes = append(g.cur.Changes, ch)
	g.matched++
	return nil
}

// End ends a read whose candidates end with a whole commit: the commit
// being grouped is appended (if it matched), and the read is done when
// the matched changes reached LimitChanges (WIN-4).
func (g *Grouper) End() {
	g.flush()
	if g.matched >= g.q.LimitChanges {
		g.done = true
	}
}

// Flush appends the commit being grouped, if it holds a matching change
// (WIN-2), without applying the stop rule: a read that stops between two
// candidates of one commit calls it at its very end only.
func (g *Grouper) Flush() { g.flush() }

func (g *Grouper) flush() {
	if g.cur != nil && len(g.cur.Changes) > 0 {
		g.out = append(g.out, *g.cur)
	}
	g.cur = nil
}

// Done reports whether the stop rule was met (WIN-4).
func (g *Grouper) Done() bool { return g.done }

// Matched is the number of matching changes grouped so far.
func (g *Grouper) Matched() int { return g.matched }

// Commits returns the commits grouped, oldest first (WIN-1).
func (g *Grouper) Commits() []driver.Commit { return g.out }

// Key makes ReadCommitWindow's first checks, in the order every driver
// makes them: q.Table must be in the ensured schema (table is the
// driver's lookup; its error, CodeUnknownTable SCH-8), and q.Filter must
// have a key (else CodeScanRequiresScope, V-6). It returns the filter's
// driving key, and empty when some key's value list is empty (the window
// matches nothing), as storelayout.PickKey chooses them.
func Key[T any](q driver.WindowQuery, table func(name string) (T, error)) (key string, empty bool, err error) {
	if _, err := table(q.Table); err != nil {
		return "", false, err
	}
	key, empty, ok := storelayout.PickKey(q.Filter)
	if !ok {
		return "", false, driver.Errorf(driver.CodeScanRequiresScope, "window read requires a scope filter (V-6)")
	}
	return key, empty, nil
}

// RaiseHorizon is SetHorizonSeq's decision (HZ-1) from the partition's
// MaxCommitSeq and current horizon: seq > maxSeq → CodeInvalidHorizon; a
// seq at or below the horizon is a no-op (raise false); else the horizon
// is raised to seq.
func RaiseHorizon(seq, maxSeq, horizon int64) (raise bool, err error) {
	if seq > maxSeq {
		return false, driver.Errorf(driver.CodeInvalidHorizon, "horizon %d is past the partition's max commit seq %d (HZ-1)", seq, maxSeq)
	}
	return seq > horizon, nil
}
