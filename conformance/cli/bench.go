package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/sync"
)

// AllDrivers is the -driver value that selects every registered driver the
// command can reach (its Provisioner creates a store and Open succeeds);
// an unreachable driver is listed as skipped, never failed.
const AllDrivers = "all"

// benchConfig holds the benchmark flags.
type benchConfig struct {
	on      bool
	runs    int
	commits int
	tenants int
	scale   scaleFlag
}

// scaleFlag is -bench-scale: a factor N (0 off), also accepted as a bare
// -bench-scale (what was a boolean flag: ×10) or -bench-scale=true|false.
// Being a boolean-style flag, a factor must be written -bench-scale=N.
type scaleFlag int

func (f *scaleFlag) String() string { return strconv.Itoa(int(*f)) }

// IsBoolFlag lets -bench-scale stand alone (flag.boolFlag).
func (f *scaleFlag) IsBoolFlag() bool { return true }

func (f *scaleFlag) Set(s string) error {
	switch s {
	case "true":
		*f = 10
		return nil
	case "false":
		*f = 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n == 1 {
		return fmt.Errorf("want a factor ≥ 2 (e.g. -bench-scale=100), 0 for none, or no value for 10")
	}
	*f = scaleFlag(n)
	return nil
}

// registerBenchFlags adds the benchmark flags to fs.
func registerBenchFlags(fs *flag.FlagSet, cfg *benchConfig) {
	fs.BoolVar(&cfg.on, "bench", false, "run the standard benchmark (docs/performance.md W1–W8) instead of the suite; -run then selects workloads by id (e.g. 'W1|W6')")
	fs.IntVar(&cfg.runs, "bench-runs", 3, "with -bench: runs per workload, each on a fresh store (rates are the median; ≥ 3)")
	fs.IntVar(&cfg.commits, "bench-commits", 5000, "with -bench: W1's number of commits (docs/performance.md: 5000)")
	fs.IntVar(&cfg.tenants, "bench-tenants", 0, "with -bench: W8's number of partitions, 20 commits each (0: 2 × -bench-commits, 10,000 for the standard run)")
	fs.Var(&cfg.scale, "bench-scale", "with -bench: `=N` adds W1 at N × -bench-commits, then W2, W3, W5 on that store, against ×1 (e.g. -bench-scale=100: 500,000 commits; bare -bench-scale: 10; 0: none)")
}

// validate checks the benchmark flags against the rest of cfg.
func (b benchConfig) validate(cfg config) error {
	if !b.on {
		return nil
	}
	switch {
	case cfg.list:
		return fmt.Errorf("-bench and -list do not go together")
	case cfg.format != "text" && cfg.format != "json":
		return fmt.Errorf("bad -format %q with -bench (want json or text)", cfg.format)
	case b.runs < 1:
		return fmt.Errorf("bad -bench-runs %d (want ≥ 1)", b.runs)
	case b.commits < 10:
		return fmt.Errorf("bad -bench-commits %d (want ≥ 10)", b.commits)
	case b.tenants < 0:
		return fmt.Errorf("bad -bench-tenants %d (want ≥ 1, or 0 for 2 × -bench-commits)", b.tenants)
	}

	return nil
}

// driverNames resolves -driver: one registered name, or every registered
// driver for AllDrivers.
func driverNames(cfg config, stderr io.Writer) ([]string, bool) {
	if cfg.driver == AllDrivers {
		if cfg.dsn != "" {
			fmt.Fprintf(stderr, "conformance: -dsn cannot be used with -driver all (each driver uses its default place)\n")
			return nil, false
		}
		return sync.Drivers(), true
	}
	if _, ok := sync.Lookup(cfg.driver); !ok {
		fmt.Fprintf(stderr, "conformance: unknown driver %q (registered: %s); is its package blank-imported by this program's main?\n",
			cfg.driver, strings.Join(sync.Drivers(), ", "))
		return nil, false
	}
	return []string{cfg.driver}, true
}

// runBench runs the benchmark against the selected driver(s) and writes
// one table (text: a column per driver) or a JSON array of
// conformance.BenchReport. With -driver all, a driver that cannot be
// reached (its probe fails) is reported on stderr and skipped without
// changing the exit status; one whose harness fails mid-run is reported on
// stderr, left out of the table, and makes the exit status 2. Exit: 0, 1
// when a workload failed, 2 for usage errors, an unreachable single
// driver, a harness failure or no reachable driver, 130 for an interrupt.
func runBench(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	names, ok := driverNames(cfg, stderr)
	if !ok {
		return ExitUsage
	}
	if cfg.bench.runs < 3 {
		fmt.Fprintf(stderr, "conformance: -bench-runs %d: rates are medians of fewer than 3 runs; compare, do not quote them\n", cfg.bench.runs)
	}
	prog := newProgress(stderr, 0)
	var reports []conformance.BenchReport
	code := ExitOK
	for _, name := range names {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "conformance: interrupted (%v)\n", context.Cause(ctx))
			return ExitInterrupted
		}
		d, _ := sync.Lookup(name)
		if _, err := probe(ctx, name, d, cfg.dsn); err != nil {
			if cfg.driver != AllDrivers {
				fmt.Fprintf(stderr, "conformance: %v\n", err)
				return ExitUsage
			}
			skipUnreachable(stderr, name, err)
			continue
		}
		h, err := conformance.HarnessFor(name, d, cfg.dsn, nil, false)
		if err != nil {
			fmt.Fprintf(stderr, "conformance: %v\n", err)
			return ExitUsage
		}
		rep, err := conformance.RunWorkloads(ctx, h, conformance.BenchOptions{
			Runs: cfg.bench.runs, Commits: cfg.bench.commits, Tenants: cfg.bench.tenants, Scale: int(cfg.bench.scale), Match: cfg.run,
			Progress: func(line string) { showBenchStep(prog, name+": "+line) },
		})
		prog.clear()
		if err != nil {
			fmt.Fprintf(stderr, "conformance: driver %s: %v\n", name, err)
			if ctx.Err() != nil {
				return ExitInterrupted
			}
			if cfg.driver != AllDrivers {
				return ExitUsage
			}
			// -driver all: a driver lost mid-run (its harness could not
			// open a store) is left out of the table; the others are
			// still measured and reported, and the exit status says it.
			code = ExitUsage
			continue
		}
		if len(rep.Workloads) == 0 { // the same for every driver
			fmt.Fprintf(stderr, "conformance: no workload matches -run %q (workloads: W1, W2, W3, W4, W5, W6a, W6b, W7, W8)\n", cfg.run)
			return ExitUsage
		}
		if rep.Failed() {
			code = max(code, ExitFailed)
		}
		reports = append(reports, rep)
	}
	if len(reports) == 0 {
		fmt.Fprintf(stderr, "conformance: no driver could be reached\n")
		return ExitUsage
	}
	var err error
	if cfg.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(reports)
	} else {
		err = writeBenchTable(stdout, reports)
	}
	if err != nil {
		fmt.Fprintf(stderr, "conformance: writing report: %v\n", err)
		return ExitUsage
	}
	return code
}

