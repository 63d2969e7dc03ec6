package postgres

import (
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func TestFrameRoundTrip(t *testing.T) {
	long := strings.Repeat("é", 127) + "x" // 255 bytes
	for _, c := range []struct {
		p   string
		seq int64
	}{{"p", 1}, {"tenant:7", 42}, {"ü/🙂 +=?&%", 1 << 62}, {long, 9223372036854775807}, {"\xef\xbf\xbd", 7}} {
		f, err := EncodeFrame(c.p, c.seq)
		if err != nil {
			t.Fatalf("EncodeFrame(%d bytes, %d): %v", len(c.p), c.seq, err)
		}
		if strings.ContainsAny(f, "=+/") || strings.Count(f, ":") != 1 {
			t.Errorf("frame %q is not unpadded base64url + ':' + seq", f)
		}
		w, err := DecodeFrame(f)
		if err != nil {
			t.Fatalf("DecodeFrame(%q): %v", f, err)
		}
		if w.Partition != c.p || w.CommitSeq != c.seq {
			t.Errorf("round trip of (%d bytes, %d) = (%d bytes, %d)", len(c.p), c.seq, len(w.Partition), w.CommitSeq)
		}
	}
	if f, _ := EncodeFrame("tenant-7", 42); f != "dGVuYW50LTc:42" {
		t.Errorf("EncodeFrame(tenant-7, 42) = %q, want dGVuYW50LTc:42", f)
	}
}

func TestFrameEncodeRejects(t *testing.T) {
	for name, c := range map[string]struct {
		p   string
		seq int64
	}{
		"oversize partition (never truncated)": {strings.Repeat("a", 256), 1},
		"empty partition":                      {"", 1},
		"NUL":                                  {"a\x00b", 1},
		"invalid UTF-8":                        {"a\xffb", 1},
		"seq 0":                                {"p", 0},
		"negative seq":                         {"p", -3},
	} {
		_, err := EncodeFrame(c.p, c.seq)
		if driver.CodeOf(err) != driver.CodeInvalidArgument {
			t.Errorf("%s: EncodeFrame error = %v, want code %s", name, err, driver.CodeInvalidArgument)
		}
		if err != nil && c.p != "" && strings.Contains(err.Error(), c.p) {
			t.Errorf("%s: error message contains the partition (V-10)", name)
		}
	}
}

func TestFrameDecodeIsStrict(t *testing.T) {
	over, _ := EncodeFrame(strings.Repeat("a", 255), 1)
	tooLong := "YQ" + strings.Repeat("YWFh", 86) + ":1" // 258 bytes decoded
	for _, f := range []string{
		"", ":", "cA", "cA:", ":1", "cA:1:2", "cA::1",
		"cA==:1",         // padding
		"cA=:1",          // padding
		"c+A:1", "c/A:1", // standard alphabet
		"cB:1", // non-canonical trailing bits
		"cA: 1", "cA:+1", "cA:-1", "cA:01", "cA:0", "cA:1a", "cA:1.0",
		"cA:9223372036854775808", // overflow
		"cA:12345678901234567890",
		"AA:1",     // NUL partition
		"_w:1",     // invalid UTF-8
		tooLong,    // oversize partition
		over + "0", // trailing junk after a valid seq still parses as a number: 10
	} {
		w, err := DecodeFrame(f)
		if f == over+"0" {
			if err != nil || w.CommitSeq != 10 {
				t.Errorf("DecodeFrame(valid frame, seq 10) = %v, %v", w, err)
			}
			continue
		}
		if driver.CodeOf(err) != driver.CodeInvalidArgument {
			t.Errorf("DecodeFrame(%q) = %+v, %v; want code %s", f, w, err, driver.CodeInvalidArgument)
		}
	}
}

// FuzzFrame checks that DecodeFrame never panics, accepts only what
// EncodeFrame produces (decode → encode gives the input back), and that
// every valid (partition, seq) round-trips.
func FuzzFrame(f *testing.F) {
	for _, s := range []string{"dGVuYW50LTc:42", "cA:1", "cA==:1", ":", "", "_w:1", "cA:01"} {
		f.Add(s, "p", int64(1))
	}
	f.Fuzz(func(t *testing.T, frame, partition string, seq int64) {
		if w, err := DecodeFrame(frame); err == nil {
			back, err := EncodeFrame(w.Partition, w.CommitSeq)
			if err != nil || back != frame {
				t.Fatalf("DecodeFrame accepted %q, which encodes back as %q (%v)", frame, back, err)
			}
		}
		enc, err := EncodeFrame(partition, seq)
		if err != nil {
			return
		}
		w, err := DecodeFrame(enc)
		if err != nil || w.Partition != partition || w.CommitSeq != seq {
			t.Fatalf("round trip of a valid frame failed: %v", err)
		}
	})
}
