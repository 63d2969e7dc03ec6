package ssp2

import (
	"strconv"

	"github.com/syncstore/syncstore/driver"
)

// FrameType is a frame's type byte (SPEC §1.2 registry).
type FrameType uint8

// The frame types with a layout in wire versions 1 and 2. Every other
// byte is unknown: a decoder preserves such a frame as an *UnknownFrame.
const (
	FrameEnd               FrameType = 0x00
	FrameReqHeader         FrameType = 0x01
	FramePushCommit        FrameType = 0x02
	FramePullHeader        FrameType = 0x03
	FrameSubscription      FrameType = 0x04
	FrameRespHeader        FrameType = 0x10
	FramePushResult        FrameType = 0x11
	FrameSubStart          FrameType = 0x12
	FrameCommit            FrameType = 0x13
	FrameSegmentRef        FrameType = 0x14
	FrameSegmentInline     FrameType = 0x15
	FrameSubEnd            FrameType = 0x16
	FrameLease             FrameType = 0x19
	FramePushResultDetails FrameType = 0x1B
	FrameError             FrameType = 0x1F
)

// String returns the SPEC name ("PUSH_COMMIT"), or "UNKNOWN(0xNN)".
func (t FrameType) String() string {
	switch t {
	case FrameEnd:
		return "END"
	case FrameReqHeader:
		return "REQ_HEADER"
	case FramePushCommit:
		return "PUSH_COMMIT"
	case FramePullHeader:
		return "PULL_HEADER"
	case FrameSubscription:
		return "SUBSCRIPTION"
	case FrameRespHeader:
		return "RESP_HEADER"
	case FramePushResult:
		return "PUSH_RESULT"
	case FrameSubStart:
		return "SUB_START"
	case FrameCommit:
		return "COMMIT"
	case FrameSegmentRef:
		return "SEGMENT_REF"
	case FrameSegmentInline:
		return "SEGMENT_INLINE"
	case FrameSubEnd:
		return "SUB_END"
	case FrameLease:
		return "LEASE"
	case FramePushResultDetails:
		return "PUSH_RESULT_DETAILS"
	case FrameError:
		return "ERROR"
	}
	return "UNKNOWN(0x" + strconv.FormatUint(uint64(t), 16) + ")"
}

// Kind reports which message kind registers t: KindRequest,
// KindResponse, 0 for END (both) and for unknown types.
func (t FrameType) Kind() Kind {
	switch t {
	case FrameReqHeader, FramePushCommit, FramePullHeader, FrameSubscription:
		return KindRequest
	case FrameRespHeader, FramePushResult, FrameSubStart, FrameCommit, FrameSegmentRef,
		FrameSegmentInline, FrameSubEnd, FrameLease, FramePushResultDetails, FrameError:
		return KindResponse
	}
	return 0
}

// Registered reports whether t has a layout in wire versions 1 and 2 (END
// included).
func (t FrameType) Registered() bool { return t == FrameEnd || t.Kind() != 0 }

// Kind is a message kind (the envelope's msgKind byte).
type Kind uint8

// The message kinds.
const (
	KindRequest  Kind = 0x01
	KindResponse Kind = 0x02
)

// String returns "request" or "response".
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindResponse:
		return "response"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Op is an operation or change kind (§6.1, §4.5).
type Op uint8

// The two operations.
const (
	OpUpsert Op = 1
	OpDelete Op = 2
)

