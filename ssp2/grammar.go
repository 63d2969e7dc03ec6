package ssp2

// The frame grammars of §1.5 and §1.6 as state machines, shared by the
// decoder, Message.Encode and ResponseWriter, so that what one accepts
// the others accept. Ordering rules look at known frames only (§1.2
// rule 2); an unknown frame may stand anywhere strictly between the
// header frame and END, except after ERROR.

// requestGrammar checks §1.5:
//
//	REQ_HEADER, PUSH_COMMIT*, [PULL_HEADER, SUBSCRIPTION*], END
//
// with at least one PUSH_COMMIT or a PULL_HEADER.
type requestGrammar struct {
	frames int
	pushes int
	pull   bool
}

// step accepts the next frame; a refused frame changes nothing.
func (g *requestGrammar) step(t FrameType) *Error {
	if g.frames == 0 {
		if t != FrameReqHeader {
			return invalidf("the first frame is %s, not REQ_HEADER", t)
		}
		g.frames++
		return nil
	}
	switch t {
	case FrameReqHeader:
		return invalidf("a second REQ_HEADER")
	case FramePushCommit:
		if g.pull {
			return invalidf("PUSH_COMMIT after PULL_HEADER")
		}
		g.pushes++
	case FramePullHeader:
		if g.pull {
			return invalidf("a second PULL_HEADER")
		}
		g.pull = true
	case FrameSubscription:
		if !g.pull {
			return invalidf("SUBSCRIPTION without a PULL_HEADER before it")
		}
	}
	g.frames++
	return nil
}

func (g *requestGrammar) end() *Error {
	if g.frames == 0 {
		return invalidf("the request has no REQ_HEADER")
	}
	if g.pushes == 0 && !g.pull {
		return invalidf("the request has neither PUSH_COMMIT nor PULL_HEADER")
	}
	return nil
}

// responseGrammar checks §1.6:
//
//	RESP_HEADER, [LEASE], (PUSH_RESULT [PUSH_RESULT_DETAILS])*,
//	(SUB_START, COMMIT* | (SEGMENT_REF|SEGMENT_INLINE)*, SUB_END)*, END
//
// with ERROR allowed anywhere after RESP_HEADER, followed only by END
// (an open subscription may stay open then); PUSH_RESULT_DETAILS right
// after the rejected PUSH_RESULT it completes, naming its commit and
// error records (§6.3.1).
type responseGrammar struct {
	frames      int
	body        bool // a known frame other than RESP_HEADER was seen
	lease       bool
	subSeen     bool
	inSub       bool
	subCommits  bool
	subSegments bool
	errorSeen   bool
	// The last PUSH_RESULT, for its companion.
	last       bool
	lastID     string
	lastReject bool
	lastErrIdx []int32
	lastDetail bool
}

// step accepts the next frame, of type t; pr and d are the frame when it
// is a PUSH_RESULT or a PUSH_RESULT_DETAILS. A refused frame changes
// nothing.
func (g *responseGrammar) step(t FrameType, pr *PushResult, d *PushResultDetails) *Error {
	if g.errorSeen {
		return invalidf("%s after ERROR (only END may follow it)", t)
	}
	if g.frames == 0 {
		if t != FrameRespHeader {
			return invalidf("the first frame is %s, not RESP_HEADER", t)
		}
		g.frames++
		return nil
	}
	switch t {
	case FrameRespHeader:
		return invalidf("a second RESP_HEADER")
	case FrameLease:
		if g.lease {
			return invalidf("a second LEASE")
		}
		if g.body {
			return invalidf("LEASE not right after RESP_HEADER")
		}
		g.lease = true
		g.frames++
		return nil
	case FramePushResult:
		if g.subSeen {
			return invalidf("PUSH_RESULT after SUB_START")
		}
		g.last, g.lastID, g.lastReject, g.lastDetail = true, pr.ClientCommitID, pr.Status == PushRejected, false
		g.lastErrIdx = g.lastErrIdx[:0]
		for i := range pr.Results {
			if pr.Results[i].Status == OpError {
				g.lastErrIdx = append(g.lastErrIdx, pr.Results[i].OpIndex)
			}
		}
	case FramePushResultDetails:
		if g.subSeen {
			return invalidf("PUSH_RESULT_DETAILS after SUB_START")
		}
		if !g.last {
			return invalidf("PUSH_RESULT_DETAILS without a PUSH_RESULT before it")
		}
		if g.lastDetail {
			return invalidf("a second PUSH_RESULT_DETAILS for one PUSH_RESULT")
		}
		if !g.lastReject || d.ClientCommitID != g.lastID {
			return invalidf("PUSH_RESULT_DETAILS does not follow a rejected PUSH_RESULT of its commit")
		}
		for i := range d.Entries {
			found := false
			for _, idx := range g.lastErrIdx {
				if idx == d.Entries[i].OpIndex {
					found = true
					break
				}
			}
			if !found {
				return invalidf("PUSH_RESULT_DETAILS entry %d names no error record of its PUSH_RESULT", i)
			}
		}
		g.lastDetail = true
	case FrameSubStart:
		if g.inSub {
			return invalidf("SUB_START inside an open subscription")
		}
		g.subSeen, g.inSub, g.subCommits, g.subSegments = true, true, false, false
	case FrameCommit:
		if !g.inSub {
			return invalidf("COMMIT outside a subscription")
		}
		if g.subSegments {
			return invalidf("COMMIT and segment frames in one subscription")
		}
		g.subCommits = true
	case FrameSegmentRef, FrameSegmentInline:
		if !g.inSub {
			return invalidf("%s outside a subscription", t)
		}
		if g.subCommits {
			return invalidf("COMMIT and segment frames in one subscription")
		}
		g.subSegments = true
	case FrameSubEnd:
		if !g.inSub {
			return invalidf("SUB_END without an open SUB_START")
		}
		g.inSub = false
	case FrameError:
		g.errorSeen = true
	default: // unknown: no ordering constraint
		g.frames++
		return nil
	}
	g.body = true
	g.frames++
	return nil
}

// stepFrame is step for a decoded or whole-message frame.
func (g *responseGrammar) stepFrame(f Frame) *Error {
	pr, _ := f.(*PushResult)
	d, _ := f.(*PushResultDetails)
	return g.step(f.Type(), pr, d)
}

func (g *responseGrammar) end() *Error {
	if g.frames == 0 {
		return invalidf("the response has no RESP_HEADER")
	}
	if g.inSub && !g.errorSeen {
		return invalidf("a subscription is not closed by SUB_END")
	}
	return nil
}
