package ssp2conf

import (
	"context"
	"encoding/hex"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// The host controls of upstream's ServerInstance (driver.ts), one per op
// of POST /i/{id}/ctl/{op}; close is the Host's.
//
//	setAllowedScopes   {actorId, allowed: {variable: [values]}} → {}
//	setResolverFailing {failing}                                → {}
//	advanceClock       {ms}                                     → {nowMs}
//	nowMs              {}                                       → {nowMs}
//	prune              {retention?: RetentionOptions}           → {horizonSeq}
//	getMaxCommitSeq    {}                                       → {seq}
//	getHorizonSeq      {}                                       → {seq}
//	readRows           {table}                                  → {rows: [ServerRowState]}
//	failNextIdempotencyLookup {}                                → {}
//	installValidators  {specs: [ValidatorInstallSpec]}          → {}
//	installCommitValidator {spec?: CommitValidatorInstallSpec}  → {}
//	setSignedUrlTtlSeconds {ttlSeconds}                         → {}
//	setResolverOutage  {outage}                                 → {}
//	revokeLease        {leaseId}                                → {}
//	setBlobPresign     {enabled}                                → {} (blobs.go)
//	captureBackup      {}                                       → {} (backup.go)
//	restoreBackup      {}                                       → {rotated} (backup.go)
func (in *instance) control(r *http.Request, op string) (any, error) {
	ctx := r.Context()
	switch op {
	case "setAllowedScopes":
		var req struct {
			ActorID string              `json:"actorId"`
			Allowed map[string][]string `json:"allowed"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		if req.ActorID == "" {
			return nil, badRequest("actorId is empty")
		}
		g := make(map[string][]string, len(req.Allowed))
		for k, v := range req.Allowed {
			g[k] = append([]string{}, v...)
		}
		in.mu.Lock()
		in.grants[req.ActorID] = g
		in.mu.Unlock()
		return struct{}{}, nil
	case "setResolverFailing":
		var req struct {
			Failing bool `json:"failing"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		in.mu.Lock()
		in.failing = req.Failing
		in.mu.Unlock()
		return struct{}{}, nil
	case "setResolverOutage", "revokeLease":
		return in.leaseControl(r, op)
	case "advanceClock":
		var req struct {
			Ms int64 `json:"ms"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		if req.Ms < 0 {
			return nil, badRequest("advanceClock: ms must be ≥ 0 (the clock never goes back)")
		}
		return map[string]int64{"nowMs": in.nowMs.Add(req.Ms)}, nil
	case "nowMs":
		return map[string]int64{"nowMs": in.nowMs.Load()}, nil
	case "prune":
		var req struct {
			Retention *RetentionOptions `json:"retention"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		rep, err := in.store.Prune(ctx, in.partition, req.Retention.Policy(in.now))
		if err != nil {
			return nil, err
		}
		return map[string]int64{"horizonSeq": rep.HorizonAfter}, nil
	case "getMaxCommitSeq":
		seq, err := in.store.MaxCommitSeq(ctx, in.partition)
		if err != nil {
			return nil, err
		}
		return map[string]int64{"seq": seq}, nil
	case "getHorizonSeq":
		seq, err := in.store.HorizonSeq(ctx, in.partition)
		if err != nil {
			return nil, err
		}
		return map[string]int64{"seq": seq}, nil
	case "failNextIdempotencyLookup":
		if err := decodeBody(r, &struct{}{}); err != nil {
			return nil, err
		}
		in.idemFault.Store(true)
		return struct{}{}, nil
	case "installValidators":
		var req struct {
			Specs []validatorSpec `json:"specs"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		rules := make(map[string]opRule, len(req.Specs))
		for _, spec := range req.Specs {
			if !slices.ContainsFunc(in.schema.Tables, func(t ssp2.Table) bool { return t.Name == spec.Table }) {
				return nil, badRequest("installValidators: unknown table %q", spec.Table)
			}
			rule, err := compileRule(spec)
			if err != nil {
				return nil, err
			}
			rules[spec.Table] = rule
		}
		in.mu.Lock()
		in.validators = rules
		in.mu.Unlock()
		return struct{}{}, nil
	case "installCommitValidator":
		var req struct {
			Spec *commitValidatorSpec `json:"spec"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		var rule func(server.CommitValidation) error
		if req.Spec != nil {
			var err error
			if rule, err = compileCommitRule(*req.Spec); err != nil {
				return nil, err
			}
		}
		in.mu.Lock()
		in.commitRule = rule
		in.mu.Unlock()
		return struct{}{}, nil
	case "setSignedUrlTtlSeconds":
		var req struct {
			TTLSeconds int64 `json:"ttlSeconds"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		if req.TTLSeconds < 0 || req.TTLSeconds > int64(server.MaxSignedURLTTL/time.Second) {
			return nil, badRequest("setSignedUrlTtlSeconds: ttlSeconds must be 0…%d", int64(server.MaxSignedURLTTL/time.Second))
		}
		if err := in.srv.SetSignedURLTTL(time.Duration(req.TTLSeconds) * time.Second); err != nil {
			return nil, badRequest("setSignedUrlTtlSeconds: %v", err)
		}
		in.mu.Lock()
		in.signedTTL = time.Duration(req.TTLSeconds) * time.Second
		in.mu.Unlock()
		return struct{}{}, nil
	case "setBlobPresign":
		return in.setBlobPresign(r)
	case "readRows":
		var req struct {
			Table string `json:"table"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		rows, err := in.readRows(ctx, req.Table)
		if err != nil {
			return nil, err
		}
		return map[string]any{"rows": rows}, nil
	}
	return nil, &hostError{http.StatusNotFound, "host.unknown_control", "no control " + strconv.Quote(op)}
}

// RetentionOptions is upstream's RetentionOptions (driver.ts): an absent
// field takes the default (sync.DefaultRetentionPolicy, the same values as
// upstream's DEFAULT_RETENTION), a present one is the value — 0 included.
type RetentionOptions struct {
	ActiveWindowMs     *int64 `json:"activeWindowMs"`
	AgeForceMs         *int64 `json:"ageForceMs"`
	MinRetainedCommits *int64 `json:"minRetainedCommits"`
}

// Policy maps o onto the engine's policy, on clock now: an absent field
// keeps sync.DefaultRetentionPolicy's value and a present one is the value,
// 0 included (NoDefaults, RET-11). A negative window or age is 0; a
// negative minimum is no minimum, as 0 is.
func (o *RetentionOptions) Policy(now func() time.Time) sync.RetentionPolicy {
	if o == nil {
		return sync.RetentionPolicy{Now: now}
	}
	p := sync.DefaultRetentionPolicy
	p.Now, p.NoDefaults = now, true
	ms := func(v int64) time.Duration {
		return time.Duration(min(max(v, 0), math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	}
	if o.ActiveWindowMs != nil {
		p.ActiveWindow = ms(*o.ActiveWindowMs)
	}
	if o.AgeForceMs != nil {
		p.ForceAge = ms(*o.AgeForceMs)
	}
	if o.MinRetainedCommits != nil {
		p.MinRetainedCommits = max(*o.MinRetainedCommits, 0)
	}
	return p
}

// RowState is upstream's ServerRowState: a stored row with its version,
// its values in the driver seam's JSON form (bytes as {"$bytes": hex},
// json and blob_ref columns as their text) and its stored scopes.
type RowState struct {
	RowID   string            `json:"rowId"`
	Version int64             `json:"version"`
	Values  map[string]any    `json:"values"`
	Scopes  map[string]string `json:"scopes"`
}

// maxReadRows bounds readRows: the catalog's scenarios hold a few dozen
// rows; more is a runaway scenario.
const maxReadRows = 10_000

// readRows returns every stored row of table, ascending bytewise by id.
func (in *instance) readRows(ctx context.Context, table string) ([]RowState, error) {
	if _, ok := in.engine.Table(table); !ok {
		return nil, badRequest("readRows: unknown table %q", table)
	}
	// The admin listing: every row, whatever its scopes, paged by id
	// (ADM-3; every bundled driver declares admin).
	var rows []sync.Row
	for after := ""; ; {
		page, err := in.store.ListRows(ctx, in.partition, table, after, 1000)
		if err != nil {
			return nil, err
		}
		rows = append(rows, page...)
		if len(page) < 1000 {
			break
		}
		if len(rows) >= maxReadRows {
			return nil, badRequest("readRows: %s holds more than %d rows", table, maxReadRows)
		}
		after = page[len(page)-1].ID
	}
	out := make([]RowState, 0, len(rows))
	for _, row := range rows {
		vals := make(map[string]any, len(row.Values))
		for k, v := range row.Values {
			vals[k] = seamValue(v)
		}
		scopes := map[string]string(row.Scopes)
		if scopes == nil {
			scopes = map[string]string{}
		}
		out = append(out, RowState{RowID: row.ID, Version: row.ServerVersion, Values: vals, Scopes: scopes})
	}
	return out, nil
}

// seamValue is a stored value in the driver seam's JSON form.
func seamValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return map[string]string{"$bytes": hex.EncodeToString(x)}
	case driver.JSON:
		return string(x)
	}
	return v
}
