package mysql

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Commit outcomes (TX-10). go-sql-driver sends COMMIT without a context,
// so Tx.Commit runs it on a goroutine of its own and stops waiting when
// its context ends. When the answer is lost that way, or because the
// connection broke, settleCommit decides what happened from the
// partition's row, which every Tx locks and updates:
//
// Begin's reservePartition appends an entry to the row's outcomes ring —
// the Tx's random token, max_seq before the Tx, and the session's
// CONNECTION_ID() — in the Tx itself, so the entry is committed exactly
// when the Tx is. The ring keeps the last outcomeRingEntries entries,
// oldest first. Settling, on one connection of a small pool apart from
// the store's:
//
//  1. Read the row's newest version, uncommitted included (READ
//     UNCOMMITTED), then its latest committed version. Holding the token
//     in the newest but not the committed version means the Tx is still
//     running on this very server (uncommitted rows are never visible
//     elsewhere, e.g. on another Galera node): KILL its session (the
//     entry names it) and wait until the session has left the process
//     list — by then its transaction has been rolled back (or committed)
//     for good, and a COMMIT still in flight to it can no longer arrive —
//     then read the committed version again. The Tx's connection is not
//     handed to another Tx before settling ends, so the session killed is
//     only ever the Tx's own.
//  2. The token in the committed version means the Tx landed. Otherwise
//     it did not land, provided the ring still covers it: the ring has
//     never been full, or its oldest entry began on a max_seq below the
//     Tx's (every Tx that commits after it begins on a max_seq at least
//     the Tx's, so everything after that entry is in the ring). A ring
//     that moved on (outcomeRingEntries later Txs committed during the
//     look-up) leaves the outcome unknown.
const (
	outcomeRingEntries = 16
	outcomeEntryBytes  = 24 // token, max_seq before the Tx, CONNECTION_ID()
	outcomeRingBytes   = "384"
	outcomeTokenBytes  = 8
)

// outcomeLookupTimeout bounds how long Commit and CommitRejected spend
// settling an outcome beyond the caller's context: a connection, the two
// reads, and the KILL with the wait for the session to go.
const outcomeLookupTimeout = 2 * time.Second

// erNoSuchThread: KILL of a session that is already gone.
const erNoSuchThread = 1094

// erDupFieldName: the column exists (another process added it first).
const erDupFieldName = 1060

// upgradeOutcomes adds the outcomes column to a store created before it.
func (c *Conn) upgradeOutcomes(ctx context.Context) error {
	var n int
	if err := c.db.QueryRowContext(ctx, selectOutcomesColumn).Scan(&n); err != nil {
		return c.mapErr(ctx, err, "mysql: initialize the store")
	}
	if n > 0 {
		return nil
	}
	if _, err := c.db.ExecContext(ctx, addOutcomesColumn); err != nil && errNumber(err) != erDupFieldName {
		return c.mapErr(ctx, err, "mysql: initialize the store")
	}
	return nil
}

// newOutcomeToken returns a fresh Tx token.
func newOutcomeToken() []byte {
	b := make([]byte, outcomeTokenBytes)
	_, _ = rand.Read(b)
	return b
}

// outcomeEntry is one entry of a partition's outcomes ring.
type outcomeEntry struct {
	token   []byte
	baseSeq int64  // max_seq when the Tx began
	session uint64 // its CONNECTION_ID()
}

func parseOutcomes(ring []byte) []outcomeEntry {
	var out []outcomeEntry
	for len(ring) >= outcomeEntryBytes {
		e := ring[:outcomeEntryBytes]
		out = append(out, outcomeEntry{token: e[:8], baseSeq: int64(binary.BigEndian.Uint64(e[8:16])),
			session: binary.BigEndian.Uint64(e[16:24])})
		ring = ring[outcomeEntryBytes:]
	}
	return out
}

func findOutcome(ring []outcomeEntry, token []byte) (outcomeEntry, bool) {
	for _, e := range ring {
		if bytes.Equal(e.token, token) {
			return e, true
		}
	}
	return outcomeEntry{}, false
}

// ringCovers reports whether a ring without the token of a Tx that began
// on baseSeq proves that the Tx did not commit.
func ringCovers(ring []outcomeEntry, baseSeq int64) bool {
	return len(ring) < outcomeRingEntries || ring[0].baseSeq < baseSeq
}

