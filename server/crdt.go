package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// CRDTMerger merges a crdt column's value (SPEC §5.10.2): Merge(ctx,
// stored, incoming) returns the column's new value, where stored is the
// value the row holds (nil for a new row or a NULL column) and incoming
// the non-NULL value a push carries. It must be commutative, associative
// and idempotent over the updates it consumes (the CRDT contract:
// concurrent pushes converge in any order, a replayed update changes
// nothing), must not keep or modify its arguments, and must bound what an
// input can make it hold (the input is the client's).
//
// It runs inside the push's transaction, after the op's scope check and
// base-version check (a crdt column never conflicts on its own account:
// the version check is about the row's version, whatever the columns),
// before Config.Validate, which sees the merged row. An error rejects
// the commit at the op with sync.crdt_merge_failed (stored and replayed,
// §5.10.6) — except the context's own error, which fails the request. A
// replayed commit is answered from its stored result, never re-merged.
//
// The merger of crdtType "yjs-doc" is crdt/yjs.Merger.
type CRDTMerger interface {
	Merge(ctx context.Context, stored, incoming []byte) ([]byte, error)
}

// CRDTMergerFunc adapts a function to CRDTMerger.
type CRDTMergerFunc func(ctx context.Context, stored, incoming []byte) ([]byte, error)

// Merge calls f.
func (f CRDTMergerFunc) Merge(ctx context.Context, stored, incoming []byte) ([]byte, error) {
	return f(ctx, stored, incoming)
}

// crdtMergers resolves each crdt column's merger (§5.10.1): with
// Config.CRDTMergers set, every crdt column must name a registered
// crdtType — anything else is a host configuration error New returns.
// Without it, the columns have no merger and a push writing one is
// refused (§5.10.2).
func crdtMergers(cfg *Config, t *table) error {
	if cfg.CRDTMergers == nil {
		return nil
	}
	t.crdtMergers = make([]CRDTMerger, len(t.crdtCols))
	for i, k := range t.crdtCols {
		c := t.Columns[k]
		m := cfg.CRDTMergers[c.CRDTType]
		if m == nil {
			known := make([]string, 0, len(cfg.CRDTMergers))
			for name := range cfg.CRDTMergers {
				known = append(known, name)
			}
			slices.Sort(known)
			return fmt.Errorf("server: table %q: crdt column %q names crdtType %q, and Config.CRDTMergers has a merger for %q only (SPEC §5.10.1)",
				t.Name, c.Name, c.CRDTType, known)
		}
		t.crdtMergers[i] = m
	}
	return nil
}

// maxMergeMessage bounds the merger's error text a rejection carries.
const maxMergeMessage = 200

// mergeCRDT merges the op's non-NULL crdt values into the stored ones
// (§5.10.3 rule 2): it returns vals with the merged values (a copy of the
// op's values when vals is nil), or vals unchanged when the op writes no
// crdt value. A table without mergers refuses the value.
func (r *round) mergeCRDT(ctx context.Context, in sync.OpInput, t *table, vals sync.Values) (sync.Values, error) {
	for i, k := range t.crdtCols {
		name := t.Columns[k].Name
		incoming, _ := in.Op.Values[name].([]byte)
		if incoming == nil {
			continue // NULL clears the column, as for any type
		}
		if t.crdtMergers == nil {
			return nil, &sync.Refusal{Code: string(ssp2.CodeCRDTMergeFailed), Message: "the row writes a crdt column and this server has no CRDT merger registered (§5.10.2)"}
		}
		var stored []byte
		if in.Exists {
			stored, _ = in.Current.Values[name].([]byte)
		}
		merged, err := t.crdtMergers[i].Merge(ctx, stored, incoming)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, err
			}
			msg := err.Error()
			if len(msg) > maxMergeMessage {
				msg = msg[:maxMergeMessage]
				for !utf8.ValidString(msg) {
					msg = msg[:len(msg)-1]
				}
			}
			return nil, &sync.Refusal{Code: string(ssp2.CodeCRDTMergeFailed),
				Message: fmt.Sprintf("the merger of crdt column %q failed (§5.10.2): %s", name, msg)}
		}
		if merged == nil {
			merged = []byte{}
		}
		if vals == nil {
			vals = make(sync.Values, len(in.Op.Values))
			for k, v := range in.Op.Values {
				vals[k] = v
			}
		}
		vals[name] = merged
	}
	return vals, nil
}
