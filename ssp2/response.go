package ssp2

import (
	"encoding/binary"
	"errors"
	"io"
)

// ResponseWriter streams one response message (§1.6) to an io.Writer,
// frame by frame, never holding more than the frame being written
// (§1.4). Call, in grammar order:
//
//	Header                            once, first
//	Lease                             at most once, right after Header
//	PushResult [PushResultDetails]    per push commit, in request order
//	SubStart, Commit… | SegmentRef/SegmentInline…, SubEnd
//	                                  per subscription, in request order
//	Error                             at most once, anywhere after Header
//	End                               last
//
// Each call makes exactly one Write to w holding exactly one frame — the
// first also carries the 8-byte envelope header — so a binding that sends
// each Write as one WebSocket message sends one message per frame (§8.7),
// and Written tells the bytes so far. A call out of grammar order (or
// after a Header that ends the response: ResetRequired or
// RequiredSchemaVersion set, where only End may follow), or with a frame
// the decoder would refuse, is a programming error: it returns an error
// wrapping ErrEncode, writes nothing and leaves the writer as it was. An
// error from w is sticky: every later call returns it.
//
// A ResponseWriter is not safe for concurrent use; Reset reuses one (and
// its buffer) for the next response.
type ResponseWriter struct {
	w          io.Writer
	wv         uint16
	e          encoder
	g          responseGrammar
	headerOnly bool
	ended      bool
	err        error
	n          int64
	frames     int
}

// NewResponseWriter returns a writer of a response in wireVersion (the
// request's, §9) to w.
func NewResponseWriter(w io.Writer, wireVersion uint16) *ResponseWriter {
	rw := &ResponseWriter{}
	rw.Reset(w, wireVersion)
	return rw
}

// Reset makes rw write a new response to w, keeping its buffers.
func (rw *ResponseWriter) Reset(w io.Writer, wireVersion uint16) {
	buf, keys, idx := rw.e.buf[:0], rw.e.keys[:0], rw.g.lastErrIdx[:0]
	*rw = ResponseWriter{w: w, wv: wireVersion}
	rw.e.buf, rw.e.keys, rw.g.lastErrIdx = buf, keys, idx
}

// Written returns the bytes written to w so far.
func (rw *ResponseWriter) Written() int64 { return rw.n }

// Frames returns the frames written so far, END included.
func (rw *ResponseWriter) Frames() int { return rw.frames }

// InSubscription reports whether a SubStart is open (no SubEnd yet).
func (rw *ResponseWriter) InSubscription() bool { return rw.g.inSub }

// The typed methods call each frame's encoder directly (not through the
// Frame interface), so a frame passed as a composite literal does not
// escape to the heap.

// Header writes the envelope and RESP_HEADER.
func (rw *ResponseWriter) Header(f *RespHeader) error {
	e, at, err := rw.begin(FrameRespHeader)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	if err := rw.finish(at, FrameRespHeader, nil, nil); err != nil {
		return err
	}
	rw.headerOnly = f.ResetRequired || f.RequiredSchemaVersion.Present
	return nil
}

// Lease writes LEASE (§7.3.2).
func (rw *ResponseWriter) Lease(f *Lease) error {
	e, at, err := rw.begin(FrameLease)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	return rw.finish(at, FrameLease, nil, nil)
}

// PushResult writes PUSH_RESULT (§6.3).
func (rw *ResponseWriter) PushResult(f *PushResult) error {
	e, at, err := rw.begin(FramePushResult)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	return rw.finish(at, FramePushResult, f, nil)
}

// PushResultDetails writes PUSH_RESULT_DETAILS (§6.3.1) for the rejected
// PushResult just written.
func (rw *ResponseWriter) PushResultDetails(f *PushResultDetails) error {
	e, at, err := rw.begin(FramePushResultDetails)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	return rw.finish(at, FramePushResultDetails, nil, f)
}

// SubStart writes SUB_START (§4.4).
func (rw *ResponseWriter) SubStart(f *SubStart) error {
	e, at, err := rw.begin(FrameSubStart)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	return rw.finish(at, FrameSubStart, nil, nil)
}

