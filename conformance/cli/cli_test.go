package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/sqlite" // registers "sqlite"
)

// subset selects a few fast core cases that exist in every version of the
// suite (the first rule of SEQ and the not-found read of ROW).
const subset = `^(SEQ-1|ROW-4)/`

// run runs the CLI in-process and returns exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), append([]string{"-dsn", t.TempDir()}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// selected returns the number of suite cases the pattern selects.
func selected(t *testing.T, pattern string) int {
	t.Helper()
	n := len(selectCases(regexp.MustCompile(pattern)))
	if n == 0 {
		t.Fatalf("the suite has no case matching %s", pattern)
	}
	return n
}

var summaryRE = regexp.MustCompile(`^(\d+) passed, (\d+) failed, (\d+) skipped, (\d+) not implemented(?:, (\d+) interrupted)?$`)

// summaryCounts returns the counts of the text report's closing line,
// which must be the last line of out: passed, failed, skipped, not
// implemented, interrupted.
func summaryCounts(t *testing.T, out string) [5]int {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	m := summaryRE.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("last line %q is not the summary line; output:\n%s", lines[len(lines)-1], out)
	}
	var n [5]int
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return n
}

// summary returns the passed, failed and skipped counts of the summary line.
func summary(t *testing.T, out string) (passed, failed, skipped int) {
	t.Helper()
	n := summaryCounts(t, out)
	return n[0], n[1], n[2]
}

func TestTextReport(t *testing.T) {
	want := selected(t, subset)
	code, out, errOut := run(t, "-run", subset)
	if code != ExitOK {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, ExitOK, out, errOut)
	}
	for _, s := range []string{"driver: sqlite\n", "engine: SQLite 3.", "capability", "reactions", "core"} {
		if !strings.Contains(out, s) {
			t.Errorf("header lacks %q:\n%s", s, out)
		}
	}
	// Each matrix row must say what the driver declares (by type assertion).
	conn, err := sqlite.Driver{}.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, c := range driver.AllCapabilities {
		yes := "no"
		if driver.ConnHas(conn, c) {
			yes = "yes"
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(string(c)) + ` +` + yes + `$`).MatchString(out) {
			t.Errorf("capability matrix lacks the row `%s  %s`:\n%s", c, yes, out)
		}
	}
	lines := regexp.MustCompile(`(?m)^PASS  (SEQ-1|ROW-4)  (SEQ-1|ROW-4)/\S.*  \((<1ms|[0-9.]+m?s)\)$`).FindAllString(out, -1)
	if len(lines) != want {
		t.Errorf("got %d PASS lines, want %d:\n%s", len(lines), want, out)
	}
	passed, failed, skipped := summary(t, out)
	if passed != want || failed != 0 || skipped != 0 {
		t.Errorf("summary %d/%d/%d, want %d/0/0", passed, failed, skipped, want)
	}
	if errOut != "" {
		t.Errorf("stderr is not a terminal, so it must stay empty; got %q", errOut)
	}
}

func TestCaseLines(t *testing.T) {
	results := []conformance.CaseResult{
		{Name: "SEQ-1/first-is-one", Rule: "SEQ-1", Status: conformance.StatusPass, Duration: 12 * time.Millisecond, Output: []string{"log line"}},
		{Name: "WIN-4/stop-rule", Rule: "WIN-4", Status: conformance.StatusFail, Duration: 1500 * time.Millisecond,
			Output: []string{"commits mismatch (-want +got):\n  []int64{\n- \t3,\n  }"}},
		{Name: "RX-1/enqueue", Rule: "RX-1", Capability: "reactions", Status: conformance.StatusNotImplemented,
			Output: []string{"not implemented: capability reactions"}},
		{Name: "TX-7/unreachable", Rule: "TX-7", Status: conformance.StatusSkip, Duration: 300 * time.Microsecond, Output: []string{"no Unreachable"}},
	}
	quiet := "PASS  SEQ-1  SEQ-1/first-is-one  (12ms)\n" +
		"FAIL  WIN-4  WIN-4/stop-rule  (1.5s)\n" +
		"    rule WIN-4: see docs/contract.md\n" +
		"    commits mismatch (-want +got):\n" +
		"      []int64{\n" +
		"    - \t3,\n" +
		"      }\n" +
		"NOT IMPLEMENTED  RX-1  RX-1/enqueue\n" +
		"SKIP  TX-7  TX-7/unreachable  (<1ms)  — no Unreachable\n"
	verbose := "PASS  SEQ-1  SEQ-1/first-is-one  (12ms)\n" +
		"    log line\n" +
		"FAIL  WIN-4  WIN-4/stop-rule  (1.5s)\n" +
		"    rule WIN-4: see docs/contract.md\n" +
		"    commits mismatch (-want +got):\n" +
		"      []int64{\n" +
		"    - \t3,\n" +
		"      }\n" +
		"NOT IMPLEMENTED  RX-1  RX-1/enqueue\n" +
		"    not implemented: capability reactions\n" +
		"SKIP  TX-7  TX-7/unreachable  (<1ms)\n" +
		"    no Unreachable\n"
	for _, tc := range []struct {
		verbose bool
		want    string
	}{{false, quiet}, {true, verbose}} {
		var b bytes.Buffer
		r := &reporter{w: &b, format: "text", verbose: tc.verbose}
		for _, res := range results {
			r.result(res)
		}
		if b.String() != tc.want {
			t.Errorf("verbose=%v:\n got:\n%s\nwant:\n%s", tc.verbose, b.String(), tc.want)
		}
	}
}

