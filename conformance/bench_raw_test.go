package conformance

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// The raw loops store these bytes where the drivers store their codecs'
// output, so the driver must be able to read them back: they must be the
// codecs' bytes exactly.
func TestRawLoopEncodingsMatchTheCodecs(t *testing.T) {
	for _, i := range []int{0, 1, 7, 499, 4999, 49_999, 9_999_999} {
		c := W1Commit(i)
		if c.Seq != int64(i+1) || c.ClientCommitID != "c"+strconv.Itoa(i) || len(c.Rows) != BenchRowsPerCommit || c.Rows[0].ID != rowID(i*BenchRowsPerCommit) {
			t.Fatalf("W1Commit(%d) = %+v", i, c)
		}
		for _, row := range c.Rows {
			want, err := driver.EncodeValues(row.Values)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendValuesJSON([]byte("x"), row); string(got) != "x"+string(want) {
				t.Fatalf("AppendValuesJSON(%s) = %s, want x%s", row.ID, got, want)
			}
			want, _ = json.Marshal(row.Scopes)
			if got := AppendScopesJSON(nil, row); string(got) != string(want) {
				t.Fatalf("AppendScopesJSON(%s) = %s, want %s", row.ID, got, want)
			}
		}
		for _, seq := range []int64{1, c.Seq, 1 << 40} {
			want, err := driver.EncodePushResult(c.Result(seq))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ResultJSON(seq); got != string(want) {
				t.Fatalf("ResultJSON(%d) = %s, want %s", seq, got, want)
			}
		}
	}
	// Any other values go through the codec.
	row := driver.Row{ID: "k", Values: driver.Values{"id": "k", "f": 1.5, "x": []byte{0}}}
	want, _ := driver.EncodeValues(row.Values)
	if got := AppendValuesJSON(nil, row); string(got) != string(want) {
		t.Fatalf("AppendValuesJSON(other) = %s, want %s", got, want)
	}
}

// timeCommits refuses a loop whose seqs are not 1…N, and one that fails.
func TestRawLoopTimingChecksSeqs(t *testing.T) {
	r, err := timeCommits("t", 100, func(i int) (int64, error) { return int64(i + 1), nil })
	if err != nil || len(r.tenths) != 10 || r.total <= 0 {
		t.Fatalf("dense loop: %+v, %v", r, err)
	}
	_, err = timeCommits("t", 100, func(i int) (int64, error) { return int64(i + 1 + i/50), nil })
	if err == nil || !strings.Contains(err.Error(), "SEQ-1") {
		t.Fatalf("a gap passed: %v", err)
	}
	boom := errors.New("boom")
	if _, err = timeCommits("t", 10, func(i int) (int64, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing commit passed: %v", err)
	}
}