// Commit writes one COMMIT (§4.5). Its rows are already encoded (a
// RowCodec's Append into one scratch buffer serves a whole commit).
func (rw *ResponseWriter) Commit(f *Commit) error {
	e, at, err := rw.begin(FrameCommit)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	return rw.finish(at, FrameCommit, nil, nil)
}

// SegmentRef writes SEGMENT_REF (§5.4).
func (rw *ResponseWriter) SegmentRef(f *SegmentRef) error {
	e, at, err := rw.begin(FrameSegmentRef)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	return rw.finish(at, FrameSegmentRef, nil, nil)
}

// SegmentInline writes SEGMENT_INLINE (§5.7) with payload, a complete
// rows segment (checked with ValidateSegment; a SegmentWriter writing to
// a bytes.Buffer makes one).
func (rw *ResponseWriter) SegmentInline(payload []byte) error {
	e, at, err := rw.begin(FrameSegmentInline)
	if err != nil {
		return err
	}
	f := SegmentInline{Payload: payload}
	f.encode(e, rw.wv)
	return rw.finish(at, FrameSegmentInline, nil, nil)
}

// SubEnd writes SUB_END (§4.4).
func (rw *ResponseWriter) SubEnd(f *SubEnd) error {
	e, at, err := rw.begin(FrameSubEnd)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	return rw.finish(at, FrameSubEnd, nil, nil)
}

// Error writes ERROR (§1.6); only End may follow. An open subscription
// stays open (the client aborts it, §1.4 rule 5).
func (rw *ResponseWriter) Error(f *ErrorFrame) error {
	e, at, err := rw.begin(FrameError)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	return rw.finish(at, FrameError, nil, nil)
}

// WriteFrame writes any response frame, an *UnknownFrame included (a
// proxy re-emitting what it decoded).
func (rw *ResponseWriter) WriteFrame(f Frame) error {
	if f == nil {
		return encodeErrorf("nil frame")
	}
	t := f.Type()
	if t.Kind() == KindRequest || t == FrameEnd {
		return encodeErrorf("a %s frame in a response", t)
	}
	e, at, err := rw.begin(t)
	if err != nil {
		return err
	}
	f.encode(e, rw.wv)
	pr, _ := f.(*PushResult)
	d, _ := f.(*PushResultDetails)
	if err := rw.finish(at, t, pr, d); err != nil {
		return err
	}
	if h, ok := f.(*RespHeader); ok {
		rw.headerOnly = h.ResetRequired || h.RequiredSchemaVersion.Present
	}
	return nil
}

// ErrResponseEnded is returned for a call after End.
var ErrResponseEnded = errors.New("ssp2: the response has ended")

// begin starts frame t in the writer's buffer (after the envelope header
// for the first frame) and returns the encoder and the frame's offset.
func (rw *ResponseWriter) begin(t FrameType) (*encoder, int, error) {
	if rw.err != nil {
		return nil, 0, rw.err
	}
	if rw.ended {
		return nil, 0, ErrResponseEnded
	}
	if rw.wv < MinWireVersion || rw.wv > MaxWireVersion {
		return nil, 0, encodeErrorf("unsupported wire version %d", rw.wv)
	}
	if rw.headerOnly {
		return nil, 0, encodeErrorf("%s after a RESP_HEADER that ends the response (resetRequired or requiredSchemaVersion): only End may follow", t)
	}
	e := &rw.e
	e.buf, e.err = e.buf[:0], nil
	if rw.frames == 0 {
		e.buf = appendEnvelope(e.buf, rw.wv, KindResponse)
	}
	return e, beginFrame(e, t), nil
}

// finish closes the frame begun at at, checks the grammar and writes it.
// A refused frame leaves the writer as it was.
func (rw *ResponseWriter) finish(at int, t FrameType, pr *PushResult, d *PushResultDetails) error {
	endFrame(&rw.e, at)
	if rw.e.err != nil {
		return rw.e.err
	}
	if gerr := rw.g.step(t, pr, d); gerr != nil {
		return encodeErrorf("%s", gerr.Message)
	}
	return rw.flush()
}

