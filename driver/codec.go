package driver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// This file is a typed text encoding of Values and PushResult that any
// driver may use to store them in one text column and read them back
// exactly (VAL-1, PR-1). Each value is a two-element array [tag, payload]:
//
//	["s", "text"]   string          ["i", "-9223372036854775808"] int64 (decimal text, exact)
//	["f", "0.1"]    float64 (shortest text that parses back to the same bits)
//	["b", true]     bool            ["j", "{\"a\": 1}"] JSON (its text, byte-for-byte)
//	["x", "AAE="]   []byte (standard base64; "" is the empty value)
//	null            NULL

// EncodeValues encodes v as a JSON object of tagged values (the text
// encoding/json.Marshal writes for the map of tagged values: keys sorted,
// HTML-safe escapes; written by AppendValues without reflection). It
// fails with CodeInvalidValue for a value of a type outside ColumnType's
// list or a non-finite float.
func EncodeValues(v Values) ([]byte, error) {
	return AppendValues(make([]byte, 0, 32+48*len(v)), v)
}

// DecodeValues decodes what EncodeValues wrote. "null" decodes to nil.
func DecodeValues(data []byte) (Values, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decode values: %w", err)
	}
	if raw == nil {
		return nil, nil
	}
	out := make(Values, len(raw))
	for k, r := range raw {
		x, err := untagValue(r)
		if err != nil {
			return nil, fmt.Errorf("decode values: column %q: %w", k, err)
		}
		out[k] = x
	}
	return out, nil
}

func tagValue(x any) (any, error) {
	switch v := x.(type) {
	case nil:
		return nil, nil
	case string:
		return [2]any{"s", v}, nil
	case int64:
		return [2]any{"i", strconv.FormatInt(v, 10)}, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("float is not finite")
		}
		return [2]any{"f", strconv.FormatFloat(v, 'g', -1, 64)}, nil
	case bool:
		return [2]any{"b", v}, nil
	case JSON:
		return [2]any{"j", string(v)}, nil
	case []byte:
		if v == nil {
			return nil, fmt.Errorf("[]byte(nil) is ambiguous: use nil for NULL or []byte{} for empty")
		}
		return [2]any{"x", base64.StdEncoding.EncodeToString(v)}, nil
	}
	return nil, fmt.Errorf("unsupported value type %T", x)
}

func untagValue(r json.RawMessage) (any, error) {
	if string(r) == "null" {
		return nil, nil
	}
	var pair []json.RawMessage
	if err := json.Unmarshal(r, &pair); err != nil {
		return nil, err
	}
	if len(pair) != 2 || string(pair[1]) == "null" {
		return nil, fmt.Errorf("a tagged value is [tag, payload] with a non-null payload")
	}
	var tag string
	if err := json.Unmarshal(pair[0], &tag); err != nil {
		return nil, err
	}
	if tag == "b" {
		var b bool
		err := json.Unmarshal(pair[1], &b)
		return b, err
	}
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return nil, err
	}
	switch tag {
	case "s":
		return s, nil
	case "i":
		return strconv.ParseInt(s, 10, 64)
	case "f":
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			err = fmt.Errorf("float is not finite")
		}
		return f, err
	case "j":
		return JSON(s), nil
	case "x":
		b, err := base64.StdEncoding.DecodeString(s)
		if err == nil && b == nil {
			b = []byte{}
		}
		return b, err
	}
	return nil, fmt.Errorf("unknown value tag %q", tag)
}

type opResultWire struct {
	Status        OpStatus        `json:"status"`
	Code          string          `json:"code,omitempty"`
	Message       string          `json:"message,omitempty"`
	ServerVersion int64           `json:"serverVersion,omitempty"`
	ServerRow     json.RawMessage `json:"serverRow,omitempty"`
	Retryable     bool            `json:"retryable,omitempty"`
	Details       *string         `json:"details,omitempty"`
}

type pushResultWire struct {
	Status        PushStatus     `json:"status"`
	CommitSeq     int64          `json:"commitSeq,omitempty"`
	RecordedAtMs  int64          `json:"recordedAtMs"`
	CacheIdentity string         `json:"cacheIdentity,omitempty"`
	Ops           []opResultWire `json:"ops"`
}

// EncodePushResult encodes r for storage (PR-1). It fails with
// CodeInvalidValue when a ServerRow value cannot be encoded.
func EncodePushResult(r PushResult) ([]byte, error) {
	w := pushResultWire{Status: r.Status, CommitSeq: r.CommitSeq, RecordedAtMs: r.RecordedAtMs,
		CacheIdentity: r.CacheIdentity, Ops: make([]opResultWire, len(r.Ops))}
	for i, op := range r.Ops {
		o := opResultWire{Status: op.Status, Code: op.Code, Message: op.Message,
			ServerVersion: op.ServerVersion, Retryable: op.Retryable}
		if op.ServerRow != nil {
			b, err := EncodeValues(op.ServerRow)
			if err != nil {
				return nil, err
			}
			o.ServerRow = b
		}
		if op.Details != "" {
			d := string(op.Details)
			o.Details = &d
		}
		w.Ops[i] = o
	}
	return json.Marshal(w)
}

// DecodePushResult decodes what EncodePushResult wrote. Anything it cannot
// decode, or a status other than applied/rejected, or an unknown op
// status, is CodeIdempotencyCacheMiss (PR-5): never a guess.
func DecodePushResult(data []byte) (PushResult, error) {
	miss := func(why string, err error) (PushResult, error) {
		return PushResult{}, &Error{Code: CodeIdempotencyCacheMiss, Message: "stored push result " + why, OpIndex: -1, Err: err}
	}
	var w pushResultWire
	if err := json.Unmarshal(data, &w); err != nil {
		return miss("cannot be decoded", err)
	}
	if w.Status != PushApplied && w.Status != PushRejected {
		return miss("has an unknown status", nil)
	}
	if (w.Status == PushApplied) != (w.CommitSeq > 0) {
		return miss("has a commit seq that does not match its status", nil)
	}
	r := PushResult{Status: w.Status, CommitSeq: w.CommitSeq, RecordedAtMs: w.RecordedAtMs,
		CacheIdentity: w.CacheIdentity, Ops: make([]OpResult, len(w.Ops))}
	for i, o := range w.Ops {
		switch o.Status {
		case OpApplied, OpConflict, OpError:
		default:
			return miss("has an unknown operation status", nil)
		}
		op := OpResult{Status: o.Status, Code: o.Code, Message: o.Message,
			ServerVersion: o.ServerVersion, Retryable: o.Retryable}
		if len(o.ServerRow) > 0 {
			v, err := DecodeValues(o.ServerRow)
			if err != nil {
				return miss("has an undecodable server row", err)
			}
			op.ServerRow = v
		}
		if o.Details != nil {
			op.Details = JSON(*o.Details)
		}
		r.Ops[i] = op
	}
	return r, nil
}
