package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
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
	scale   bool
}

// registerBenchFlags adds the benchmark flags to fs.
func registerBenchFlags(fs *flag.FlagSet, cfg *benchConfig) {
	fs.BoolVar(&cfg.on, "bench", false, "run the standard benchmark (BENCH.md W1–W6) instead of the suite; -run then selects workloads by id (e.g. 'W1|W6')")
	fs.IntVar(&cfg.runs, "bench-runs", 3, "with -bench: runs per workload, each on a fresh store (rates are the median; ≥ 3)")
	fs.IntVar(&cfg.commits, "bench-commits", 5000, "with -bench: W1's number of commits (BENCH.md: 5000)")
	fs.BoolVar(&cfg.scale, "bench-scale", false, "with -bench: add one W1 run at 10× -bench-commits (BENCH.md's scaling check)")
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
// conformance.BenchReport. Exit: 0, 1 when a workload failed, 2 for
// usage errors, an unreachable single driver, or an interrupt.
func runBench(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	names, ok := driverNames(cfg, stderr)
	if !ok {
		return ExitUsage
	}
	prog := newProgress(stderr, 0)
	var reports []conformance.BenchReport
	code := ExitOK
	for _, name := range names {
		d, _ := sync.Lookup(name)
		if _, err := probe(ctx, name, d, cfg.dsn); err != nil {
			if cfg.driver != AllDrivers {
				fmt.Fprintf(stderr, "conformance: %v\n", err)
				return ExitUsage
			}
			fmt.Fprintf(stderr, "conformance: driver %s skipped: cannot reach it: %v\n", name, err)
			continue
		}
		h, err := conformance.HarnessFor(name, d, cfg.dsn, nil, false)
		if err != nil {
			fmt.Fprintf(stderr, "conformance: %v\n", err)
			return ExitUsage
		}
		rep, err := conformance.RunWorkloads(ctx, h, conformance.BenchOptions{
			Runs: cfg.bench.runs, Commits: cfg.bench.commits, Scale: cfg.bench.scale, Match: cfg.run,
			Progress: func(line string) { showBenchStep(prog, name+": "+line) },
		})
		prog.clear()
		if err != nil {
			fmt.Fprintf(stderr, "conformance: driver %s: %v\n", name, err)
			return ExitUsage
		}
		if rep.Failed() {
			code = ExitFailed
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
// reach, one report after the other (text format only); the exit code is
// the worst of the runs.
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
		d, _ := sync.Lookup(name)
		if _, err := probe(ctx, name, d, cfg.dsn); err != nil {
			fmt.Fprintf(stderr, "conformance: driver %s skipped: cannot reach it: %v\n", name, err)
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
