// Package rowkeys groups the row keys of a batched read
// (driver.PushBeginner) by table, for the bundled drivers' one statement
// per table and chunk of ids.
package rowkeys

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// Group is keys of one table: Index holds their positions in the keys
// given to Groups, in order.
type Group struct {
	Table string
	Index []int
	at    map[string]int // id → position in keys
}

// Groups splits keys by table, tables in the order they first appear,
// each table's keys in order and cut into groups of at most max (≥ 1).
func Groups(keys []driver.RowKey, max int) []Group {
	var out []Group
	open := map[string]int{} // table → its last group in out
	for i, k := range keys {
		g, ok := open[k.Table]
		if !ok || len(out[g].Index) == max {
			out = append(out, Group{Table: k.Table, at: map[string]int{}})
			g = len(out) - 1
			open[k.Table] = g
		}
		out[g].Index = append(out[g].Index, i)
		out[g].at[k.ID] = i
	}
	return out
}

// IDs returns the ids of g's keys, in order, after the leading args.
func (g Group) IDs(keys []driver.RowKey, leading ...any) []any {
	out := make([]any, 0, len(leading)+len(g.Index))
	out = append(out, leading...)
	for _, i := range g.Index {
		out = append(out, keys[i].ID)
	}
	return out
}

// Place stores row at its key's position in read when it is one of g's
// keys (matched by id), and reports whether it was.
func (g Group) Place(read *driver.PushRead, row driver.Row) bool {
	i, ok := g.at[row.ID]
	if ok {
		read.Rows[i], read.Found[i] = row, true
	}
	return ok
}

// PlaceTombstone stores version as the tombstone of id's key in read
// (driver.PushRead.Tombstones, ROW-5) when id is one of g's keys and its
// row was not found, and reports whether it did. Call it after the rows
// of g are placed.
func (g Group) PlaceTombstone(read *driver.PushRead, id string, version int64) bool {
	i, ok := g.at[id]
	if !ok || read.Found[i] {
		return false
	}
	read.Tombstones[i] = version
	return true
}

// BeginPush is driver.PushBeginner.BeginPush for a driver that reads in
// its own Tx: begin starts the Tx (a T), read fills out inside it. When
// read fails, the Tx is rolled back (on ctx without its cancellation, so
// the rollback runs) and read's error is returned with no Tx.
func BeginPush[T driver.Tx](ctx context.Context, begin func() (driver.Tx, error), read func(t T, out *driver.PushRead) error) (driver.Tx, driver.PushRead, error) {
	dtx, err := begin()
	if err != nil {
		return nil, driver.PushRead{}, err
	}
	t := dtx.(T)
	var out driver.PushRead
	if err := read(t, &out); err != nil {
		_ = t.Rollback(context.WithoutCancel(ctx))
		return nil, driver.PushRead{}, err
	}
	return t, out, nil
}
