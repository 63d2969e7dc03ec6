package sync

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// A bootstrap token (PULL-4) resumes a pinned bootstrap: it carries the
// bootstrap's asOfCommitSeq and the last row id delivered, bound to the
// partition, table and scope filter it was issued for. Layout, then
// base64url without padding:
//
//	version (1 byte, pullTokenVersion)
//	asOfCommitSeq (uvarint)
//	binding (8 bytes: SHA-256 of partition, table and canonical filter)
//	last row id (uvarint length, bytes)
//	check (8 bytes: SHA-256 of everything before it)
//
// The check catches a token that was truncated, altered or made up; the
// binding one sent with another subscription's table or scopes, or to
// another partition. Neither is a secret signature: a client that forges a
// token can only skip rows of its own scope or move its bootstrap's pin,
// and a pin that is not a seq of this log (below the horizon, beyond the
// head) resets the subscription. The partition name is hashed, never
// carried (V-10).
const (
	pullTokenVersion  = 1
	pullHashBytes     = 8
	maxPullTokenBytes = 512
)

var pullTokenEncoding = base64.RawURLEncoding.Strict()

// pullToken is a decoded bootstrap token.
type pullToken struct {
	asOf      int64
	lastRowID string
}

// pullBinding returns the binding of a token to partition, table and
// filter. The filter is canonical: keys and values sorted bytewise,
// duplicate values dropped, every string length-prefixed.
func pullBinding(partition, table string, f ScopeFilter) []byte {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str("syncstore pull bootstrap")
	str(partition)
	str(table)
	keys := sortedKeys(f)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		str(k)
		vals := slices.Compact(slices.Sorted(slices.Values(f[k])))
		b = binary.AppendUvarint(b, uint64(len(vals)))
		for _, v := range vals {
			str(v)
		}
	}
	sum := sha256.Sum256(b)
	return sum[:pullHashBytes]
}

// encodePullToken returns the token resuming a bootstrap bound to binding
// after lastRowID.
func encodePullToken(binding []byte, t pullToken) string {
	b := []byte{pullTokenVersion}
	b = binary.AppendUvarint(b, uint64(t.asOf))
	b = append(b, binding...)
	b = binary.AppendUvarint(b, uint64(len(t.lastRowID)))
	b = append(b, t.lastRowID...)
	sum := sha256.Sum256(b)
	b = append(b, sum[:pullHashBytes]...)
	return pullTokenEncoding.EncodeToString(b)
}

// decodePullToken checks and decodes a token → CodeInvalidArgument
// (PULL-4) when it is malformed or altered, or bound to something other
// than binding.
func decodePullToken(op, s string, binding []byte) (pullToken, error) {
	bad := func() (pullToken, error) {
		return pullToken{}, argErr(op, "PULL-4", "the bootstrap token is malformed or altered; bootstrap again with cursor -1")
	}
	if len(s) > maxPullTokenBytes {
		return bad()
	}
	b, err := pullTokenEncoding.DecodeString(s)
	if err != nil || len(b) < 1+1+pullHashBytes+1+pullHashBytes || b[0] != pullTokenVersion {
		return bad()
	}
	// The decoder skips CR and LF even in strict mode: a token is accepted
	// only in its one spelling.
	if pullTokenEncoding.EncodedLen(len(b)) != len(s) {
		return bad()
	}
	body, check := b[:len(b)-pullHashBytes], b[len(b)-pullHashBytes:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:pullHashBytes], check) {
		return bad()
	}
	r := body[1:]
	asOf, n := binary.Uvarint(r)
	if n <= 0 || asOf > 1<<63-1 {
		return bad()
	}
	r = r[n:]
	if len(r) < pullHashBytes {
		return bad()
	}
	bind, r := r[:pullHashBytes], r[pullHashBytes:]
	l, n := binary.Uvarint(r)
	if n <= 0 || uint64(len(r)-n) != l {
		return bad()
	}
	t := pullToken{asOf: int64(asOf), lastRowID: string(r[n:])}
	if idRow.check(op, t.lastRowID) != nil {
		return bad()
	}
	if !bytes.Equal(bind, binding) {
		return pullToken{}, argErr(op, "PULL-4", "the bootstrap token was issued for another partition, table or scope filter; send it only with the subscription it came with")
	}
	return t, nil
}