func TestJSONReport(t *testing.T) {
	want := selected(t, subset)
	code, out, errOut := run(t, "-run", subset, "-format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	var rep conformance.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out)
	}
	if rep.Driver != "sqlite" || !strings.HasPrefix(rep.EngineVersion, "SQLite ") {
		t.Errorf("driver %q engine %q, want sqlite / SQLite …", rep.Driver, rep.EngineVersion)
	}
	if len(rep.Cases) != want || rep.Passed != want || rep.Failed != 0 {
		t.Errorf("cases %d passed %d failed %d, want %d/%d/0", len(rep.Cases), rep.Passed, rep.Failed, want, want)
	}
	for _, c := range rep.Cases {
		if c.Status != conformance.StatusPass || !strings.HasPrefix(c.Name, c.Rule+"/") {
			t.Errorf("case %+v: want PASS and a name starting with its rule", c)
		}
	}
	if len(rep.Capabilities) == 0 {
		t.Error("report has no capability matrix")
	}
}

func TestJUnitReport(t *testing.T) {
	want := selected(t, subset)
	code, out, errOut := run(t, "-run", subset, "-format", "junit")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	doc := parseJUnit(t, out)
	s := doc.Suites[0]
	if doc.Tests != want || s.Tests != want || len(s.Cases) != want || s.Failures != 0 {
		t.Errorf("tests %d/%d/%d failures %d, want %d and 0", doc.Tests, s.Tests, len(s.Cases), s.Failures, want)
	}
	for _, c := range s.Cases {
		if c.Failure != nil || c.Skipped != nil || c.Classname != "conformance.sqlite.core" {
			t.Errorf("testcase %+v: want a passing core case", c)
		}
		if _, err := strconv.ParseFloat(c.Time, 64); err != nil {
			t.Errorf("testcase %s: time %q is not seconds", c.Name, c.Time)
		}
	}
}

func TestUnknownDriver(t *testing.T) {
	code, out, errOut := run(t, "-driver", "no-such-driver")
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	if out != "" {
		t.Errorf("stdout %q, want empty", out)
	}
	for _, s := range []string{`"no-such-driver"`, "registered:", "sqlite", "import"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q: %s", s, errOut)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-format", "yaml"},
		{"-format", "markdown"}, // markdown is a -list format
		{"-list", "-format", "junit"},
		{"-run", "("},
		{"-run", "^NO-SUCH-RULE-99/"},
		{"-timeout", "0s"},
		{"-no-such-flag"},
		{"stray-argument"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := run(t, args...)
			if code != ExitUsage || out != "" || errOut == "" {
				t.Errorf("exit %d stdout %q stderr %q; want exit %d, empty stdout, a message", code, out, errOut, ExitUsage)
			}
		})
	}
	if code, _, _ := run(t, "-h"); code != ExitOK {
		t.Errorf("-h: exit %d, want 0", code)
	}
}

func TestList(t *testing.T) {
	all := conformance.Cases()
	if len(all) == 0 {
		t.Fatal("the suite registered no case")
	}
	code, out, _ := run(t, "-list", "-format", "json", "-driver", "not-needed-for-list")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var got []listEntry
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-list -format json: %v\n%s", err, out)
	}
	if len(got) != len(all) {
		t.Fatalf("listed %d cases, want %d", len(got), len(all))
	}
	for i, c := range all {
		want := listEntry{Name: c.Name, Rule: c.Rule(), Capability: capabilityOf(c)}
		if got[i] != want {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want)
		}
	}

	code, out, _ = run(t, "-list", "-run", subset)
	if code != ExitOK || !strings.HasSuffix(out, fmt.Sprintf("\n%d cases\n", selected(t, subset))) {
		t.Errorf("-list text: exit %d, output:\n%s", code, out)
	}
}

func TestMarkdownTable(t *testing.T) {
	code, out, _ := run(t, "-list", "-format", "markdown")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if out != MarkdownCaseTable(conformance.Cases()) {
		t.Error("-list -format markdown differs from MarkdownCaseTable")
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if lines[0] != "| Rule | Capability | Cases |" || lines[1] != "| --- | --- | --- |" {
		t.Fatalf("bad table head:\n%s", out)
	}
	seen := map[string]bool{}
	n := 0
	for _, l := range lines[2:] {
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cells) != 3 {
			t.Fatalf("row %q has %d cells, want 3", l, len(cells))
		}
		if seen[cells[0]] {
			t.Errorf("rule %s has two rows", cells[0])
		}
		seen[cells[0]] = true
		for _, name := range strings.Split(cells[2], "<br>") {
			if !strings.HasPrefix(name, "`"+cells[0]+"/") {
				t.Errorf("rule %s lists case %s of another rule", cells[0], name)
			}
			n++
		}
	}
	if n != len(conformance.Cases()) {
		t.Errorf("table lists %d cases, want %d", n, len(conformance.Cases()))
	}
}

// parseJUnit unmarshals a JUnit document with one testsuite.
func parseJUnit(t *testing.T, out string) junitSuites {
	t.Helper()
	var doc junitSuites
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not JUnit XML: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, xml.Header) || len(doc.Suites) != 1 {
		t.Fatalf("want an XML header and 1 testsuite, got %d:\n%s", len(doc.Suites), out)
	}
	return doc
}
