package ssp2

import (
	"encoding/base64"
	"math"
	"strconv"

	"github.com/syncstore/syncstore/driver"
)

// The §11.1 canonical JSON debug rendering: non-contractual for the wire,
// contractual for the golden vectors. Output is compact JSON as
// JavaScript's JSON.stringify writes it; pass it through json.Indent for
// reading.

// Render decodes b as an SSP2 message or a rows segment (told apart by the
// magic) and returns its §11 rendering, or the decode error.
func Render(b []byte) ([]byte, error) {
	if len(b) >= 4 && string(b[:4]) == SegmentMagic {
		s, err := DecodeSegment(b)
		if err != nil {
			return nil, err
		}
		return s.Render(), nil
	}
	m, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return m.Render(), nil
}

// Render returns m's §11.1 rendering: {"magic":"SSP2","wireVersion":…,
// "msgKind":…,"frames":[…]}, frames in wire order without END, fields in
// the SPEC's table order, absent opt() fields omitted, bytes as standard
// base64, enums by name, json fields embedded as parsed JSON, unknown
// frames as {"type":"UNKNOWN","frameType":n,"payload":…}.
func (m *Message) Render() []byte {
	w := jw{}
	w.raw(`{"magic":"SSP2","wireVersion":`)
	w.int(int64(m.WireVersion))
	w.raw(`,"msgKind":`)
	w.str(m.Kind.String())
	w.raw(`,"frames":[`)
	for i, f := range m.Frames {
		if i > 0 {
			w.raw(",")
		}
		renderFrame(&w, f)
	}
	w.raw("]}")
	return w.b
}

// jw writes JSON objects field by field.
type jw struct {
	b []byte
}

func (w *jw) raw(s string)    { w.b = append(w.b, s...) }
func (w *jw) str(s string)    { w.b = appendJSString(w.b, s) }
func (w *jw) int(n int64)     { w.b = strconv.AppendInt(w.b, n, 10) }
func (w *jw) bytes(b []byte)  { w.b = append(base64.StdEncoding.AppendEncode(append(w.b, '"'), b), '"') }
func (w *jw) open(typ string) { w.raw(`{"type":`); w.str(typ) }
func (w *jw) close()          { w.raw("}") }

func (w *jw) key(k string) {
	w.b = append(w.b, ',')
	w.b = appendJSString(w.b, k)
	w.b = append(w.b, ':')
}

func (w *jw) fstr(k, v string)       { w.key(k); w.str(v) }
func (w *jw) fint(k string, v int64) { w.key(k); w.int(v) }
func (w *jw) fbool(k string, v bool) { w.key(k); w.b = appendBool(w.b, v) }
func (w *jw) fbytes(k string, v []byte) {
	w.key(k)
	w.bytes(v)
}

// fjson embeds a json field as JSON.stringify(JSON.parse(text)) would.
func (w *jw) fjson(k string, v driver.JSON) {
	w.key(k)
	w.json(v)
}

func (w *jw) json(v driver.JSON) {
	tree, ok := parseJSON([]byte(v))
	if !ok { // not reached for decoded values
		w.raw("null")
		return
	}
	w.b = appendJSValue(w.b, &tree)
}

func (w *jw) scopeLists(k string, m map[string][]string) {
	w.key(k)
	w.b = append(w.b, '{')
	for i, key := range sortedKeysUTF16(m) {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(key)
		w.b = append(w.b, ':', '[')
		for j, v := range m[key] {
			if j > 0 {
				w.b = append(w.b, ',')
			}
			w.str(v)
		}
		w.b = append(w.b, ']')
	}
	w.b = append(w.b, '}')
}

func (w *jw) scopes(k string, m map[string]string) {
	w.key(k)
	w.b = append(w.b, '{')
	for i, key := range sortedKeysUTF16(m) {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(key)
		w.b = append(w.b, ':')
		w.str(m[key])
	}
	w.b = append(w.b, '}')
}

