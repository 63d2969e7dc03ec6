package sqlitesql

import (
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Index lookup (capability index-lookup, IXL-1…IXL-4): an exact lookup
// through a declared index, served by that index's engine index
// ("_sync_partition", columns…) named DeclaredIndexName. Values compare
// with IS, so NULL matches NULL (IXL-1) and the index still serves the
// lookup; rows come back with the same select list as every row read, so
// their scopes are their scope columns (IXL-4).

// IndexLookupSQL returns the lookup statement of the declared index ix of
// the table: ?1 partition, ?2…?(n+1) the n index values (bound with
// IndexLookupArgs), ?(n+2) the exclusive after-id, ?(n+3) the limit.
// Columns: SelectList. INDEXED BY makes the engine fail rather than scan
// if the index were ever missing.
func (x *Table) IndexLookupSQL(ix driver.Index) string {
	pk := Quote(x.Def.PrimaryKey)
	preds := []string{Quote(PartitionColumn) + " = ?1"}
	for i, c := range ix.Columns {
		preds = append(preds, Quote(c)+" IS ?"+strconv.Itoa(i+2))
	}
	n := len(ix.Columns)
	preds = append(preds, pk+" > ?"+strconv.Itoa(n+2))
	return "SELECT " + x.SelectList() + " FROM " + Quote(x.Def.Name) +
		" INDEXED BY " + Quote(DeclaredIndexName(x.Def.Name, ix.Name)) +
		" WHERE " + strings.Join(preds, " AND ") +
		" ORDER BY " + pk + " LIMIT ?" + strconv.Itoa(n+3)
}

// IndexLookupArgs returns the arguments of IndexLookupSQL for q in
// partition: each value converted like a stored value (ToSQL; nil is
// NULL). The table and index are known (the caller checked IXL-2's
// unknown_table and index_not_found); a value count or type that does not
// fit → CodeIndexValueCountMismatch / CodeInvalidValue (sync has normally
// rejected it already).
func (x *Table) IndexLookupArgs(partition string, ix driver.Index, q driver.IndexQuery) ([]any, error) {
	if len(q.Values) != len(ix.Columns) {
		return nil, driver.Errorf(driver.CodeIndexValueCountMismatch, "index %s of table %s has %d columns, got %d values (IXL-2)",
			ix.Name, x.Def.Name, len(ix.Columns), len(q.Values))
	}
	args := make([]any, 0, len(ix.Columns)+3)
	args = append(args, partition)
	for i, name := range ix.Columns {
		col, _ := x.Def.Column(name)
		v, err := ToSQL(name, col.Type, q.Values[i])
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	return append(args, q.AfterRowID, int64(q.Limit)), nil
}