// settleCommit decides the outcome of the Tx (partition, token, baseSeq)
// whose COMMIT may have reached the server but whose answer was lost
// (cause), on a context detached from ctx and bounded by
// outcomeLookupTimeout (TX-10). nil: it committed. CodeUnavailable: it
// did not and never will (nothing written). CodeCommitOutcomeUnknown: the
// look-up failed or the ring moved on.
func (c *Conn) settleCommit(ctx context.Context, partition string, token []byte, baseSeq int64, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeLookupTimeout)
	defer cancel()
	landed, err := c.lookUpCommit(ctx, partition, token, baseSeq)
	switch {
	case err == nil && landed:
		return nil
	case err == nil:
		return driver.Wrap(driver.CodeUnavailable, cause,
			"mysql: commit: the engine's answer was lost; the transaction was rolled back and nothing was written (TX-10)")
	}
	return &driver.Error{Code: driver.CodeCommitOutcomeUnknown, OpIndex: -1, Err: errors.Join(cause, err),
		Message: "mysql: commit: the engine's answer was lost and the outcome could not be learnt within " +
			outcomeLookupTimeout.String() + "; re-read what the transaction wrote (its push result) before anything else", Rule: "TX-10"}
}

// errRingMoved: the Tx's entry is not in the ring, which no longer
// covers it.
var errRingMoved = errors.New("more transactions committed on the partition than its outcomes ring keeps")

// lookUpCommit is settleCommit's look-up (see the comment at the top).
func (c *Conn) lookUpCommit(ctx context.Context, partition string, token []byte, baseSeq int64) (bool, error) {
	db, err := c.outcomeDB()
	if err != nil {
		return false, err
	}
	sc, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer sc.Close()
	newest, err := readOutcomes(ctx, sc, partition, true)
	if err != nil {
		return false, err
	}
	committed, err := readOutcomes(ctx, sc, partition, false)
	if err != nil {
		return false, err
	}
	_, isCommitted := findOutcome(committed, token)
	if e, running := findOutcome(newest, token); running && !isCommitted {
		if err := endSession(ctx, sc, e.session); err != nil {
			return false, err
		}
		if committed, err = readOutcomes(ctx, sc, partition, false); err != nil {
			return false, err
		}
		_, isCommitted = findOutcome(committed, token)
	}
	if isCommitted {
		return true, nil
	}
	if ringCovers(committed, baseSeq) {
		return false, nil
	}
	return false, errRingMoved
}

// readOutcomes reads the partition's ring: its latest committed version,
// or with dirty its newest one, uncommitted included.
func readOutcomes(ctx context.Context, sc *sql.Conn, partition string, dirty bool) ([]outcomeEntry, error) {
	var ring []byte
	if !dirty {
		err := sc.QueryRowContext(ctx, selectOutcomes, partition).Scan(&ring)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		return parseOutcomes(ring), err
	}
	tx, err := sc.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadUncommitted, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	err = tx.QueryRowContext(ctx, selectOutcomes, partition).Scan(&ring)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return parseOutcomes(ring), err
}

// endSession kills session id and waits until the server has let it go:
// a session leaves the process list only after its transaction has been
// rolled back (or committed) for good.
func endSession(ctx context.Context, sc *sql.Conn, id uint64) error {
	if _, err := sc.ExecContext(ctx, killSession, id); err != nil && errNumber(err) != erNoSuchThread {
		return err
	}
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		var n int
		if err := sc.QueryRowContext(ctx, selectSessionAlive, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("session " + strconv.FormatUint(id, 10) + " did not end: " + ctx.Err().Error())
		case <-time.After(wait):
		}
	}
}

// outcomeDB returns the pool that settles outcomes: the store's
// configuration, but apart from its pool, which may be exhausted by
// callers waiting for the partition the unsettled Tx holds.
func (c *Conn) outcomeDB() (*sql.DB, error) {
	c.outcomeOnce.Do(func() {
		if c.check() != nil {
			return
		}
		c.outcomes = sql.OpenDB(c.connector)
		c.outcomes.SetMaxOpenConns(2)
		c.outcomes.SetMaxIdleConns(1)
		c.outcomes.SetConnMaxIdleTime(time.Minute)
	})
	if c.outcomes == nil || c.check() != nil {
		return nil, errClosed()
	}
	return c.outcomes, nil
}
