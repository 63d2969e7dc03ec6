package d1http

import (
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// d1MaxValueBytes is D1's limit on one string or BLOB — bound to a
// statement, built by one, or stored — and on one stored row: 2,000,000
// bytes (Cloudflare's D1 limits page; the double sets the same,
// d1test.MaxValueBytes). A statement passing it fails with SQLITE_TOOBIG.
const d1MaxValueBytes = 2_000_000

// d1MaxColumns is D1's limit on the columns of one table (Cloudflare's
// D1 limits page; workerd refuses a 101st: "too many columns").
const d1MaxColumns = 100

// d1RowBudget bounds what one row takes as the driver sends and stores
// it (PUSH-17): its row parameter (D1RowArgs: strings JSON-escaped,
// bytes as hex) and its logged change (an element of
// sqlitesql.ChangesJSON: the values as driver.EncodeValues text, bytes
// as base64, inside a JSON string), and each part of a commit's changes
// (AppendCommit). The other 200,000 bytes of d1MaxValueBytes are left
// for what travels with a row in one value: partition, ids, scopes,
// version, and a push result's per-op entries beside a conflict's
// server row.
const d1RowBudget = 1_800_000

// checkRowSize refuses, with CodePushTooLarge, a row of table x whose
// row parameter param or logged change would pass d1RowBudget: D1 could
// neither bind nor store it. Nothing is staged; the Tx stays usable.
func checkRowSize(x *sqlitesql.Table, row driver.Row, param string) error {
	n := len(param)
	// A change's element is at most about twice the row parameter
	// (its values escaped twice); encode it only when that could pass.
	if n <= d1RowBudget/2-1024 {
		return nil
	}
	if n <= d1RowBudget {
		ch, err := sqlitesql.ChangesJSON([]driver.Change{{Table: x.Def.Name, RowID: row.ID, Op: driver.OpUpsert,
			Scopes: row.Scopes, Values: row.Values, RowVersion: row.ServerVersion}})
		if err != nil {
			return err
		}
		n = max(n, len(ch))
	}
	if n <= d1RowBudget {
		return nil
	}
	return driver.Errorf(driver.CodePushTooLarge, "d1http: a row of table %s takes %d bytes as D1 binds and stores it, "+
		"over the %d-byte budget of one row under D1's %d-byte limit on one value or row (PUSH-17); nothing written",
		x.Def.Name, n, d1RowBudget, d1MaxValueBytes)
}

// changeParts returns the statements that write a commit's changes
// (seq of the Tx's partition): one InsertChanges and one
// InsertChangeScopes per part of at most d1RowBudget bytes of JSON, in
// idx order; all when they fit one part, as they do unless a commit
// carries more than about 1.8 MB of values.
func changeParts(partition string, seq int64, changes []driver.Change) ([]stmt, error) {
	all, err := sqlitesql.ChangesJSON(changes)
	if err != nil {
		return nil, err
	}
	if len(all) <= d1RowBudget {
		return []stmt{st(sqlitesql.InsertChanges, partition, seq, all), st(sqlitesql.InsertChangeScopes, partition, seq, all)}, nil
	}
	var out []stmt
	first, size := 0, 0
	var part []byte
	flush := func(end int) {
		part = append(part, ']')
		text := string(part)
		if first == 0 {
			out = append(out, st(sqlitesql.InsertChanges, partition, seq, text), st(sqlitesql.InsertChangeScopes, partition, seq, text))
		} else {
			out = append(out, st(d1sql.D1InsertChangesFrom, partition, seq, text, first),
				st(d1sql.D1InsertChangeScopesFrom, partition, seq, text, first))
		}
		first, size, part = end, 0, part[:0]
	}
	for i := range changes {
		one, err := sqlitesql.ChangesJSON(changes[i : i+1])
		if err != nil {
			return nil, err
		}
		elem := one[1 : len(one)-1] // without the array's brackets
		if len(elem)+2 > d1RowBudget {
			return nil, driver.Errorf(driver.CodePushTooLarge, "d1http: change %d of a commit takes %d bytes as D1 binds it, "+
				"over the %d-byte budget of one value under D1's %d-byte limit (PUSH-17); nothing written",
				i, len(elem), d1RowBudget, d1MaxValueBytes)
		}
		if size > 0 && size+1+len(elem)+1 > d1RowBudget {
			flush(i)
		}
		if size == 0 {
			part = append(part, '[')
		} else {
			part = append(part, ',')
		}
		part = append(part, elem...)
		size = len(part)
	}
	flush(len(changes))
	return out, nil
}
