// Package blobrefs is the engine-free part of the blob-refs capability
// (BLOB-1) that every driver shares: the walk of ListRowsReferencingBlob
// over the ensured tables, and the shape of one listed row. The SQL and
// the reading of its answer stay in each driver.
package blobrefs

import (
	"context"
	"slices"

	"github.com/syncstore/syncstore/driver"
)

// ListRows returns at most limit rows referencing a blob, ordered by
// table name then row id (BLOB-1): it walks tables (the ensured schema's,
// by name) in name order, asking rows for at most n (≥ 1) more rows of
// each, ascending by row id, and stops once it has limit. rows's error is
// returned as is.
func ListRows[X any](tables map[string]X, limit int, rows func(name string, x X, n int) ([]driver.BlobRowRef, error)) ([]driver.BlobRowRef, error) {
	names := make([]string, 0, len(tables))
	for name := range tables {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []driver.BlobRowRef
	for _, name := range names {
		if len(out) >= limit {
			break
		}
		refs, err := rows(name, tables[name], limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
	}
	return out, nil
}

// Set is SetBlobRefs (BLOB-1) as one operation of the Tx through op (the
// driver's Tx.op): table must be an ensured table (lookup, the Conn's
// table lookup: CodeUnknownTable, SCH-8); then the row's set is cleared
// (clear) and, unless blobIDs is empty, blobIDs are inserted (insert,
// which counts a repeated id once). Errors are returned as is.
func Set[X any](ctx context.Context, op func(context.Context, func() error) error, lookup func(string) (X, error), table string, blobIDs []string,
	clear func() error, insert func(ids []string) error) error {
	return op(ctx, func() error {
		if _, err := lookup(table); err != nil {
			return err
		}
		if err := clear(); err != nil || len(blobIDs) == 0 {
			return err
		}
		return insert(blobIDs)
	})
}

// Scan reads one listed row with scan (a database/sql or pgx Scan): the
// row id, then the value of each of scopes' columns in order, as the
// drivers' row-listing statements select them.
func Scan(scan func(dest ...any) error, table string, scopes []driver.Scope) (driver.BlobRowRef, error) {
	vals := make([]string, 1+len(scopes))
	dest := make([]any, len(vals))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := scan(dest...); err != nil {
		return driver.BlobRowRef{}, err
	}
	return Ref(table, scopes, vals), nil
}

// Ref is the listed row whose values are vals: the row id, then one value
// per scope of scopes, in order (len(vals) = 1 + len(scopes)).
func Ref(table string, scopes []driver.Scope, vals []string) driver.BlobRowRef {
	ref := driver.BlobRowRef{Table: table, RowID: vals[0], Scopes: make(driver.Scopes, len(scopes))}
	for i, s := range scopes {
		ref.Scopes[s.Variable] = vals[1+i]
	}
	return ref
}
