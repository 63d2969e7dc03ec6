package ssp2

// Request is a decoded request message (§1.5) with typed access to its
// parts. The fields point into Message.Frames (the same values), which
// keeps every frame, unknown ones included, in wire order.
type Request struct {
	Message
	// Header is the REQ_HEADER: ClientID, SchemaVersion, LogEpoch.
	Header *ReqHeader
	// Commits are the PUSH_COMMIT frames in client order.
	Commits []*PushCommit
	// Pull is the PULL_HEADER, nil when the request does not pull.
	Pull *PullHeader
	// Subscriptions are the SUBSCRIPTION frames in request order (empty
	// without Pull).
	Subscriptions []*Subscription
}

// DecodeRequest decodes b as a request message, with every check of
// Decode; a response is an *Error (CodeInvalidRequest). What Decode leaves
// to the server stays the server's (§1.7 request validation): duplicate
// subscription ids, '*' in requested scopes, unknown tables, the
// operation cap, clientId binding, the accept bits 0/1 requirement, a
// missing LogEpoch with push commits, and each payload's row-codec
// decode (RowCodec.Decode, a commit-level rejection). Byte fields alias
// b.
func DecodeRequest(b []byte) (*Request, error) {
	m, err := decode(b, KindRequest)
	if err != nil {
		return nil, err
	}
	req := &Request{Message: *m}
	for _, f := range m.Frames {
		switch f := f.(type) {
		case *ReqHeader:
			req.Header = f
		case *PushCommit:
			req.Commits = append(req.Commits, f)
		case *PullHeader:
			req.Pull = f
		case *Subscription:
			req.Subscriptions = append(req.Subscriptions, f)
		}
	}
	return req, nil
}

// Operations returns the number of operations across all commits (the
// quantity §6.1's operation cap bounds).
func (r *Request) Operations() int {
	n := 0
	for _, c := range r.Commits {
		n += len(c.Operations)
	}
	return n
}