func renderFrame(w *jw, f Frame) {
	switch f := f.(type) {
	case *ReqHeader:
		w.open("REQ_HEADER")
		w.fstr("clientId", f.ClientID)
		w.fint("schemaVersion", int64(f.SchemaVersion))
		if f.LogEpoch != "" {
			w.fstr("logEpoch", f.LogEpoch)
		}
	case *PushCommit:
		w.open("PUSH_COMMIT")
		w.fstr("clientCommitId", f.ClientCommitID)
		w.key("operations")
		w.raw("[")
		for i, op := range f.Operations {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"table":`)
			w.str(op.Table)
			w.fstr("rowId", op.RowID)
			w.fstr("op", op.Op.String())
			if op.BaseVersion.Present {
				w.fint("baseVersion", op.BaseVersion.Value)
			}
			if op.Op == OpUpsert {
				w.fbytes("payload", op.Payload)
			}
			w.raw("}")
		}
		w.raw("]")
	case *PullHeader:
		w.open("PULL_HEADER")
		w.fint("limitCommits", int64(f.LimitCommits))
		w.fint("limitSnapshotRows", int64(f.LimitSnapshotRows))
		w.fint("maxSnapshotPages", int64(f.MaxSnapshotPages))
		w.fint("accept", int64(f.Accept))
	case *Subscription:
		w.open("SUBSCRIPTION")
		w.fstr("id", f.ID)
		w.fstr("table", f.Table)
		w.scopeLists("scopes", f.Scopes)
		if f.Params != "" {
			w.fjson("params", f.Params)
		}
		w.fint("cursor", f.Cursor)
		if f.BootstrapState != "" {
			w.fjson("bootstrapState", f.BootstrapState)
		}
	case *RespHeader:
		w.open("RESP_HEADER")
		if f.RequiredSchemaVersion.Present {
			w.fint("requiredSchemaVersion", int64(f.RequiredSchemaVersion.Value))
		}
		if f.LatestSchemaVersion.Present {
			w.fint("latestSchemaVersion", int64(f.LatestSchemaVersion.Value))
		}
		if f.LogEpoch != "" { // wire version 2
			w.fstr("logEpoch", f.LogEpoch)
			w.fbool("resetRequired", f.ResetRequired)
		}
	case *Lease:
		w.open("LEASE")
		w.fstr("leaseId", f.LeaseID)
		w.fint("expiresAtMs", f.ExpiresAtMs)
	case *PushResult:
		w.open("PUSH_RESULT")
		w.fstr("clientCommitId", f.ClientCommitID)
		w.fstr("status", f.Status.String())
		if f.Status != PushRejected {
			w.fint("commitSeq", f.CommitSeq)
		}
		w.key("results")
		w.raw("[")
		for i, r := range f.Results {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"opIndex":`)
			w.int(int64(r.OpIndex))
			w.fstr("status", r.Status.String())
			switch r.Status {
			case OpConflict:
				w.fstr("code", r.Code)
				w.fstr("message", r.Message)
				w.fint("serverVersion", r.ServerVersion)
				w.fbytes("serverRow", r.ServerRow)
			case OpError:
				w.fstr("code", r.Code)
				w.fstr("message", r.Message)
				w.fbool("retryable", r.Retryable)
			}
			w.raw("}")
		}
		w.raw("]")
	case *PushResultDetails:
		w.open("PUSH_RESULT_DETAILS")
		w.fstr("clientCommitId", f.ClientCommitID)
		w.key("entries")
		w.raw("[")
		for i, d := range f.Entries {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"opIndex":`)
			w.int(int64(d.OpIndex))
			w.fjson("details", d.Details)
			w.raw("}")
		}
		w.raw("]")
	case *SubStart:
		w.open("SUB_START")
		w.fstr("id", f.ID)
		w.fstr("status", f.Status.String())
		w.fstr("reasonCode", f.ReasonCode)
		w.scopeLists("effectiveScopes", f.EffectiveScopes)
		w.fbool("bootstrap", f.Bootstrap)
	case *Commit:
		w.open("COMMIT")
		w.fint("commitSeq", f.CommitSeq)
		w.fint("createdAtMs", f.CreatedAtMs)
		w.fstr("actorId", f.ActorID)
		w.key("tables")
		w.raw("[")
		for i, t := range f.Tables {
			if i > 0 {
				w.raw(",")
			}
			w.str(t)
		}
		w.raw("]")
		w.key("changes")
		w.raw("[")
		for i, c := range f.Changes {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"tableIndex":`)
			w.int(int64(c.TableIndex))
			w.fstr("rowId", c.RowID)
			w.fstr("op", c.Op.String())
			if c.Op == OpUpsert {
				w.fint("rowVersion", c.RowVersion)
			}
			w.scopes("scopes", c.Scopes)
			if c.Op == OpUpsert {
				w.fbytes("row", c.Row)
			}
			w.raw("}")
		}
		w.raw("]")
	case *SegmentRef:
		w.open("SEGMENT_REF")
		w.fstr("segmentId", f.SegmentID)
		w.fstr("mediaType", f.MediaType.String())
		w.fstr("table", f.Table)
		w.fint("byteLength", f.ByteLength)
		w.fint("rowCount", f.RowCount)
		w.fint("asOfCommitSeq", f.AsOfCommitSeq)
		w.fstr("scopeDigest", f.ScopeDigest)
		if f.RowCursor.Present {
			w.fstr("rowCursor", f.RowCursor.Value)
		}
		if f.NextRowCursor.Present {
			w.fstr("nextRowCursor", f.NextRowCursor.Value)
		}
		if f.URL.Present {
			w.fstr("url", f.URL.Value)
			w.fint("urlExpiresAtMs", f.URLExpiresAtMs)
		}
	case *SegmentInline:
		w.open("SEGMENT_INLINE")
		w.fbytes("payload", f.Payload)
	case *SubEnd:
		w.open("SUB_END")
		w.fint("nextCursor", f.NextCursor)
		if f.BootstrapState != "" {
			w.fjson("bootstrapState", f.BootstrapState)
		}
	case *ErrorFrame:
		w.open("ERROR")
		w.fstr("code", f.Code)
		w.fstr("message", f.Message)
		w.fstr("category", f.Category)
		w.fbool("retryable", f.Retryable)
		w.fstr("recommendedAction", f.RecommendedAction)
		if f.Details != "" {
			w.fjson("details", f.Details)
		}
	case *UnknownFrame:
		w.open("UNKNOWN")
		w.fint("frameType", int64(f.FrameType))
		w.fbytes("payload", f.Payload)
	}
	w.close()
}