// String returns "upsert" or "delete".
func (o Op) String() string {
	switch o {
	case OpUpsert:
		return "upsert"
	case OpDelete:
		return "delete"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// DriverOp returns o as the engine's driver.Op.
func (o Op) DriverOp() driver.Op {
	if o == OpDelete {
		return driver.OpDelete
	}
	return driver.OpUpsert
}

// PushStatus is a PUSH_RESULT status (§6.3).
type PushStatus uint8

// The push statuses.
const (
	PushApplied  PushStatus = 1
	PushCached   PushStatus = 2
	PushRejected PushStatus = 3
)

// String returns "applied", "cached" or "rejected".
func (s PushStatus) String() string {
	switch s {
	case PushApplied:
		return "applied"
	case PushCached:
		return "cached"
	case PushRejected:
		return "rejected"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// OpStatus is a PUSH_RESULT result record's status (§6.3).
type OpStatus uint8

// The result record statuses.
const (
	OpApplied  OpStatus = 1
	OpConflict OpStatus = 2
	OpError    OpStatus = 3
)

// String returns "applied", "conflict" or "error".
func (s OpStatus) String() string {
	switch s {
	case OpApplied:
		return "applied"
	case OpConflict:
		return "conflict"
	case OpError:
		return "error"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// SubStatus is a SUB_START status (§4.4).
type SubStatus uint8

// The subscription statuses.
const (
	SubActive  SubStatus = 1
	SubRevoked SubStatus = 2
	SubReset   SubStatus = 3
)

// String returns "active", "revoked" or "reset".
func (s SubStatus) String() string {
	switch s {
	case SubActive:
		return "active"
	case SubRevoked:
		return "revoked"
	case SubReset:
		return "reset"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// MediaType is a SEGMENT_REF media type (§5.4).
type MediaType uint8

// The segment media types.
const (
	MediaRows   MediaType = 1
	MediaSQLite MediaType = 2
)

// String returns "rows" or "sqlite".
func (m MediaType) String() string {
	switch m {
	case MediaRows:
		return "rows"
	case MediaSQLite:
		return "sqlite"
	}
	return "mediaType(" + strconv.Itoa(int(m)) + ")"
}

// Accept bits of PULL_HEADER.accept (§4.2). Bits 4–7 must be zero.
const (
	AcceptInlineRows   uint8 = 1 << 0
	AcceptExternalRows uint8 = 1 << 1
	AcceptSQLite       uint8 = 1 << 2
	AcceptSignedURLs   uint8 = 1 << 3
)

// Frame is one decoded frame: a pointer to one of the frame structs of
// this package (*ReqHeader … *ErrorFrame) or an *UnknownFrame. The set is
// closed.
type Frame interface {
	// Type returns the frame's type byte.
	Type() FrameType
	// encode appends the frame's payload; wv is the message's wire version.
	encode(e *encoder, wv uint16)
}

// ReqHeader is REQ_HEADER (§1.5): first frame of every request.
type ReqHeader struct {
	// ClientID is non-empty.
	ClientID string
	// SchemaVersion is ≥ 1.
	SchemaVersion int32
	// LogEpoch is the client's partition log identity (wire version 2
	// only, non-empty when present); "" when absent (epoch acquisition),
	// and always "" on wire version 1.
	LogEpoch string
}

// PushOperation is one operation record of a PUSH_COMMIT (§6.1).
type PushOperation struct {
	Table string
	RowID string
	Op    Op
	// BaseVersion is the optimistic-concurrency token; absent means last
	// writer wins. A delete may carry one (the server ignores it).
	BaseVersion Opt[int64]
	// Payload is the row in the table's row codec for the request's schema
	// version: present (non-nil after decode, possibly empty) for an
	// upsert, nil for a delete. Opaque to the envelope codec; decode it with
	// a RowCodec. After decode it aliases the input bytes.
	Payload []byte
}

// PushCommit is PUSH_COMMIT (§6.1): one client commit.
type PushCommit struct {
	// ClientCommitID is non-empty.
	ClientCommitID string
	// Operations has ≥ 1 element (else CodeEmptyCommit).
	Operations []PushOperation
}

// PullHeader is PULL_HEADER (§4.2). The limits are as sent; clamping is
// the server's.
type PullHeader struct {
	LimitCommits      int32
	LimitSnapshotRows int32
	MaxSnapshotPages  int32
	// Accept is the Accept* bitmask; bits 4–7 are zero.
	Accept uint8
}

// Subscription is SUBSCRIPTION (§4.3).
type Subscription struct {
	ID    string
	Table string
	// Scopes are the requested scopes: variable → values.
	Scopes map[string][]string
	// Params is host-opaque JSON, "" when absent.
	Params driver.JSON
	// Cursor is the last fully applied commitSeq; -1 = never synced.
	Cursor int64
	// BootstrapState is the resume token from a previous SUB_END, as
	// sent; "" when absent.
	BootstrapState driver.JSON
}

// RespHeader is RESP_HEADER (§1.6): first frame of every response.
type RespHeader struct {
	RequiredSchemaVersion Opt[int32]
	LatestSchemaVersion   Opt[int32]
	// LogEpoch (non-empty) and ResetRequired exist on wire version 2 only;
	// they are zero on wire version 1.
	LogEpoch      string
	ResetRequired bool
}

// Lease is LEASE (§7.3.2): at most one, right after RESP_HEADER.
type Lease struct {
	// LeaseID is non-empty.
	LeaseID     string
	ExpiresAtMs int64
}

// OpResult is one result record of a PUSH_RESULT (§6.3), a tagged union
// on Status: OpApplied has no further fields; OpConflict has Code,
// Message, ServerVersion and ServerRow; OpError has Code, Message and
// Retryable. Fields of the other variants are ignored when encoding and
// zero after decoding.
type OpResult struct {
	OpIndex       int32
	Status        OpStatus
	Code          string
	Message       string
	ServerVersion int64
	// ServerRow is the current row in the row codec (aliases the input
	// after decode).
	ServerRow []byte
	Retryable bool
}

// PushResult is PUSH_RESULT (§6.3): one per PUSH_COMMIT, in order.
type PushResult struct {
	ClientCommitID string
	Status         PushStatus
	// CommitSeq is on the wire iff Status is applied or cached; it is
	// ignored when encoding a rejected result and 0 after decoding one.
	CommitSeq int64
	Results   []OpResult
}

// DetailEntry is one entry of a PUSH_RESULT_DETAILS frame.
type DetailEntry struct {
	// OpIndex is unique in the frame, ≥ 0, and the opIndex of an error
	// record of the preceding PUSH_RESULT.
	OpIndex int32
	// Details is the detailsJson object, kept as sent; it has the bounded
	// shape of §6.3.1 (see CheckRejectionDetails).
	Details driver.JSON
}

// PushResultDetails is PUSH_RESULT_DETAILS (§6.3.1): recovery metadata
// right after a rejected PUSH_RESULT with the same ClientCommitID.
type PushResultDetails struct {
	ClientCommitID string
	// Entries has ≥ 1 element.
	Entries []DetailEntry
}

// SubStart is SUB_START (§4.4): opens one subscription's section.
type SubStart struct {
	ID         string
	Status     SubStatus
	ReasonCode string
	// EffectiveScopes are variable → values (empty when not active).
	EffectiveScopes map[string][]string
	Bootstrap       bool
}

// CommitChange is one change record of a COMMIT (§4.5).
type CommitChange struct {
	// TableIndex indexes the frame's Tables.
	TableIndex uint16
	RowID      string
	Op         Op
	// RowVersion is on the wire for an upsert only.
	RowVersion int64
	// Scopes are the row's stored scopes: variable → value.
	Scopes map[string]string
	// Row is the row in the row codec: present for an upsert (possibly
	// empty), nil for a delete. Aliases the input after decode.
	Row []byte
}

// Commit is COMMIT (§4.5): one commit, with a frame-local table
// dictionary.
type Commit struct {
	CommitSeq   int64
	CreatedAtMs int64
	ActorID     string
	Tables      []string
	Changes     []CommitChange
}

// SegmentRef is SEGMENT_REF (§5.4): a bootstrap segment descriptor.
type SegmentRef struct {
	SegmentID     string
	MediaType     MediaType
	Table         string
	ByteLength    int64
	RowCount      int64
	AsOfCommitSeq int64
	ScopeDigest   string
	RowCursor     Opt[string]
	NextRowCursor Opt[string]
	// URL is a signed URL; URLExpiresAtMs is on the wire iff URL is.
	URL            Opt[string]
	URLExpiresAtMs int64
}

// SegmentInline is SEGMENT_INLINE (§5.7): one complete SSG2 rows segment.
type SegmentInline struct {
	// Payload is the segment bytes, magic included (aliases the input after
	// decode). It is structurally valid (ValidateSegment).
	Payload []byte
}

// SubEnd is SUB_END (§4.4): closes a subscription's section.
type SubEnd struct {
	NextCursor int64
	// BootstrapState is present iff the bootstrap is incomplete; "" when
	// absent.
	BootstrapState driver.JSON
}

// ErrorFrame is ERROR (§1.6): an in-band failure; only END may follow.
// ErrorBody.Frame builds one from a catalog code.
type ErrorFrame struct {
	Code              string
	Message           string
	Category          string
	Retryable         bool
	RecommendedAction string
	// Details is a JSON document, "" when absent.
	Details driver.JSON
}

// UnknownFrame is a frame whose type has no layout in wire versions 1 and
// 2, preserved byte-for-byte where it appeared (§1.2 rule 2). An encoder
// refuses one whose FrameType is registered.
type UnknownFrame struct {
	FrameType FrameType
	// Payload aliases the input after decode.
	Payload []byte
}

// Type methods.
func (*ReqHeader) Type() FrameType         { return FrameReqHeader }
func (*PushCommit) Type() FrameType        { return FramePushCommit }
func (*PullHeader) Type() FrameType        { return FramePullHeader }
func (*Subscription) Type() FrameType      { return FrameSubscription }
func (*RespHeader) Type() FrameType        { return FrameRespHeader }
func (*Lease) Type() FrameType             { return FrameLease }
func (*PushResult) Type() FrameType        { return FramePushResult }
func (*PushResultDetails) Type() FrameType { return FramePushResultDetails }
func (*SubStart) Type() FrameType          { return FrameSubStart }
func (*Commit) Type() FrameType            { return FrameCommit }
func (*SegmentRef) Type() FrameType        { return FrameSegmentRef }
func (*SegmentInline) Type() FrameType     { return FrameSegmentInline }
func (*SubEnd) Type() FrameType            { return FrameSubEnd }
func (*ErrorFrame) Type() FrameType        { return FrameError }
func (f *UnknownFrame) Type() FrameType    { return f.FrameType }

// ---- payload encoders ----

func (f *ReqHeader) encode(e *encoder, wv uint16) {
	if f.ClientID == "" {
		e.failf("REQ_HEADER.clientId is empty")
	}
	if f.SchemaVersion < 1 {
		e.failf("REQ_HEADER.schemaVersion is below 1")
	}
	e.str(f.ClientID, "REQ_HEADER.clientId")
	e.i32(f.SchemaVersion)
	if wv >= 2 {
		e.optStr(Opt[string]{Value: f.LogEpoch, Present: f.LogEpoch != ""}, "REQ_HEADER.logEpoch")
	} else if f.LogEpoch != "" {
		e.failf("REQ_HEADER.logEpoch needs wire version 2")
	}
}

func (f *PushCommit) encode(e *encoder, _ uint16) {
	if f.ClientCommitID == "" {
		e.failf("PUSH_COMMIT.clientCommitId is empty")
	}
	if len(f.Operations) == 0 {
		e.failf("PUSH_COMMIT has no operations")
	}
	e.str(f.ClientCommitID, "PUSH_COMMIT.clientCommitId")
	e.length(len(f.Operations), "PUSH_COMMIT.operations")
	for i := range f.Operations {
		op := &f.Operations[i]
		e.str(op.Table, "PUSH_COMMIT operation table")
		e.str(op.RowID, "PUSH_COMMIT operation rowId")
		switch op.Op {
		case OpUpsert, OpDelete:
		default:
			e.failf("PUSH_COMMIT operation %d has op %d", i, op.Op)
		}
		e.u8(uint8(op.Op))
		if op.BaseVersion.Present {
			e.u8(1)
			e.i64(op.BaseVersion.Value, "PUSH_COMMIT operation baseVersion")
		} else {
			e.u8(0)
		}
		if op.Op == OpUpsert {
			e.u8(1)
			e.bytes(op.Payload, "PUSH_COMMIT operation payload")
		} else {
			if op.Payload != nil {
				e.failf("PUSH_COMMIT operation %d is a delete with a payload", i)
			}
			e.u8(0)
		}
	}
}

func (f *PullHeader) encode(e *encoder, _ uint16) {
	if f.Accept&0xF0 != 0 {
		e.failf("PULL_HEADER.accept has bits 4-7 set")
	}
	e.i32(f.LimitCommits)
	e.i32(f.LimitSnapshotRows)
	e.i32(f.MaxSnapshotPages)
	e.u8(f.Accept)
}

func (f *Subscription) encode(e *encoder, _ uint16) {
	e.str(f.ID, "SUBSCRIPTION.id")
	e.str(f.Table, "SUBSCRIPTION.table")
	e.scopeListMap(f.Scopes, "SUBSCRIPTION.scopes")
	e.optJSON(f.Params, "SUBSCRIPTION.params")
	e.i64(f.Cursor, "SUBSCRIPTION.cursor")
	e.optJSON(f.BootstrapState, "SUBSCRIPTION.bootstrapState")
}

func optI32(e *encoder, o Opt[int32]) {
	if !o.Present {
		e.u8(0)
		return
	}
	e.u8(1)
	e.i32(o.Value)
}

func (f *RespHeader) encode(e *encoder, wv uint16) {
	optI32(e, f.RequiredSchemaVersion)
	optI32(e, f.LatestSchemaVersion)
	if wv >= 2 {
		if f.LogEpoch == "" {
			e.failf("RESP_HEADER.logEpoch is empty (required on wire version 2)")
		}
		e.str(f.LogEpoch, "RESP_HEADER.logEpoch")
		e.bool(f.ResetRequired)
	} else if f.LogEpoch != "" || f.ResetRequired {
		e.failf("RESP_HEADER.logEpoch and resetRequired need wire version 2")
	}
}

func (f *Lease) encode(e *encoder, _ uint16) {
	if f.LeaseID == "" {
		e.failf("LEASE.leaseId is empty")
	}
	e.str(f.LeaseID, "LEASE.leaseId")
	e.i64(f.ExpiresAtMs, "LEASE.expiresAtMs")
}

func (f *PushResult) encode(e *encoder, _ uint16) {
	e.str(f.ClientCommitID, "PUSH_RESULT.clientCommitId")
	switch f.Status {
	case PushApplied, PushCached:
		e.u8(uint8(f.Status))
		e.u8(1)
		e.i64(f.CommitSeq, "PUSH_RESULT.commitSeq")
	case PushRejected:
		e.u8(uint8(f.Status))
		e.u8(0)
	default:
		e.failf("PUSH_RESULT.status %d is not a push status", f.Status)
	}
	e.length(len(f.Results), "PUSH_RESULT.results")
	for i := range f.Results {
		r := &f.Results[i]
		e.i32(r.OpIndex)
		e.u8(uint8(r.Status))
		switch r.Status {
		case OpApplied:
		case OpConflict:
			e.str(r.Code, "PUSH_RESULT conflict code")
			e.str(r.Message, "PUSH_RESULT conflict message")
			e.i64(r.ServerVersion, "PUSH_RESULT conflict serverVersion")
			e.bytes(r.ServerRow, "PUSH_RESULT conflict serverRow")
		case OpError:
			e.str(r.Code, "PUSH_RESULT error code")
			e.str(r.Message, "PUSH_RESULT error message")
			e.bool(r.Retryable)
		default:
			e.failf("PUSH_RESULT result %d has status %d", i, r.Status)
		}
	}
}

func (f *PushResultDetails) encode(e *encoder, _ uint16) {
	if f.ClientCommitID == "" {
		e.failf("PUSH_RESULT_DETAILS.clientCommitId is empty")
	}
	if len(f.Entries) == 0 {
		e.failf("PUSH_RESULT_DETAILS has no entries")
	}
	e.str(f.ClientCommitID, "PUSH_RESULT_DETAILS.clientCommitId")
	e.length(len(f.Entries), "PUSH_RESULT_DETAILS.entries")
	for i := range f.Entries {
		d := &f.Entries[i]
		if d.OpIndex < 0 {
			e.failf("PUSH_RESULT_DETAILS entry %d has a negative opIndex", i)
		}
		for j := range i {
			if f.Entries[j].OpIndex == d.OpIndex {
				e.failf("PUSH_RESULT_DETAILS entry %d repeats an opIndex", i)
			}
		}
		if err := CheckRejectionDetails(d.Details); err != nil {
			e.failf("PUSH_RESULT_DETAILS entry %d: %s", i, err.(*Error).Message)
		}
		e.i32(d.OpIndex)
		e.str(string(d.Details), "PUSH_RESULT_DETAILS detailsJson")
	}
}

func (f *SubStart) encode(e *encoder, _ uint16) {
	e.str(f.ID, "SUB_START.id")
	switch f.Status {
	case SubActive, SubRevoked, SubReset:
	default:
		e.failf("SUB_START.status %d is not a subscription status", f.Status)
	}
	e.u8(uint8(f.Status))
	e.str(f.ReasonCode, "SUB_START.reasonCode")
	e.scopeListMap(f.EffectiveScopes, "SUB_START.effectiveScopes")
	e.bool(f.Bootstrap)
}

func (f *Commit) encode(e *encoder, _ uint16) {
	e.i64(f.CommitSeq, "COMMIT.commitSeq")
	e.i64(f.CreatedAtMs, "COMMIT.createdAtMs")
	e.str(f.ActorID, "COMMIT.actorId")
	e.length(len(f.Tables), "COMMIT.tables")
	for _, t := range f.Tables {
		e.str(t, "COMMIT table")
	}
	e.length(len(f.Changes), "COMMIT.changes")
	for i := range f.Changes {
		encodeChange(e, &f.Changes[i], len(f.Tables))
	}
}

func encodeChange(e *encoder, c *CommitChange, tables int) {
	if int(c.TableIndex) >= tables {
		e.failf("COMMIT change tableIndex %d is out of range (%d tables)", c.TableIndex, tables)
	}
	e.u16(c.TableIndex)
	e.str(c.RowID, "COMMIT change rowId")
	switch c.Op {
	case OpUpsert:
		e.u8(1)
		e.u8(1)
		e.i64(c.RowVersion, "COMMIT change rowVersion")
		e.scopeMap(c.Scopes, "COMMIT change scopes")
		e.u8(1)
		e.bytes(c.Row, "COMMIT change row")
	case OpDelete:
		if c.Row != nil {
			e.failf("COMMIT change is a delete with a row")
		}
		e.u8(2)
		e.u8(0)
		e.scopeMap(c.Scopes, "COMMIT change scopes")
		e.u8(0)
	default:
		e.failf("COMMIT change op %d is not an op", c.Op)
	}
}

func (f *SegmentRef) encode(e *encoder, _ uint16) {
	e.str(f.SegmentID, "SEGMENT_REF.segmentId")
	switch f.MediaType {
	case MediaRows, MediaSQLite:
	default:
		e.failf("SEGMENT_REF.mediaType %d is not a media type", f.MediaType)
	}
	e.u8(uint8(f.MediaType))
	e.str(f.Table, "SEGMENT_REF.table")
	e.i64(f.ByteLength, "SEGMENT_REF.byteLength")
	e.i64(f.RowCount, "SEGMENT_REF.rowCount")
	e.i64(f.AsOfCommitSeq, "SEGMENT_REF.asOfCommitSeq")
	e.str(f.ScopeDigest, "SEGMENT_REF.scopeDigest")
	e.optStr(f.RowCursor, "SEGMENT_REF.rowCursor")
	e.optStr(f.NextRowCursor, "SEGMENT_REF.nextRowCursor")
	e.optStr(f.URL, "SEGMENT_REF.url")
	if f.URL.Present {
		e.u8(1)
		e.i64(f.URLExpiresAtMs, "SEGMENT_REF.urlExpiresAtMs")
	} else {
		e.u8(0)
	}
}

func (f *SegmentInline) encode(e *encoder, _ uint16) {
	if err := ValidateSegment(f.Payload); err != nil {
		e.failf("SEGMENT_INLINE payload is not a rows segment: %s", err.(*Error).Message)
	}
	e.buf = append(e.buf, f.Payload...)
}

func (f *SubEnd) encode(e *encoder, _ uint16) {
	e.i64(f.NextCursor, "SUB_END.nextCursor")
	e.optJSON(f.BootstrapState, "SUB_END.bootstrapState")
}

func (f *ErrorFrame) encode(e *encoder, _ uint16) {
	e.str(f.Code, "ERROR.code")
	e.str(f.Message, "ERROR.message")
	e.str(f.Category, "ERROR.category")
	e.bool(f.Retryable)
	e.str(f.RecommendedAction, "ERROR.recommendedAction")
	e.optJSON(f.Details, "ERROR.details")
}

func (f *UnknownFrame) encode(e *encoder, _ uint16) {
	if f.FrameType.Registered() {
		e.failf("an unknown frame cannot use the registered type %s", f.FrameType)
	}
	e.buf = append(e.buf, f.Payload...)
}

// ---- payload decoders: each reads exactly one frame payload ----

func decodeReqHeader(r *reader, wv uint16) *ReqHeader {
	f := &ReqHeader{ClientID: r.str("clientId"), SchemaVersion: r.i32("schemaVersion")}
	if r.err == nil && f.ClientID == "" {
		r.failf("clientId is empty")
	}
	if r.err == nil && f.SchemaVersion < 1 {
		r.failf("schemaVersion is below 1")
	}
	if wv >= 2 && r.present("logEpoch") {
		f.LogEpoch = r.str("logEpoch")
		if r.err == nil && f.LogEpoch == "" {
			r.failf("logEpoch is present and empty")
		}
	}
	return f
}

func decodeOp(r *reader, field string) Op {
	switch o := Op(r.u8(field)); o {
	case OpUpsert, OpDelete:
		return o
	}
	if r.err == nil {
		r.failf("%s at byte %d is not 1 (upsert) or 2 (delete)", field, r.base+r.off-1)
	}
	return 0
}

func decodePushCommit(r *reader) *PushCommit {
	f := &PushCommit{ClientCommitID: r.str("clientCommitId")}
	if r.err == nil && f.ClientCommitID == "" {
		r.failf("clientCommitId is empty")
	}
	n := r.count("operations", 4+4+1+1+1)
	if r.err == nil && n == 0 {
		r.failf("no operations")
		r.err.Code = CodeEmptyCommit
	}
	if r.err != nil {
		return f
	}
	f.Operations = make([]PushOperation, n)
	for i := range f.Operations {
		op := &f.Operations[i]
		op.Table = r.name("operation table")
		op.RowID = r.str("operation rowId")
		op.Op = decodeOp(r, "operation op")
		if r.present("operation baseVersion") {
			op.BaseVersion = Some(r.i64("operation baseVersion"))
		}
		if r.present("operation payload") {
			op.Payload = r.bytes("operation payload")
			if op.Payload == nil {
				op.Payload = []byte{}
			}
		}
		if r.err != nil {
			break
		}
		if (op.Op == OpUpsert) != (op.Payload != nil) {
			r.failf("operation %d: payload must be present iff op is upsert", i)
			break
		}
	}
	return f
}

func decodePullHeader(r *reader) *PullHeader {
	f := &PullHeader{
		LimitCommits:      r.i32("limitCommits"),
		LimitSnapshotRows: r.i32("limitSnapshotRows"),
		MaxSnapshotPages:  r.i32("maxSnapshotPages"),
		Accept:            r.u8("accept"),
	}
	if r.err == nil && f.Accept&0xF0 != 0 {
		r.failf("accept has bits 4-7 set")
	}
	return f
}

func decodeSubscription(r *reader) *Subscription {
	f := &Subscription{ID: r.str("id"), Table: r.name("table")}
	f.Scopes = r.scopeListMap("scopes")
	if r.present("params") {
		f.Params = r.json("params")
	}
	f.Cursor = r.i64("cursor")
	if r.present("bootstrapState") {
		f.BootstrapState = r.json("bootstrapState")
	}
	return f
}

func readOptI32(r *reader, field string) Opt[int32] {
	if r.present(field) {
		return Some(r.i32(field))
	}
	return Opt[int32]{}
}

func decodeRespHeader(r *reader, wv uint16) *RespHeader {
	f := &RespHeader{
		RequiredSchemaVersion: readOptI32(r, "requiredSchemaVersion"),
		LatestSchemaVersion:   readOptI32(r, "latestSchemaVersion"),
	}
	if wv >= 2 {
		f.LogEpoch = r.str("logEpoch")
		if r.err == nil && f.LogEpoch == "" {
			r.failf("logEpoch is empty")
		}
		f.ResetRequired = r.bool("resetRequired")
	}
	return f
}

func decodeLease(r *reader) *Lease {
	f := &Lease{LeaseID: r.str("leaseId"), ExpiresAtMs: r.i64("expiresAtMs")}
	if r.err == nil && f.LeaseID == "" {
		r.failf("leaseId is empty")
	}
	return f
}

func decodePushResult(r *reader) *PushResult {
	f := &PushResult{ClientCommitID: r.str("clientCommitId")}
	f.Status = PushStatus(r.u8("status"))
	if r.err == nil && (f.Status < PushApplied || f.Status > PushRejected) {
		r.failf("status at byte %d is not 1, 2 or 3", r.base+r.off-1)
	}
	if r.present("commitSeq") {
		f.CommitSeq = r.i64("commitSeq")
		if r.err == nil && f.Status == PushRejected {
			r.failf("a rejected result carries a commitSeq")
		}
	} else if r.err == nil && f.Status != PushRejected {
		r.failf("an %s result has no commitSeq", f.Status)
	}
	n := r.count("results", 5)
	if r.err != nil {
		return f
	}
	f.Results = make([]OpResult, n)
	for i := range f.Results {
		res := &f.Results[i]
		res.OpIndex = r.i32("result opIndex")
		res.Status = OpStatus(r.u8("result status"))
		switch res.Status {
		case OpApplied:
		case OpConflict:
			res.Code = r.str("conflict code")
			res.Message = r.str("conflict message")
			res.ServerVersion = r.i64("conflict serverVersion")
			res.ServerRow = r.bytes("conflict serverRow")
			if res.ServerRow == nil && r.err == nil {
				res.ServerRow = []byte{}
			}
		case OpError:
			res.Code = r.str("error code")
			res.Message = r.str("error message")
			res.Retryable = r.bool("error retryable")
		default:
			if r.err == nil {
				r.failf("result %d status at byte %d is not 1, 2 or 3", i, r.base+r.off-1)
			}
		}
		if r.err != nil {
			break
		}
	}
	return f
}

func decodePushResultDetails(r *reader) *PushResultDetails {
	f := &PushResultDetails{ClientCommitID: r.str("clientCommitId")}
	if r.err == nil && f.ClientCommitID == "" {
		r.failf("clientCommitId is empty")
	}
	n := r.count("entries", 8)
	if r.err == nil && n == 0 {
		r.failf("no entries")
	}
	if r.err != nil {
		return f
	}
	f.Entries = make([]DetailEntry, n)
	for i := range f.Entries {
		d := &f.Entries[i]
		d.OpIndex = r.i32("entry opIndex")
		b := r.strBytes("entry detailsJson")
		if r.err != nil {
			break
		}
		if d.OpIndex < 0 {
			r.failf("entry %d has a negative opIndex", i)
			break
		}
		for j := range i {
			if f.Entries[j].OpIndex == d.OpIndex {
				r.failf("entry %d repeats an opIndex", i)
			}
		}
		if err := checkRejectionDetails(b); err != nil {
			r.failf("entry %d: %s", i, err.Message)
		}
		if r.err != nil {
			break
		}
		d.Details = driver.JSON(b)
	}
	return f
}

func decodeSubStart(r *reader) *SubStart {
	f := &SubStart{ID: r.str("id")}
	f.Status = SubStatus(r.u8("status"))
	if r.err == nil && (f.Status < SubActive || f.Status > SubReset) {
		r.failf("status at byte %d is not 1, 2 or 3", r.base+r.off-1)
	}
	f.ReasonCode = r.str("reasonCode")
	f.EffectiveScopes = r.scopeListMap("effectiveScopes")
	f.Bootstrap = r.bool("bootstrap")
	return f
}

func decodeCommit(r *reader) *Commit {
	f := &Commit{CommitSeq: r.i64("commitSeq"), CreatedAtMs: r.i64("createdAtMs"), ActorID: r.name("actorId")}
	nt := r.count("tables", 4)
	if r.err != nil {
		return f
	}
	f.Tables = make([]string, nt)
	for i := range f.Tables {
		f.Tables[i] = r.name("table")
	}
	nc := r.count("changes", 2+4+1+1+4+1)
	if r.err != nil {
		return f
	}
	f.Changes = make([]CommitChange, nc)
	for i := range f.Changes {
		c := &f.Changes[i]
		c.TableIndex = r.u16("change tableIndex")
		if r.err == nil && int(c.TableIndex) >= nt {
			r.failf("change %d tableIndex is out of range (%d tables)", i, nt)
		}
		c.RowID = r.str("change rowId")
		c.Op = decodeOp(r, "change op")
		hasVersion := r.present("change rowVersion")
		if hasVersion {
			c.RowVersion = r.i64("change rowVersion")
		}
		c.Scopes = r.scopeMap("change scopes")
		if r.present("change row") {
			c.Row = r.bytes("change row")
			if c.Row == nil {
				c.Row = []byte{}
			}
		}
		if r.err != nil {
			break
		}
		upsert := c.Op == OpUpsert
		if hasVersion != upsert || (c.Row != nil) != upsert {
			r.failf("change %d: rowVersion and row must be present iff op is upsert", i)
			break
		}
	}
	return f
}

func decodeSegmentRef(r *reader) *SegmentRef {
	f := &SegmentRef{SegmentID: r.str("segmentId")}
	f.MediaType = MediaType(r.u8("mediaType"))
	if r.err == nil && f.MediaType != MediaRows && f.MediaType != MediaSQLite {
		r.failf("mediaType at byte %d is not 1 or 2", r.base+r.off-1)
	}
	f.Table = r.str("table")
	f.ByteLength = r.i64("byteLength")
	f.RowCount = r.i64("rowCount")
	f.AsOfCommitSeq = r.i64("asOfCommitSeq")
	f.ScopeDigest = r.str("scopeDigest")
	f.RowCursor = readOptStr(r, "rowCursor")
	f.NextRowCursor = readOptStr(r, "nextRowCursor")
	f.URL = readOptStr(r, "url")
	hasExpiry := r.present("urlExpiresAtMs")
	if hasExpiry {
		f.URLExpiresAtMs = r.i64("urlExpiresAtMs")
	}
	if r.err == nil && hasExpiry != f.URL.Present {
		r.failf("urlExpiresAtMs must be present iff url is")
	}
	return f
}

func readOptStr(r *reader, field string) Opt[string] {
	if r.present(field) {
		return Some(r.str(field))
	}
	return Opt[string]{}
}

func decodeSegmentInline(r *reader) *SegmentInline {
	f := &SegmentInline{Payload: r.take(r.remaining(), "payload")}
	if err := validateSegment(f.Payload); err != nil {
		r.failf("payload is not a structurally valid rows segment: %s", err.Message)
	}
	return f
}

func decodeSubEnd(r *reader) *SubEnd {
	f := &SubEnd{NextCursor: r.i64("nextCursor")}
	if r.present("bootstrapState") {
		f.BootstrapState = r.json("bootstrapState")
	}
	return f
}

func decodeErrorFrame(r *reader) *ErrorFrame {
	f := &ErrorFrame{
		Code:      r.str("code"),
		Message:   r.str("message"),
		Category:  r.str("category"),
		Retryable: r.bool("retryable"),
	}
	f.RecommendedAction = r.str("recommendedAction")
	if r.present("details") {
		f.Details = r.json("details")
	}
	return f
}
