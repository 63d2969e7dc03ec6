package postgres

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// The commit-fanout frame (FAN-1) is the NOTIFY payload of one commit:
//
//	base64url(partition, no padding) ":" decimal commitSeq
//
// e.g. "dGVuYW50LTc:42". A partition is 1…255 bytes of UTF-8 without NUL
// (V-1), so a frame is at most 340 + 1 + 19 bytes, well under NOTIFY's
// 8,000-byte payload limit. A partition outside V-1 is an error, never
// truncated; parsing is strict: exactly one ':', canonical unpadded
// base64url, a decoded partition that satisfies V-1, and a seq of 1…19
// decimal digits without sign or leading zero, 1…MaxInt64.

// maxPartitionBytes is V-1's bound on a partition name.
const maxPartitionBytes = 255

// MaxFrameBytes is the longest valid frame.
const MaxFrameBytes = 340 + 1 + 19

var frameEncoding = base64.RawURLEncoding.Strict()

// EncodeFrame returns the frame of (partition, seq). Errors:
// CodeInvalidArgument for a partition outside V-1 (empty, over 255 bytes,
// invalid UTF-8, NUL) or a seq < 1. Messages never contain the partition
// (V-10).
func EncodeFrame(partition string, seq int64) (string, error) {
	if err := checkPartition(partition); err != nil {
		return "", err
	}
	if seq < 1 {
		return "", driver.Errorf(driver.CodeInvalidArgument, "fanout frame: commit seq must be ≥ 1 (FAN-1)")
	}
	return frameEncoding.EncodeToString([]byte(partition)) + ":" + strconv.FormatInt(seq, 10), nil
}

// DecodeFrame parses a frame strictly (see above). Errors:
// CodeInvalidArgument, naming what is wrong but never the frame's
// content (V-10).
func DecodeFrame(frame string) (driver.CommitWake, error) {
	bad := func(why string) (driver.CommitWake, error) {
		return driver.CommitWake{}, driver.Errorf(driver.CodeInvalidArgument, "fanout frame: %s (FAN-1)", why)
	}
	if len(frame) > MaxFrameBytes {
		return bad("longer than a valid frame")
	}
	enc, num, ok := strings.Cut(frame, ":")
	if !ok || strings.Contains(num, ":") {
		return bad("want exactly one ':'")
	}
	raw, err := frameEncoding.DecodeString(enc)
	if err != nil || frameEncoding.EncodeToString(raw) != enc {
		return bad("partition is not canonical unpadded base64url")
	}
	partition := string(raw)
	if err := checkPartition(partition); err != nil {
		return driver.CommitWake{}, err
	}
	if len(num) == 0 || len(num) > 19 || num[0] == '0' {
		return bad("commit seq is not a canonical positive decimal")
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return bad("commit seq is not a canonical positive decimal")
		}
	}
	seq, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return bad("commit seq is out of range")
	}
	return driver.CommitWake{Partition: partition, CommitSeq: seq}, nil
}

func checkPartition(p string) error {
	switch {
	case p == "":
		return driver.Errorf(driver.CodeInvalidArgument, "fanout frame: empty partition (V-1)")
	case len(p) > maxPartitionBytes:
		return driver.Errorf(driver.CodeInvalidArgument, "fanout frame: partition longer than 255 bytes (V-1); frames are never truncated")
	case !utf8.ValidString(p):
		return driver.Errorf(driver.CodeInvalidArgument, "fanout frame: partition is not valid UTF-8 (V-1)")
	case strings.IndexByte(p, 0) >= 0:
		return driver.Errorf(driver.CodeInvalidArgument, "fanout frame: partition contains NUL (V-1)")
	}
	return nil
}