// Render returns the segment's §11.1 rule 8 rendering:
// {"magic":"SSG2","formatVersion":1,"table":…,"schemaVersion":…,
// "columns":[{"name","type","nullable"}…],"blocks":[[{"serverVersion":…,
// "values":{name: value…}}…]…]}, NULL as null, bytes and crdt as base64,
// json and blob_ref embedded as parsed JSON, non-finite floats as null.
func (s *Segment) Render() []byte {
	w := jw{}
	w.raw(`{"magic":"SSG2","formatVersion":1`)
	w.fstr("table", s.Table)
	w.fint("schemaVersion", int64(s.SchemaVersion))
	w.key("columns")
	w.raw("[")
	for i, c := range s.Columns {
		if i > 0 {
			w.raw(",")
		}
		w.raw(`{"name":`)
		w.str(c.Name)
		w.fstr("type", c.Type.String())
		w.fbool("nullable", c.Nullable)
		w.raw("}")
	}
	w.raw("]")
	w.key("blocks")
	w.raw("[")
	for bi, block := range s.Blocks {
		if bi > 0 {
			w.raw(",")
		}
		w.raw("[")
		for ri, row := range block {
			if ri > 0 {
				w.raw(",")
			}
			w.raw(`{"serverVersion":`)
			w.int(row.ServerVersion)
			w.key("values")
			w.b = appendRowValues(w.b, s.Columns, row.Values)
			w.raw("}")
		}
		w.raw("]")
	}
	w.raw("]}")
	return w.b
}

// appendRowValues renders a row as {name: value…} (a JavaScript object
// built from the columns in order: a repeated name keeps its first
// position and last value).
func appendRowValues(dst []byte, cols []Column, vals []any) []byte {
	members := make([]jsonMember, len(cols))
	for i, c := range cols {
		var v any
		if i < len(vals) {
			v = vals[i]
		}
		members[i] = jsonMember{key: c.Name, val: renderValue(c.Type, v)}
	}
	tree := jsonValue{kind: jsonObject, members: members}
	return appendJSValue(dst, &tree)
}

// renderValue turns a row value into a JSON tree for appendJSValue.
func renderValue(t ColumnType, v any) jsonValue {
	switch x := v.(type) {
	case nil:
		return jsonValue{}
	case string:
		return jsonValue{kind: jsonString, s: x}
	case int64:
		return jsonValue{kind: jsonNumber, s: strconv.FormatInt(x, 10)}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return jsonValue{} // §11.1 rule 10
		}
		return jsonValue{kind: jsonNumber, s: strconv.FormatFloat(x, 'g', -1, 64)}
	case bool:
		return jsonValue{kind: jsonBool, b: x}
	case driver.JSON:
		tree, ok := parseJSON([]byte(x))
		if !ok {
			return jsonValue{}
		}
		return tree
	case []byte:
		return jsonValue{kind: jsonString, s: base64.StdEncoding.EncodeToString(x)}
	}
	return jsonValue{}
}