// runAllSuites runs the suite against every registered driver it can
// reach, one report after the other (text format only); a driver whose
// probe fails is reported on stderr and skipped. The exit code is the
// worst of the runs (ExitUsage when none could be reached, ExitInterrupted
// when the run was interrupted).
func runAllSuites(ctx context.Context, cfg config, total int, stdout, stderr io.Writer) int {
	if cfg.format != "text" {
		fmt.Fprintf(stderr, "conformance: -driver all runs several suites; use -format text, or one -driver per run for %s\n", cfg.format)
		return ExitUsage
	}
	names, ok := driverNames(cfg, stderr)
	if !ok {
		return ExitUsage
	}
	code, ran := ExitOK, 0
	for _, name := range names {
		if ctx.Err() != nil { // interrupted: runSuite said so; start no other driver
			return ExitInterrupted
		}
		d, _ := sync.Lookup(name)
		if _, err := probe(ctx, name, d, cfg.dsn); err != nil {
			skipUnreachable(stderr, name, err)
			continue
		}
		one := cfg
		one.driver = name
		if ran > 0 {
			fmt.Fprintf(stdout, "\n")
		}
		ran++
		code = max(code, runSuite(ctx, one, total, stdout, stderr))
	}
	if ran == 0 {
		fmt.Fprintf(stderr, "conformance: no driver could be reached\n")
		return ExitUsage
	}
	return code
}

// showBenchStep shows a benchmark step on the progress line (terminals only).
func showBenchStep(p *progress, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", s)
	p.shown = true
}

// skipUnreachable reports on stderr a driver -driver all leaves out.
func skipUnreachable(stderr io.Writer, name string, err error) {
	fmt.Fprintf(stderr, "conformance: driver %s skipped: cannot reach it: %v (to run it, name it alone: -driver %s -dsn …)\n", name, err, name)
}
