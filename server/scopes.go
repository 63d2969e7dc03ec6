package server

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// scopeMap is a map of scope variable → values (requested, allowed or
// effective scopes, SPEC §3.2).
type scopeMap = map[string][]string

// wildcard is the allowed-scope value meaning "any value" (§3.2).
const wildcard = "*"

// grant is the memoized result of ResolveScopes for one request (§3.2
// step 3, §3.4 step 1): ok false when the resolver failed (fail closed:
// every subscription revoked, every write refused).
type grant struct {
	ok   bool
	vars map[string]valueSet
}

// valueSet is one variable's allowed values.
type valueSet struct {
	any    bool
	values map[string]struct{}
}

func (v valueSet) has(value string) bool {
	if v.any {
		return true
	}
	_, ok := v.values[value]
	return ok
}

// resolve calls ResolveScopes once and checks its answer (§3.2 step 3).
// A resolver error yields a failed grant (fail closed), except an
// *ssp2.Error, which is returned to fail the request; a variable no table
// declares is sync.invalid_subscription.
func (s *Server) resolve(ctx context.Context, id Identity, clientID string) (grant, error) {
	allowed, err := s.cfg.ResolveScopes(ctx, id, clientID)
	if err != nil {
		var pe *ssp2.Error
		if errors.As(err, &pe) {
			return grant{}, pe
		}
		s.log.LogAttrs(ctx, levelInfo, "ssp2 server: scope resolution failed; failing closed", errAttr(err))
		return grant{}, nil
	}
	return s.grantOf(ctx, allowed)
}

// grantOf checks an allowed map (§3.2 step 3) — the resolver's, or a
// lease's (§7.3.3) — and returns its grant: a variable no table declares
// is sync.invalid_subscription.
func (s *Server) grantOf(ctx context.Context, allowed map[string][]string) (grant, error) {
	g := grant{ok: true, vars: make(map[string]valueSet, len(allowed))}
	for k, vals := range allowed {
		if !s.declared[k] {
			s.log.LogAttrs(ctx, slog.LevelError, "ssp2 server: ResolveScopes returned a scope variable no table's scope pattern declares (a host bug: the variable is the {name} of a pattern)",
				slog.String("variable", k))
			return grant{}, perr(ssp2.CodeInvalidSubscription, "the server's scope resolver returned a scope variable no table declares (§3.2)")
		}
		vs := valueSet{values: make(map[string]struct{}, len(vals))}
		for _, v := range vals {
			if v == wildcard {
				vs.any = true
			}
			vs.values[v] = struct{}{}
		}
		g.vars[k] = vs
	}
	return g, nil
}

// checkRequested validates a subscription's requested scopes against its
// table (§3.2 step 2): every key declared by the table, no "*" value.
func checkRequested(t *table, requested scopeMap) *ssp2.Error {
	for k, vals := range requested {
		if _, ok := t.scopeVar[k]; !ok {
			return perr(ssp2.CodeInvalidSubscription, "a subscription requests a scope variable its table does not declare (§3.2)")
		}
		if slices.Contains(vals, wildcard) {
			return perr(ssp2.CodeInvalidSubscription, "a requested scope value is '*', which is reserved for allowed scopes (§3.2)")
		}
	}
	return nil
}

// effective computes effective = requested ∩ allowed (§3.2 rules 4–5) and
// reports whether the subscription is active. requested is already
// checked (checkRequested). A revoked subscription's effective map is nil.
// Value lists keep the requested order, repeats removed.
func effective(requested scopeMap, g grant) (scopeMap, bool) {
	if !g.ok || len(requested) == 0 {
		return nil, false
	}
	eff := make(scopeMap, len(requested))
	for k, vals := range requested {
		allowed, ok := g.vars[k]
		if !ok {
			return nil, false
		}
		out := make([]string, 0, len(vals))
		for _, v := range vals {
			if allowed.has(v) && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		if len(out) == 0 {
			return nil, false
		}
		eff[k] = out
	}
	return eff, true
}

// authorizeRow is §3.4 steps 2–3 on the authorization row's stored scopes:
// every variable the table declares must have a non-empty value the
// grant allows. No partial pass.
func authorizeRow(t *table, scopes sync.Scopes, g grant) bool {
	if !g.ok {
		return false
	}
	for v := range t.scopeVar {
		val, ok := scopes[v]
		if !ok || val == "" {
			return false
		}
		allowed, ok := g.vars[v]
		if !ok || !allowed.has(val) {
			return false
		}
	}
	return true
}

// matchesEffective reports whether a change's stored scopes match
// effective scopes: for every effective key, the stored value is in its
// list (§3.2).
func matchesEffective(stored sync.Scopes, eff scopeMap) bool {
	for k, vals := range eff {
		v, ok := stored[k]
		if !ok || !slices.Contains(vals, v) {
			return false
		}
	}
	return true
}

// scopeKeys adds to keys the scope keys (prefix:value, §3.1) a table's
// effective scopes cover: presence's addresses (§8.6).
func scopeKeys(keys map[string]struct{}, t *table, eff scopeMap) {
	for v, vals := range eff {
		p, ok := t.scopeVar[v]
		if !ok {
			continue
		}
		for _, val := range vals {
			keys[p.Prefix+":"+val] = struct{}{}
		}
	}
}

// scopeFilter converts effective scopes to the engine's filter.
func scopeFilter(eff scopeMap) sync.ScopeFilter {
	f := make(sync.ScopeFilter, len(eff))
	for k, v := range eff {
		f[k] = v
	}
	return f
}
