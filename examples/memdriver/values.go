package memdriver

import (
	"bytes"
	"maps"
	"slices"

	"github.com/syncstore/syncstore/driver"
)

// Values cross the seam as int64, float64, string, bool, driver.JSON,
// []byte or nil (driver.ColumnType). All but []byte are immutable in Go,
// so a deep copy only has to copy byte slices — keeping []byte{} (empty)
// distinct from nil (NULL) (VAL-1).

func cloneValue(v any) any {
	if b, ok := v.([]byte); ok && b != nil {
		return bytes.Clone(b)
	}
	return v
}

func cloneValues(v driver.Values) driver.Values {
	if v == nil {
		return nil
	}
	out := make(driver.Values, len(v))
	for k, x := range v {
		out[k] = cloneValue(x)
	}
	return out
}

func cloneRow(r driver.Row) driver.Row {
	r.Scopes = maps.Clone(r.Scopes)
	r.Values = cloneValues(r.Values)
	return r
}

// rowFor returns a copy of r as a read returns it: with a value for every
// column of t, nil for a column appended by a migration after r was
// written (SCH-6).
func rowFor(t driver.Table, r driver.Row) driver.Row {
	out := cloneRow(r)
	for _, c := range t.Columns {
		if _, ok := out.Values[c.Name]; !ok {
			out.Values[c.Name] = nil
		}
	}
	return out
}

func cloneChanges(cs []driver.Change) []driver.Change {
	out := make([]driver.Change, len(cs))
	for i, c := range cs {
		c.Scopes = maps.Clone(c.Scopes)
		c.Values = cloneValues(c.Values)
		out[i] = c
	}
	return out
}

func cloneClientRecord(r driver.ClientRecord) driver.ClientRecord {
	subs := make([]driver.Subscription, len(r.Subscriptions))
	for i, s := range r.Subscriptions {
		s.Scopes = cloneFilter(s.Scopes)
		subs[i] = s
	}
	r.Subscriptions = subs
	return r
}

func cloneFilter(f driver.ScopeFilter) driver.ScopeFilter {
	if f == nil {
		return nil
	}
	out := make(driver.ScopeFilter, len(f))
	for k, v := range f {
		out[k] = slices.Clone(v)
	}
	return out
}

// matches reports whether scopes pass filter (WIN-3): for every key, the
// scopes have it and its value is listed. Extra scope keys are ignored; a
// key with an empty list matches nothing (V-6).
func matches(scopes driver.Scopes, filter driver.ScopeFilter) bool {
	for k, values := range filter {
		v, ok := scopes[k]
		if !ok || !slices.Contains(values, v) {
			return false
		}
	}
	return true
}

// sameValue reports whether two values of one column are equal, as an
// engine's index compares them: bytes by content, floats by value (so
// -0.0 equals 0.0), NULL equal to NULL (IXL-1).
func sameValue(a, b any) bool {
	if ab, ok := a.([]byte); ok {
		bb, ok := b.([]byte)
		return ok && (ab == nil) == (bb == nil) && bytes.Equal(ab, bb)
	}
	return a == b
}

// sameIndexKey reports whether rows a and b have equal values in every
// column of ix.
func sameIndexKey(ix driver.Index, a, b driver.Values) bool {
	for _, col := range ix.Columns {
		if !sameValue(a[col], b[col]) {
			return false
		}
	}
	return true
}

// sortedIDs returns the ids of rows that keep(row) accepts and that sort
// after afterID, ascending bytewise (Go compares strings by bytes: SCAN-1),
// at most limit.
func sortedIDs(rows map[string]driver.Row, afterID string, limit int, keep func(driver.Row) bool) []string {
	var ids []string
	for id, r := range rows {
		if id > afterID && keep(r) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids
}
