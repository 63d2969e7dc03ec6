// Package adminview is the engine-free part of the admin capability
// (ADM-1) every driver shares: ListCommitMeta's bound and ScopeActivity's
// choice of index key and its count, and the reading of the listings'
// rows (and of one client record, CR-1) for the drivers that get rows
// (database/sql and pgx). The SQL stays in each driver.
package adminview

import (
	"fmt"
	"math"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// CommitsBefore returns the exclusive seq bound ListCommitMeta's statement
// takes for beforeSeq (ADM-1): beforeSeq itself, or math.MaxInt64 for 0
// (from the newest). beforeSeq < 0 → CodeInvalidArgument.
func CommitsBefore(beforeSeq int64) (int64, error) {
	if beforeSeq < 0 {
		return 0, driver.Errorf(driver.CodeInvalidArgument, "beforeSeq must be ≥ 0 (ADM-1)")
	}
	if beforeSeq == 0 {
		return math.MaxInt64, nil
	}
	return beforeSeq, nil
}

// ActivityKey checks ScopeActivity's table (lookup is the driver's table
// lookup; its error, CodeUnknownTable SCH-8, comes first) and picks the
// scope variable whose change-scope index drives it over afterSeq < seq ≤
// throughSeq (storelayout.PickKey). done: the answer is zero without a
// read (a key with no values, or an empty seq range). A filter with no
// keys → CodeScanRequiresScope (V-6).
func ActivityKey[T any](lookup func(table string) (T, error), table string, filter driver.ScopeFilter, afterSeq, throughSeq int64) (key string, done bool, err error) {
	if _, err := lookup(table); err != nil {
		return "", false, err
	}
	key, empty, ok := storelayout.PickKey(filter)
	if !ok {
		return "", false, driver.Errorf(driver.CodeScanRequiresScope, "scope activity requires a scope filter (V-6)")
	}
	return key, empty || throughSeq <= afterSeq, nil
}

// Activity counts ScopeActivity's answer from the candidate changes the
// index of key yields: the changes whose scopes also match the filter's
// other keys, and the distinct commits holding them (ADM-1, WIN-3).
type Activity struct {
	match   storelayout.Matcher
	commits map[int64]bool
	changes int64
}

// NewActivity returns an empty count for filter, whose driving key is key.
func NewActivity(filter driver.ScopeFilter, key string) *Activity {
	return &Activity{match: storelayout.NewMatcher(filter, key), commits: map[int64]bool{}}
}

// Add counts the candidate change of commit seq whose stored scopes (a
// JSON object) are scopes, if they match; scopes is read only when the
// filter has other keys. A malformed scopes text fails (storelayout.DecodeScopes'
// error).
func (a *Activity) Add(seq int64, scopes string) error {
	if !a.match.Empty() {
		s, err := storelayout.DecodeScopes(scopes)
		if err != nil {
			return err
		}
		if !a.match.Match(s) {
			return nil
		}
	}
	a.changes++
	a.commits[seq] = true
	return nil
}

// Result is the count so far.
func (a *Activity) Result() driver.ScopeActivity {
	return driver.ScopeActivity{Commits: int64(len(a.commits)), Changes: a.changes}
}

// RowScopes is the admin capability's RowScopes (ADM-1) from the
// driver's GetRow answer for the row: its scopes and true, or false when
// the row does not exist, or GetRow's error (CodeUnknownTable, …).
func RowScopes(row driver.Row, found bool, err error) (driver.Scopes, bool, error) {
	if err != nil || !found {
		return nil, false, err
	}
	return row.Scopes, true, nil
}

// Rows is the part of a result set the readers below use; *sql.Rows and
// pgx.Rows both have it. The caller closes the rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Text is a scan destination for a text column that database/sql (string
// or []byte; NULL reads as "") and pgx (through sql.Scanner) both fill.
type Text string

// Scan implements sql.Scanner.
func (t *Text) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*t = Text(v)
	case []byte:
		*t = Text(v)
	case nil:
		*t = ""
	default:
		return fmt.Errorf("adminview: a %T is not text", src)
	}
	return nil
}

// ClientRecord reads one client record (CR-1) with scan, a single-row
// read of (actor id, wire version, cursor, updated at, subscriptions
// JSON): false, nil when noRow reports scan's error as "no such row";
// scan's other errors as is; undecodable subscriptions fail with
// storelayout.DecodeSubscriptions' error.
func ClientRecord(clientID string, scan func(dest ...any) error, noRow func(error) bool) (driver.ClientRecord, bool, error) {
	rec := driver.ClientRecord{ClientID: clientID}
	var subs Text
	err := scan(&rec.ActorID, &rec.WireVersion, &rec.Cursor, &rec.UpdatedAtMs, &subs)
	if noRow(err) {
		return driver.ClientRecord{}, false, nil
	}
	if err != nil {
		return driver.ClientRecord{}, false, err
	}
	if rec.Subscriptions, err = storelayout.DecodeSubscriptions(string(subs)); err != nil {
		return driver.ClientRecord{}, false, err
	}
	return rec, true, nil
}

// ClientRecords reads the rows of a client-record listing (ADM-2; columns
// client id, actor id, wire version, cursor, updated at, subscriptions
// JSON) in their order. A scan or iteration error goes through mapErr
// (which maps nil to nil); undecodable subscriptions fail with
// storelayout.DecodeSubscriptions' error.
func ClientRecords(rows Rows, mapErr func(error) error) ([]driver.ClientRecord, error) {
	var out []driver.ClientRecord
	for rows.Next() {
		var rec driver.ClientRecord
		var subs Text
		if err := rows.Scan(&rec.ClientID, &rec.ActorID, &rec.WireVersion, &rec.Cursor, &rec.UpdatedAtMs, &subs); err != nil {
			return nil, mapErr(err)
		}
		var err error
		if rec.Subscriptions, err = storelayout.DecodeSubscriptions(string(subs)); err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, mapErr(rows.Err())
}

// CommitMetas reads the rows of a commit-metadata listing (ADM-1; columns
// seq, client id, client commit id, actor id, created at, change count)
// in their order. A scan error returns nil and mapErr's error; an
// iteration error the rows read and mapErr's error.
func CommitMetas(rows Rows, mapErr func(error) error) ([]driver.CommitMeta, error) {
	var out []driver.CommitMeta
	for rows.Next() {
		var m driver.CommitMeta
		var n int64
		if err := rows.Scan(&m.Seq, &m.ClientID, &m.ClientCommitID, &m.ActorID, &m.CreatedAtMs, &n); err != nil {
			return nil, mapErr(err)
		}
		m.ChangeCount = int(n)
		out = append(out, m)
	}
	return out, mapErr(rows.Err())
}

// CountRows adds every row of a scope-activity statement (columns seq,
// scopes JSON) and returns the Result (ADM-1). A scan or iteration error
// goes through mapErr; a malformed scopes text fails as Add does.
func (a *Activity) CountRows(rows Rows, mapErr func(error) error) (driver.ScopeActivity, error) {
	for rows.Next() {
		var seq int64
		var text Text
		if err := rows.Scan(&seq, &text); err != nil {
			return driver.ScopeActivity{}, mapErr(err)
		}
		if err := a.Add(seq, string(text)); err != nil {
			return driver.ScopeActivity{}, err
		}
	}
	if err := rows.Err(); err != nil {
		return driver.ScopeActivity{}, mapErr(err)
	}
	return a.Result(), nil
}
