package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	gosync "sync"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// reporter writes one run's report in one format. The text and jsonl
// formats are written live: the header before the first case, one line
// per case as it finishes, the summary at the end. JSON and JUnit are
// written at the end.
type reporter struct {
	w       io.Writer
	format  string
	verbose bool
	err     error // first write error
}

// The lines of -format jsonl, one JSON object each, told apart by "type".
type (
	// jsonlRun is the first line.
	jsonlRun struct {
		Type          string                         `json:"type"` // "run"
		Driver        string                         `json:"driver"`
		EngineVersion string                         `json:"engineVersion,omitempty"`
		Capabilities  []conformance.CapabilityStatus `json:"capabilities"`
		Cases         int                            `json:"cases"` // how many are selected
	}
	// jsonlCase is one line per finished case.
	jsonlCase struct {
		Type string `json:"type"` // "case"
		conformance.CaseResult
	}
	// jsonlSummary is the last line.
	jsonlSummary struct {
		Type           string        `json:"type"` // "summary"
		Passed         int           `json:"passed"`
		Failed         int           `json:"failed"`
		Skipped        int           `json:"skipped"`
		NotImplemented int           `json:"notImplemented"`
		Interrupted    int           `json:"interrupted"`
		Duration       time.Duration `json:"durationNs"`
	}
)

// line writes v as one JSON line (-format jsonl).
func (r *reporter) line(v any) {
	if r.err == nil {
		r.err = json.NewEncoder(r.w).Encode(v)
	}
}

func (r *reporter) printf(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format, args...)
	}
}

// header writes the driver, engine version and capability matrix (text;
// jsonl: the "run" line). total is the number of selected cases.
func (r *reporter) header(name string, p probeResult, total int) {
	if r.format == "jsonl" {
		run := jsonlRun{Type: "run", Driver: name, EngineVersion: p.engineVersion, Cases: total}
		declared := map[driver.Capability]bool{}
		for _, c := range p.capabilities {
			declared[c] = true
		}
		for _, c := range driver.AllCapabilities {
			run.Capabilities = append(run.Capabilities, conformance.CapabilityStatus{Capability: c, Declared: declared[c], Expected: declared[c]})
		}
		r.line(run)
		return
	}
	if r.format != "text" {
		return
	}
	engine := p.engineVersion
	if engine == "" {
		engine = "unknown (the Conn does not implement driver.EngineVersioner)"
	}
	r.printf("driver: %s\nengine: %s\n\n", name, engine)
	declared := map[driver.Capability]bool{}
	for _, c := range p.capabilities {
		declared[c] = true
	}
	tw := tabwriter.NewWriter(r.w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "capability\tdeclared\n")
	fmt.Fprintf(tw, "core\tyes\n")
	for _, c := range driver.AllCapabilities {
		fmt.Fprintf(tw, "%s\t%s\n", c, yesNo(declared[c]))
	}
	if err := tw.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	r.printf("\n")
}

// result writes one case's line (text; jsonl: a "case" line): status,
// rule, name, duration, then the case's output indented — always for a
// failure, for the other outcomes with -v.
func (r *reporter) result(c conformance.CaseResult) {
	if r.format == "jsonl" {
		r.line(jsonlCase{Type: "case", CaseResult: c})
		return
	}
	if r.format != "text" {
		return
	}
	line := fmt.Sprintf("%s  %s  %s", c.Status, c.Rule, c.Name)
	if c.Status == conformance.StatusPass || c.Status == conformance.StatusFail || c.Duration > 0 {
		line += "  (" + formatDuration(c.Duration) + ")"
	}
	if (c.Status == conformance.StatusSkip || c.Status == conformance.StatusInterrupted) && !r.verbose && len(c.Output) > 0 {
		// Why a case did not run (to the end) is part of its result, not a detail.
		line += "  — " + strings.TrimSpace(c.Output[len(c.Output)-1])
	}
	r.printf("%s\n", line)
	if c.Status == conformance.StatusFail {
		r.printf("    rule %s: see docs/contract.md\n", c.Rule)
	}
	if c.Status == conformance.StatusFail || r.verbose {
		for _, out := range c.Output {
			for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
				r.printf("    %s\n", l)
			}
		}
	}
}

// finish writes the end of the report: the summary line for text, the
// whole report for JSON and JUnit.
func (r *reporter) finish(rep conformance.Report) error {
	switch r.format {
	case "text":
		if failed := rep.FailedRules(); len(failed) > 0 {
			r.printf("\nfailed rules: %s\n", strings.Join(failed, ", "))
		}
		r.printf("\n%s\n", rep.Summary())
	case "json":
		if r.err == nil {
			enc := json.NewEncoder(r.w)
			enc.SetIndent("", "  ")
			r.err = enc.Encode(rep)
		}
	case "junit":
		if r.err == nil {
			r.err = writeJUnit(r.w, rep)
		}
	case "jsonl":
		r.line(jsonlSummary{Type: "summary", Passed: rep.Passed, Failed: rep.Failed, Skipped: rep.Skipped,
			NotImplemented: rep.NotImplemented, Interrupted: rep.Interrupted, Duration: rep.Duration})
	}
	return r.err
}

// formatDuration renders d for a result line: "12ms", "1.5s", "<1ms".
func formatDuration(d time.Duration) string {
	if d < time.Millisecond {
		return "<1ms"
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// progress writes one self-overwriting "[37/142] running TX-6/…" line to a
// terminal. On anything that is not a terminal (a file, a pipe, a test's
// buffer) it writes nothing, so logs and CI output stay clean.
type progress struct {
	mu    gosync.Mutex
	w     io.Writer // nil: disabled
	total int
	n     int
	shown bool
}

// newProgress returns a progress line on w when w is a terminal.
func newProgress(w io.Writer, total int) *progress {
	p := &progress{total: total}
	if f, ok := w.(*os.File); ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		p.w = w
	}
	return p
}

// start shows the case that is about to run.
func (p *progress) start(c conformance.Case) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.w == nil {
		return
	}
	// \r returns to the line start, ESC[K clears the rest of the line.
	fmt.Fprintf(p.w, "\r\x1b[K[%d/%d] running %s", p.n, p.total, c.Name)
	p.shown = true
}

// clear removes the progress line so a report line can take its place.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
