package ssp2conf

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf16"

	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/sync"
)

// The validators and commit-validators capabilities: upstream's catalog
// installs declarative rules (driver.ts ValidatorRuleSpec,
// CommitValidatorInstallSpec) through installValidators and
// installCommitValidator; the host compiles them into the server's
// Config.Validate and Config.ValidateCommit callbacks, which every
// instance's server is created with and which accept everything while
// nothing is installed.

// validatorSpec is one ValidatorInstallSpec.
type validatorSpec struct {
	Table string `json:"table"`
	Rule  struct {
		Kind        string          `json:"kind"`
		Column      string          `json:"column"`
		Max         *int            `json:"max"`
		GuardColumn string          `json:"guardColumn"`
		GuardValue  json.RawMessage `json:"guardValue"`
		Code        string          `json:"code"`
	} `json:"rule"`
}

// commitValidatorSpec is a CommitValidatorInstallSpec.
type commitValidatorSpec struct {
	Kind               string          `json:"kind"`
	Table              string          `json:"table"`
	Column             string          `json:"column"`
	Equals             json.RawMessage `json:"equals"`
	SiblingRowIDSuffix string          `json:"siblingRowIdSuffix"`
	Code               string          `json:"code"`
}

type opRule func(v server.OpValidation) error

// compileRule compiles one per-table rule.
func compileRule(s validatorSpec) (opRule, error) {
	r := s.Rule
	if s.Table == "" || r.Column == "" || r.Code == "" {
		return nil, badRequest("installValidators: table, rule.column and rule.code are required")
	}
	switch r.Kind {
	case "maxLength":
		if r.Max == nil || *r.Max < 0 {
			return nil, badRequest("installValidators: maxLength needs max ≥ 0")
		}
		limit := *r.Max
		return func(v server.OpValidation) error {
			s, ok := v.Row[r.Column].(string)
			// JavaScript's length: UTF-16 code units.
			if !ok || len(utf16.Encode([]rune(s))) <= limit {
				return nil
			}
			return &server.Rejection{Code: r.Code, Message: fmt.Sprintf("%s exceeds %d chars (§6.7)", r.Column, limit),
				Details: details(r.Column, "max_length_exceeded", "edit_fields")}
		}, nil
	case "immutableWhen":
		var guard any
		if err := json.Unmarshal(r.GuardValue, &guard); err != nil || r.GuardColumn == "" {
			return nil, badRequest("installValidators: immutableWhen needs guardColumn and a JSON guardValue")
		}
		return func(v server.OpValidation) error {
			if v.Row == nil || v.Stored == nil || !sameValue(v.Stored[r.GuardColumn], guard) {
				return nil
			}
			if sameStored(v.Row[r.Column], v.Stored[r.Column]) {
				return nil
			}
			return &server.Rejection{Code: r.Code, Message: fmt.Sprintf("%s is immutable while %s=%v (§6.7)", r.Column, r.GuardColumn, guard),
				Details: details(r.Column, "immutable_state", "keep_server")}
		}, nil
	}
	return nil, badRequest("installValidators: unknown rule kind %q", r.Kind)
}

// compileCommitRule compiles the requireSiblingWhen whole-commit rule: a
// commit with an upsert of table whose column equals the value must also
// write the row id + suffix in table.
func compileCommitRule(s commitValidatorSpec) (func(server.CommitValidation) error, error) {
	if s.Kind != "requireSiblingWhen" {
		return nil, badRequest("installCommitValidator: unknown kind %q", s.Kind)
	}
	var equals any
	if err := json.Unmarshal(s.Equals, &equals); err != nil || s.Table == "" || s.Column == "" || s.Code == "" {
		return nil, badRequest("installCommitValidator: table, column, a JSON equals and code are required")
	}
	return func(c server.CommitValidation) error {
		for _, op := range c.Ops {
			if op.Table != s.Table || op.Row == nil || !sameValue(op.Row[s.Column], equals) {
				continue
			}
			want := op.RowID + s.SiblingRowIDSuffix
			for _, o := range c.Ops {
				if o.Table == s.Table && o.RowID == want {
					return nil
				}
			}
			return &server.Rejection{Code: s.Code, Message: "aggregate requires a sibling operation (§6.8)", OpIndex: op.OpIndex,
				Details: details(s.Column, "missing_sibling_operation", "repair_aggregate")}
		}
		return nil
	}, nil
}

// validate is the instance's Config.Validate: the installed table's rule.
func (in *instance) validate(_ context.Context, _ server.Identity, v server.OpValidation) error {
	in.mu.Lock()
	rule := in.validators[v.Table]
	in.mu.Unlock()
	if rule == nil {
		return nil
	}
	return rule(v)
}

// validateCommit is the instance's Config.ValidateCommit.
func (in *instance) validateCommit(_ context.Context, _ server.CandidateReader, c server.CommitValidation) error {
	in.mu.Lock()
	rule := in.commitRule
	in.mu.Unlock()
	if rule == nil {
		return nil
	}
	return rule(c)
}

// sameValue compares an engine value with a JSON one (JavaScript's ===
// on the driver seam's values).
func sameValue(engine, js any) bool {
	switch x := engine.(type) {
	case nil:
		return js == nil
	case bool, string:
		return engine == js
	case int64:
		f, ok := js.(float64)
		return ok && f == float64(x)
	case float64:
		f, ok := js.(float64)
		return ok && f == x && !math.IsNaN(x)
	}
	return false
}

// sameStored compares two engine values of one column.
func sameStored(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	case nil, bool, string, int64, float64, sync.JSON:
		return a == b
	}
	return false
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// details is the §6.3.1 correction hint upstream's rules attach.
func details(column, reason, action string) sync.JSON {
	return sync.JSON(`{"fieldPaths":["` + jsonEscape(column) + `"],"reason":"` + reason + `","requiredAction":"` + action + `"}`)
}
