package ssp2

import (
	"encoding/binary"
	"math"
)

// Envelope constants (§1.2).
const (
	// Magic opens every SSP2 message.
	Magic = "SSP2"
	// MinWireVersion and MaxWireVersion bound the wire versions this
	// package reads and writes (§9: a server decodes every version of the
	// window and answers in the request's version).
	MinWireVersion uint16 = 1
	MaxWireVersion uint16 = 2
	// HeaderLen is the envelope header's size; FrameHeaderLen a frame's
	// type byte and length.
	HeaderLen      = 8
	FrameHeaderLen = 5
)

// Message is a decoded SSP2 message: its frames in wire order, END
// excluded, unknown frames preserved where they stood. Encoding a decoded
// Message reproduces its bytes exactly.
type Message struct {
	WireVersion uint16
	Kind        Kind
	Frames      []Frame
}

// Decode decodes b as one SSP2 message of either kind and checks
// everything §1.7 makes a decode error, and nothing else: the envelope
// (magic, a wire version in [MinWireVersion, MaxWireVersion], msgKind,
// zero flags), the framing (END with length 0 last, nothing after it, no
// frame past the end, a known frame's payload consumed exactly), the
// frame grammar of the message kind (§1.5, §1.6, including a request
// with no PUSH_COMMIT and no PULL_HEADER, COMMIT and segments mixed in a
// subscription, an unknown frame first or after ERROR, a frame of the
// other kind), every primitive (bool and presence bytes, UTF-8, i64
// range, canonical map order, JSON documents), enum bytes and opt()
// ties, the field rules of §1.7 (empty clientId, clientCommitId, leaseId
// or logEpoch, schemaVersion < 1, change tableIndex out of range, accept
// bits 4–7, the url/urlExpiresAtMs tie, PUSH_RESULT_DETAILS shape and
// placement), and that a SEGMENT_INLINE payload is a structurally valid
// rows segment. Any violation is an *Error: CodeEmptyCommit for a
// PUSH_COMMIT without operations, else CodeInvalidRequest. Row payloads
// stay opaque (decode them with a RowCodec).
//
// Byte fields of the result (payloads, rows, unknown frames) alias b:
// keep b unchanged while the Message is in use.
func Decode(b []byte) (*Message, error) {
	m, err := decode(b, 0)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeResponse is Decode for a response: a request is an *Error
// (CodeInvalidRequest).
func DecodeResponse(b []byte) (*Message, error) {
	m, err := decode(b, KindResponse)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// CheckEnvelopeHeader checks the first HeaderLen bytes of a message (§1.2:
// magic, wire version, msgKind, flags) and returns its wire version and
// kind. A socket binding uses it on the first bytes of a round, where a
// bad header is connection-fatal (§8.7).
func CheckEnvelopeHeader(b []byte) (wireVersion uint16, kind Kind, err error) {
	wv, k, e := checkHeader(b)
	if e != nil {
		return 0, 0, e
	}
	return wv, k, nil
}

func checkHeader(b []byte) (uint16, Kind, *Error) {
	if len(b) < HeaderLen {
		return 0, 0, invalidf("truncated envelope header (%d bytes)", len(b))
	}
	if string(b[:4]) != Magic {
		return 0, 0, invalidf("bad envelope magic")
	}
	wv := binary.LittleEndian.Uint16(b[4:])
	if wv < MinWireVersion || wv > MaxWireVersion {
		return 0, 0, invalidf("unsupported wire version %d", wv)
	}
	k := Kind(b[6])
	if k != KindRequest && k != KindResponse {
		return 0, 0, invalidf("unknown msgKind 0x%02x", b[6])
	}
	if b[7] != 0 {
		return 0, 0, invalidf("non-zero envelope flags")
	}
	return wv, k, nil
}

func decode(b []byte, want Kind) (*Message, *Error) {
	wv, kind, err := checkHeader(b)
	if err != nil {
		return nil, err
	}
	if want != 0 && kind != want {
		return nil, invalidf("the message is a %s, not a %s", kind, want)
	}
	m := &Message{WireVersion: wv, Kind: kind, Frames: make([]Frame, 0, 8)}
	var (
		req      requestGrammar
		resp     responseGrammar
		grammErr *Error // reported after the frames: frame errors come first
		names    interner
	)
	off := HeaderLen
	for {
		if off == len(b) {
			return nil, invalidf("truncated message: no END frame")
		}
		if len(b)-off < FrameHeaderLen {
			return nil, invalidf("truncated frame header at byte %d", off)
		}
		t := FrameType(b[off])
		n := binary.LittleEndian.Uint32(b[off+1:])
		start := off + FrameHeaderLen
		if uint64(n) > uint64(len(b)-start) {
			return nil, invalidf("%s frame at byte %d declares %d payload bytes, %d are left", t, off, n, len(b)-start)
		}
		if t == FrameEnd {
			if n != 0 {
				return nil, invalidf("END frame at byte %d has a non-zero length", off)
			}
			if start != len(b) {
				return nil, invalidf("%d bytes after the END frame", len(b)-start)
			}
			break
		}
		r := reader{b: b[start : start+int(n)], base: start, frame: t, frameAt: off, in: &names}
		f := decodeFrame(&r, kind, t, wv)
		if r.err != nil {
			return nil, r.err
		}
		if grammErr == nil {
			if kind == KindRequest {
				grammErr = req.step(t)
			} else {
				grammErr = resp.stepFrame(f)
			}
			if grammErr != nil {
				grammErr.Message += " (frame at byte " + itoa(off) + ")"
			}
		}
		m.Frames = append(m.Frames, f)
		off = start + int(n)
	}
	if grammErr == nil {
		if kind == KindRequest {
			grammErr = req.end()
		} else {
			grammErr = resp.end()
		}
	}
	if grammErr != nil {
		return nil, grammErr
	}
	return m, nil
}

// decodeFrame decodes one payload; r.err is set on failure.
func decodeFrame(r *reader, kind Kind, t FrameType, wv uint16) Frame {
	if fk := t.Kind(); fk == 0 {
		return &UnknownFrame{FrameType: t, Payload: r.b}
	} else if fk != kind {
		r.failf("a %s frame type in a %s", fk, kind)
		return nil
	}
	var f Frame
	switch t {
	case FrameReqHeader:
		f = decodeReqHeader(r, wv)
	case FramePushCommit:
		f = decodePushCommit(r)
	case FramePullHeader:
		f = decodePullHeader(r)
	case FrameSubscription:
		f = decodeSubscription(r)
	case FrameRespHeader:
		f = decodeRespHeader(r, wv)
	case FrameLease:
		f = decodeLease(r)
	case FramePushResult:
		f = decodePushResult(r)
	case FramePushResultDetails:
		f = decodePushResultDetails(r)
	case FrameSubStart:
		f = decodeSubStart(r)
	case FrameCommit:
		f = decodeCommit(r)
	case FrameSegmentRef:
		f = decodeSegmentRef(r)
	case FrameSegmentInline:
		f = decodeSegmentInline(r)
	case FrameSubEnd:
		f = decodeSubEnd(r)
	case FrameError:
		f = decodeErrorFrame(r)
	}
	r.end()
	return f
}

// Encode returns m's bytes; see AppendEncode.
func (m *Message) Encode() ([]byte, error) { return m.AppendEncode(nil) }

// AppendEncode appends m's canonical bytes to dst: the envelope, each
// frame, END. It checks what Decode checks (the grammar of m.Kind, every
// field) and fails with ErrEncode, appending nothing, on a message Decode
// would refuse — and on an UnknownFrame with a registered type (§1.2
// rule 2) or a wire version outside the supported window.
func (m *Message) AppendEncode(dst []byte) ([]byte, error) {
	if m.WireVersion < MinWireVersion || m.WireVersion > MaxWireVersion {
		return dst, encodeErrorf("unsupported wire version %d", m.WireVersion)
	}
	if m.Kind != KindRequest && m.Kind != KindResponse {
		return dst, encodeErrorf("message kind %d", m.Kind)
	}
	e := encoder{buf: dst}
	e.buf = appendEnvelope(e.buf, m.WireVersion, m.Kind)
	var (
		req  requestGrammar
		resp responseGrammar
	)
	for i, f := range m.Frames {
		if f == nil {
			return dst, encodeErrorf("frame %d is nil", i)
		}
		t := f.Type()
		if k := t.Kind(); k != 0 && k != m.Kind {
			return dst, encodeErrorf("frame %d: a %s frame in a %s", i, t, m.Kind)
		}
		var gerr *Error
		if m.Kind == KindRequest {
			gerr = req.step(t)
		} else {
			gerr = resp.stepFrame(f)
		}
		if gerr != nil {
			return dst, encodeErrorf("frame %d: %s", i, gerr.Message)
		}
		appendFrame(&e, f, m.WireVersion)
		if e.err != nil {
			return dst, e.err
		}
	}
	var gerr *Error
	if m.Kind == KindRequest {
		gerr = req.end()
	} else {
		gerr = resp.end()
	}
	if gerr != nil {
		return dst, encodeErrorf("%s", gerr.Message)
	}
	return append(e.buf, byte(FrameEnd), 0, 0, 0, 0), nil
}

func appendEnvelope(dst []byte, wv uint16, k Kind) []byte {
	dst = append(dst, Magic...)
	dst = binary.LittleEndian.AppendUint16(dst, wv)
	return append(dst, byte(k), 0)
}

// appendFrame appends f's type, length and payload to e.buf.
func appendFrame(e *encoder, f Frame, wv uint16) {
	at := beginFrame(e, f.Type())
	f.encode(e, wv)
	endFrame(e, at)
}

// beginFrame appends a frame header with a length to be set by endFrame
// and returns its offset.
func beginFrame(e *encoder, t FrameType) int {
	at := len(e.buf)
	e.buf = append(e.buf, byte(t), 0, 0, 0, 0)
	return at
}

func endFrame(e *encoder, at int) {
	n := len(e.buf) - at - FrameHeaderLen
	if uint64(n) > math.MaxUint32 {
		e.failf("%s frame payload is longer than 2^32-1 bytes", FrameType(e.buf[at]))
	}
	binary.LittleEndian.PutUint32(e.buf[at+1:], uint32(n))
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
