package sync

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/syncstore/syncstore/driver"
)

// The JSON form of the types a host sends to clients and takes from them
// (docs/wire.md): PushRequest, PushOp, PushResponse (PushResult, OpResult),
// PullRequest, PullSubscription, PullResponse, PullResult, Row, Change,
// Commit and *Error carry camelCase json tags; what the host sets itself
// (PushRequest.ActorID, PullRequest.ActorID, AtMs, RestartBootstraps,
// RecordScopes) and what is the store's own (PushResult.CacheIdentity) is
// json:"-". A row's values encode as a JSON object by column: string,
// integer (exact as a Go int64; a JavaScript client reads integers beyond
// ±2^53 inexactly), float, boolean and null as themselves, a json column's
// document as a JSON string of its text, a bytes column as a standard
// base64 string. JSON cannot tell those apart, so values decoded from it
// are typed by the schema: TypeValues, TypePushRequest.

// TypeValues returns v with each value of a column of table in schema
// given the Go type of the column (SCH-1) as JSON decoding left it: a
// json.Number or a float64 of an integer column → int64 (exact, else
// CodeInvalidValue), of a float column → float64; a string of a json
// column → JSON, of a bytes column → the []byte its base64 encodes (else
// CodeInvalidValue). Other values, and columns the table does not have,
// are kept as they are (Push's checks, V-3, judge them). An unknown table
// → CodeUnknownTable. v itself is not modified; nil stays nil.
func TypeValues(schema Schema, table string, v Values) (Values, error) {
	const op = "TypeValues"
	t, ok := schema.Table(table)
	if !ok {
		return nil, driver.Errorf(CodeUnknownTable, "%s: table %q is not in the schema (SCH-8)", op, table)
	}
	if v == nil {
		return nil, nil
	}
	out := make(Values, len(v))
	for k, x := range v {
		out[k] = x
		c, ok := t.Column(k)
		if !ok || x == nil {
			continue
		}
		var err error
		switch c.Type {
		case TypeInteger:
			out[k], err = jsonInt(x)
		case TypeFloat:
			out[k], err = jsonFloat(x)
		case TypeJSON:
			if s, ok := x.(string); ok {
				out[k] = JSON(s)
			}
		case TypeBytes:
			if s, ok := x.(string); ok {
				out[k], err = base64.StdEncoding.DecodeString(s)
				if b, _ := out[k].([]byte); err == nil && b == nil {
					out[k] = []byte{}
				}
			}
		}
		if err != nil {
			return nil, valueErr(op, k, "V-3", "column %q of table %q: %v", k, table, err)
		}
	}
	return out, nil
}

func jsonInt(x any) (any, error) {
	switch n := x.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not an integer within int64", n)
		}
		return i, nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return nil, fmt.Errorf("%v is not an exact integer (decode with UseNumber)", n)
		}
		return int64(n), nil
	}
	return x, nil
}

func jsonFloat(x any) (any, error) {
	if n, ok := x.(json.Number); ok {
		f, err := n.Float64()
		if err != nil {
			return nil, fmt.Errorf("%s is not a float", n)
		}
		return f, nil
	}
	return x, nil
}

// TypePushRequest types the values of every op of req by schema
// (TypeValues), in place; the error of the first op that fails carries
// its index (OpIndex).
func TypePushRequest(schema Schema, req *PushRequest) error {
	for i := range req.Ops {
		v, err := TypeValues(schema, req.Ops[i].Table, req.Ops[i].Values)
		if err != nil {
			return withOpIndex(err, i)
		}
		req.Ops[i].Values = v
	}
	return nil
}
