package ssp2

import (
	"strconv"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// BlobRef is the value of a blob_ref column (§5.9.1): a reference to
// content-addressed blob bytes, carried as a canonical JSON document.
type BlobRef struct {
	// BlobID is "sha256:" + 64 lowercase hex digits.
	BlobID string
	// ByteLength is ≥ 0 and ≤ MaxSafeInt.
	ByteLength int64
	// MediaType and Name are advisory.
	MediaType Opt[string]
	Name      Opt[string]
}

// ParseBlobRef checks raw against the §5.9.1 shape and returns the
// reference: a JSON object with blobId ("sha256:<64 lowercase hex>") and
// byteLength (a non-negative integer within ±(2^53−1), as JavaScript
// reads numbers: 1.0 and 1e3 are integers), optionally mediaType and name
// (strings), no other member, no member twice, in exactly that key order.
// A violation is an *Error with CodeInvalidRequest (a row-codec decode
// error).
func ParseBlobRef(raw driver.JSON) (BlobRef, error) {
	ref, err := parseBlobRef([]byte(raw))
	if err != nil {
		return BlobRef{}, err
	}
	return ref, nil
}

var blobRefKeys = [...]string{"blobId", "byteLength", "mediaType", "name"}

func parseBlobRef(raw []byte) (BlobRef, *Error) {
	v, ok := parseJSON(raw)
	if !ok {
		return BlobRef{}, invalidf("blob_ref value is not a JSON document")
	}
	if v.kind != jsonObject {
		return BlobRef{}, invalidf("blob_ref value is not a JSON object")
	}
	var ref BlobRef
	next := 0 // index into blobRefKeys of the least key allowed next
	for _, m := range v.members {
		k := next
		for k < len(blobRefKeys) && blobRefKeys[k] != m.key {
			k++
		}
		if k == len(blobRefKeys) {
			for _, known := range blobRefKeys {
				if known == m.key {
					return BlobRef{}, invalidf("blob_ref keys are repeated or out of the order blobId, byteLength, mediaType, name")
				}
			}
			return BlobRef{}, invalidf("blob_ref has a key outside blobId, byteLength, mediaType and name")
		}
		next = k + 1
		switch m.key {
		case "blobId":
			if m.val.kind != jsonString || !isContentAddress(m.val.s) {
				return BlobRef{}, invalidf(`blob_ref.blobId is not "sha256:" and 64 lowercase hex digits`)
			}
			ref.BlobID = m.val.s
		case "byteLength":
			n, ok := m.val.safeInt()
			if !ok || n < 0 {
				return BlobRef{}, invalidf("blob_ref.byteLength is not a non-negative safe integer")
			}
			ref.ByteLength = n
		case "mediaType":
			if m.val.kind != jsonString {
				return BlobRef{}, invalidf("blob_ref.mediaType is not a string")
			}
			ref.MediaType = Some(m.val.s)
		case "name":
			if m.val.kind != jsonString {
				return BlobRef{}, invalidf("blob_ref.name is not a string")
			}
			ref.Name = Some(m.val.s)
		}
	}
	if ref.BlobID == "" {
		return BlobRef{}, invalidf("blob_ref has no blobId")
	}
	if _, ok := v.member("byteLength"); !ok {
		return BlobRef{}, invalidf("blob_ref has no byteLength")
	}
	return ref, nil
}

// isContentAddress reports whether s is "sha256:" + 64 lowercase hex
// digits (§5.1, §5.9.1).
func isContentAddress(s string) bool {
	if len(s) != 7+64 || s[:7] != "sha256:" {
		return false
	}
	for i := 7; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// JSON returns r in canonical form (§5.9.1): keys blobId, byteLength,
// mediaType, name, absent ones omitted, no whitespace. It fails with
// ErrEncode when r does not have the §5.9.1 shape.
func (r BlobRef) JSON() (driver.JSON, error) {
	if !isContentAddress(r.BlobID) || r.ByteLength < 0 || r.ByteLength > MaxSafeInt {
		return "", encodeErrorf("blob reference has a malformed blobId or byteLength")
	}
	if !utf8.ValidString(r.MediaType.Value) || !utf8.ValidString(r.Name.Value) {
		return "", encodeErrorf("blob reference mediaType or name is not valid UTF-8")
	}
	b := make([]byte, 0, 96+len(r.MediaType.Value)+len(r.Name.Value))
	b = append(b, `{"blobId":`...)
	b = appendJSString(b, r.BlobID)
	b = append(b, `,"byteLength":`...)
	b = strconv.AppendInt(b, r.ByteLength, 10)
	if r.MediaType.Present {
		b = append(b, `,"mediaType":`...)
		b = appendJSString(b, r.MediaType.Value)
	}
	if r.Name.Present {
		b = append(b, `,"name":`...)
		b = appendJSString(b, r.Name.Value)
	}
	return driver.JSON(append(b, '}')), nil
}
