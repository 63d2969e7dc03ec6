package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// offByOneName is a deliberately broken driver, registered only in this
// test binary: the real SQLite driver whose MaxCommitSeq reports one more
// than the truth (breaking SEQ-1, SEQ-5 and P-2).
const offByOneName = "test-only-sqlite-maxseq-off-by-one"

func init() {
	base, ok := sync.Lookup("sqlite")
	if !ok {
		panic("cli test: the sqlite driver is not registered")
	}
	sync.Register(offByOneName, offByOneDriver{base})
}

type offByOneDriver struct{ base driver.Driver }

func (d offByOneDriver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	c, err := d.base.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return offByOneConn{c}, nil
}

func (d offByOneDriver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	return d.base.(driver.Provisioner).Provision(ctx, baseDSN)
}

type offByOneConn struct{ driver.Conn }

func (c offByOneConn) MaxCommitSeq(ctx context.Context, partition string) (int64, error) {
	n, err := c.Conn.MaxCommitSeq(ctx, partition)
	return n + 1, err
}

// brokenRules selects the rules MaxCommitSeq+1 breaks.
const brokenRules = `^(SEQ-1|P-2)/`

func TestBrokenDriverFailsText(t *testing.T) {
	code, out, errOut := run(t, "-driver", offByOneName, "-run", brokenRules)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, ExitFailed, out, errOut)
	}
	fails := regexp.MustCompile(`(?m)^FAIL  (SEQ-1|P-2)  (SEQ-1|P-2)/\S.*$`).FindAllString(out, -1)
	if len(fails) == 0 {
		t.Fatalf("no FAIL line for SEQ-1 or P-2:\n%s", out)
	}
	// Below a failure: the rule, then the case's messages with a go-cmp diff.
	if !regexp.MustCompile(`(?m)^FAIL  (\S+)  .*\n    rule (\S+): see docs/contract\.md\n(    .*\n)*    .*\(-want \+got\)`).MatchString(out) {
		t.Errorf("a failure does not show its rule and a (-want +got) diff:\n%s", out)
	}
	_, failed, _ := summary(t, out)
	if failed != len(fails) {
		t.Errorf("summary says %d failed, %d FAIL lines", failed, len(fails))
	}
	if !strings.Contains(out, "failed rules: ") {
		t.Errorf("no failed-rules line:\n%s", out)
	}
}

func TestBrokenDriverFailsJSONAndJUnit(t *testing.T) {
	code, out, _ := run(t, "-driver", offByOneName, "-run", brokenRules, "-format", "json")
	if code != ExitFailed {
		t.Fatalf("json: exit %d, want %d", code, ExitFailed)
	}
	var rep conformance.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Failed == 0 || rep.Driver != offByOneName {
		t.Fatalf("report: driver %q, %d failed; want failures", rep.Driver, rep.Failed)
	}
	for _, r := range rep.FailedRules() {
		if r != "SEQ-1" && r != "P-2" {
			t.Errorf("rule %s failed; only SEQ-1 and P-2 were selected", r)
		}
	}

	code, out, _ = run(t, "-driver", offByOneName, "-run", brokenRules, "-format", "junit")
	if code != ExitFailed {
		t.Fatalf("junit: exit %d, want %d", code, ExitFailed)
	}
	doc := parseJUnit(t, out)
	failures := 0
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil {
			failures++
			if !strings.Contains(c.Failure.Message, "rule ") || !strings.Contains(c.Failure.Text, "-want +got") {
				t.Errorf("failure of %s lacks the rule or the diff: %+v", c.Name, c.Failure)
			}
		}
	}
	if failures != rep.Failed || doc.Failures != rep.Failed {
		t.Errorf("junit has %d failures (attr %d), JSON %d", failures, doc.Failures, rep.Failed)
	}
}
