// Package adminview is the engine-free part of the admin capability
// (ADM-1) every driver shares: ListCommitMeta's bound and ScopeActivity's
// choice of index key and its count. The SQL and the reading of its
// answer stay in each driver.
package adminview

import (
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

// ActivityKey picks the scope variable whose change-scope index drives
// ScopeActivity over afterSeq < seq ≤ throughSeq (storelayout.PickKey). done: the
// answer is zero without a read (a key with no values, or an empty seq
// range). A filter with no keys → CodeScanRequiresScope (V-6).
func ActivityKey(filter driver.ScopeFilter, afterSeq, throughSeq int64) (key string, done bool, err error) {
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
