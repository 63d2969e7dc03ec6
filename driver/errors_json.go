package driver

import "encoding/json"

// errorJSON is the JSON form of an *Error (docs/wire.md).
type errorJSON struct {
	Code       Code       `json:"code"`
	Message    string     `json:"message"`
	Rule       string     `json:"rule,omitempty"`
	Retryable  bool       `json:"retryable"`
	Column     string     `json:"column,omitempty"`
	Capability Capability `json:"capability,omitempty"`
	OpIndex    *int       `json:"opIndex,omitempty"`
}

// MarshalJSON encodes e as {"code", "message", "rule", "retryable",
// "column", "capability", "opIndex"}: retryable is Code.Retryable(); rule,
// column, capability are omitted when empty, opIndex when -1. The cause
// (Err) is not part of it: its text may name the engine and its state.
func (e *Error) MarshalJSON() ([]byte, error) {
	j := errorJSON{Code: e.Code, Message: e.Message, Rule: e.Rule, Retryable: e.Code.Retryable(),
		Column: e.Column, Capability: e.Capability}
	if e.OpIndex >= 0 {
		j.OpIndex = &e.OpIndex
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes MarshalJSON's form; a missing opIndex is -1,
// retryable is not read (it follows from the code).
func (e *Error) UnmarshalJSON(b []byte) error {
	var j errorJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Error{Code: j.Code, Message: j.Message, Rule: j.Rule, Column: j.Column, Capability: j.Capability, OpIndex: -1}
	if j.OpIndex != nil {
		e.OpIndex = *j.OpIndex
	}
	return nil
}