func (rw *ResponseWriter) flush() error {
	n, err := rw.w.Write(rw.e.buf)
	rw.n += int64(n)
	if err == nil && n != len(rw.e.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		rw.err = err
		return err
	}
	rw.frames++
	return nil
}

// End writes END and finishes the response. It fails (writing nothing)
// before Header and with a subscription open and no Error written.
func (rw *ResponseWriter) End() error {
	if rw.err != nil {
		return rw.err
	}
	if rw.ended {
		return ErrResponseEnded
	}
	if gerr := rw.g.end(); gerr != nil {
		return encodeErrorf("%s", gerr.Message)
	}
	rw.e.buf = append(rw.e.buf[:0], byte(FrameEnd), 0, 0, 0, 0)
	if err := rw.flush(); err != nil {
		return err
	}
	rw.ended = true
	return nil
}

// ErrMessageTooLarge is returned by MessageScanner.Feed when a message
// grows past the scanner's bound.
var ErrMessageTooLarge = errors.New("ssp2: message exceeds the size bound")

// MessageScanner finds the end of one SSP2 message in a byte stream cut
// at arbitrary points — the request of a socket round arriving as 0x01
// chunks (§8.7). It checks the 8-byte envelope header as soon as it has
// it (a bad one is connection-fatal: the stream has no findable end) and
// follows the frame lengths to END; the full decode is DecodeRequest's.
type MessageScanner struct {
	kind Kind
	buf  []byte
	max  int
	next int // offset of the next frame header; 0 until the header is checked
	end  int // offset just past END once complete
}

// NewMessageScanner returns a scanner of a message of kind (0: either)
// of at most maxBytes.
func NewMessageScanner(kind Kind, maxBytes int) *MessageScanner {
	return &MessageScanner{kind: kind, max: maxBytes}
}

// Reset empties s for the next message, keeping its buffer.
func (s *MessageScanner) Reset() { *s = MessageScanner{kind: s.kind, buf: s.buf[:0], max: s.max} }

// Feed appends chunk and reports whether the message is complete (its
// END frame buffered). It fails with an *Error (CodeInvalidRequest) on an
// invalid envelope header or one of the wrong kind, with
// ErrMessageTooLarge as soon as the message is known to exceed the bound
// (a frame length reaching past it, or more bytes buffered without END),
// and with ErrEncode when fed after completion. Bytes fed past END are
// kept as Excess (a pipelining violation, §8.7).
func (s *MessageScanner) Feed(chunk []byte) (done bool, err error) {
	if s.end > 0 {
		return true, encodeErrorf("the scanned message is complete; Reset before the next")
	}
	s.buf = append(s.buf, chunk...)
	if s.next == 0 {
		if len(s.buf) < HeaderLen {
			return false, nil
		}
		_, k, e := checkHeader(s.buf)
		if e != nil {
			return false, e
		}
		if s.kind != 0 && k != s.kind {
			return false, invalidf("the stream carries a %s, not a %s", k, s.kind)
		}
		s.next = HeaderLen
	}
	for len(s.buf)-s.next >= FrameHeaderLen {
		n := binary.LittleEndian.Uint32(s.buf[s.next+1:])
		frameEnd := uint64(s.next) + FrameHeaderLen + uint64(n)
		if frameEnd > uint64(s.max) {
			return false, ErrMessageTooLarge
		}
		if uint64(len(s.buf)) < frameEnd {
			break
		}
		t := FrameType(s.buf[s.next])
		s.next = int(frameEnd)
		if t == FrameEnd {
			s.end = s.next
			return true, nil
		}
	}
	if len(s.buf) > s.max {
		return false, ErrMessageTooLarge
	}
	return false, nil
}

// Message returns the complete message (header through END), aliasing
// the scanner's buffer until Reset; nil before completion.
func (s *MessageScanner) Message() []byte {
	if s.end == 0 {
		return nil
	}
	return s.buf[:s.end]
}

// Excess returns the bytes fed past END (nil before completion).
func (s *MessageScanner) Excess() []byte {
	if s.end == 0 {
		return nil
	}
	return s.buf[s.end:]
}
