package memdriver

import (
	"sort"

	"github.com/syncstore/syncstore/driver"
)

// The reads below work on one partition state: the committed one for a
// Conn, the draft for a Tx (which so sees its own writes, TX-3).

// getRow returns a copy of the row, or false (ROW-4).
func getRow(p *partition, t driver.Table, id string) (driver.Row, bool) {
	r, ok := p.rows[t.Name][id]
	if !ok {
		return driver.Row{}, false
	}
	return rowFor(t, r), true
}

// scanRows returns the rows matching q, ascending bytewise by id after
// q.AfterRowID, at most q.Limit (SCAN-1…SCAN-4).
func scanRows(p *partition, t driver.Table, q driver.ScanQuery) []driver.Row {
	rows := p.rows[t.Name]
	ids := sortedIDs(rows, q.AfterRowID, q.Limit, func(r driver.Row) bool { return matches(r.Scopes, q.Filter) })
	out := make([]driver.Row, len(ids))
	for i, id := range ids {
		out[i] = rowFor(t, rows[id])
	}
	return out
}

// lookupRows returns the rows whose index columns equal q.Values position
// by position (NULL matches NULL), ascending by id after q.AfterRowID, at
// most q.Limit (IXL-1). Errors, after the table's: CodeIndexNotFound,
// CodeIndexValueCountMismatch (IXL-2).
func lookupRows(p *partition, t driver.Table, q driver.IndexQuery) ([]driver.Row, error) {
	ix, ok := t.Index(q.Index)
	if !ok {
		return nil, driver.Errorf(driver.CodeIndexNotFound, "memory: table %s has no index %s (IXL-2)", t.Name, q.Index)
	}
	if len(q.Values) != len(ix.Columns) {
		return nil, driver.Errorf(driver.CodeIndexValueCountMismatch,
			"memory: index %s has %d columns, the lookup gives %d values (IXL-2)", ix.Name, len(ix.Columns), len(q.Values))
	}
	want := driver.Values{}
	for i, col := range ix.Columns {
		want[col] = q.Values[i]
	}
	rows := p.rows[t.Name]
	ids := sortedIDs(rows, q.AfterRowID, q.Limit, func(r driver.Row) bool { return sameIndexKey(ix, r.Values, want) })
	out := make([]driver.Row, len(ids))
	for i, id := range ids {
		out[i] = rowFor(t, rows[id])
	}
	return out, nil
}

// getPushResult decodes the stored result, or returns false (PR-2). An
// undecodable one is CodeIdempotencyCacheMiss (PR-5).
func getPushResult(p *partition, clientID, clientCommitID string) (driver.PushResult, bool, error) {
	data, ok := p.results[resultKey{clientID, clientCommitID}]
	if !ok {
		return driver.PushResult{}, false, nil
	}
	r, err := driver.DecodePushResult(data)
	if err != nil {
		return driver.PushResult{}, false, err
	}
	return r, true, nil
}

// readWindow returns the commits with q.AfterSeq < seq ≤ q.ThroughSeq that
// have changes to q.Table matching q.Filter, each with only those changes
// in their order (WIN-1…WIN-3, WIN-6). It stops after the commit that
// brings the returned changes to q.LimitChanges or more: a commit is never
// split (WIN-4), so a short page means nothing else matches (WIN-5).
func readWindow(p *partition, q driver.WindowQuery) []driver.Commit {
	var out []driver.Commit
	total := 0
	start := sort.Search(len(p.commits), func(i int) bool { return p.commits[i].Seq > q.AfterSeq })
	for _, c := range p.commits[start:] {
		if c.Seq > q.ThroughSeq || total >= q.LimitChanges {
			break
		}
		var changes []driver.Change
		for _, ch := range c.Changes {
			if ch.Table == q.Table && matches(ch.Scopes, q.Filter) {
				changes = append(changes, ch)
			}
		}
		if len(changes) == 0 {
			continue
		}
		c.Changes = cloneChanges(changes)
		out = append(out, c)
		total += len(changes)
	}
	return out
}
