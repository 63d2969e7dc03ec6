// Package cli is the command-line front end of the conformance suite: a
// thin layer over conformance.RunCases that finds a registered driver,
// gives every case a fresh store through the driver's driver.Provisioner,
// prints a capability matrix and per-case results, and exits non-zero when
// a case fails. cmd/conformance is this package with the bundled drivers
// linked in.
//
// A third-party driver gets the same command with a two-line main.go:
//
//	package main
//
//	import (
//		_ "example.com/mydriver" // registers "mydriver" with sync.Register in init
//
//		"github.com/syncstore/syncstore/conformance/cli"
//	)
//
//	func main() { cli.Main() }
//
// and runs it as `go run . -driver mydriver -dsn '…'`.
//
// Flags:
//
//	-driver NAME   registered driver to test (default "sqlite")
//	-dsn DSN       base DSN handed to the driver's Provisioner ("" = the
//	               driver's default place, e.g. a temporary directory)
//	-run REGEX     run only the cases whose name matches (e.g. '^SEQ-|^TX-1/')
//	-format F      report on stdout: text (default), json, junit, jsonl;
//	               with -list also markdown (the rule → case table of
//	               docs/contract.md). text and jsonl are written as the
//	               run goes, json and junit at its end. jsonl streams one
//	               JSON object per line: {"type":"run",…} (driver, engine,
//	               capabilities, number of cases) first, then one
//	               {"type":"case",…} per finished case (a CaseResult),
//	               then {"type":"summary",…} (the counts), so a run that
//	               is killed keeps every case it finished
//	-v             print every case's output lines, not only a failing case's
//	-list          list the cases (rule, capability, name) without running them
//	-timeout D     bound for one case (default 2m)
//	-bench         run the standard benchmark (docs/performance.md W1–W8) instead of
//	               the suite and print a table of median rates, latency
//	               (p50/p99/max ms per operation) and peak memory per
//	               workload; -run selects workloads ('W1|W6'), -format
//	               text or json; see also -bench-runs (3), -bench-commits
//	               (5000), -bench-tenants (W8's partitions: 2 × commits),
//	               -bench-scale=N (W1 at N×, then W2, W3, W5 on it;
//	               bare: 10)
//
// -driver all runs every registered driver the command can reach (with
// its default base DSN: -dsn is refused), the suite one driver after the
// other (-format text only), the benchmark side by side (text or json);
// unreachable drivers are reported on stderr and skipped, and do not
// change the exit code.
//
// Reports count passed, failed, skipped (a case the harness cannot run,
// with its reason), not implemented (a case of a capability the driver
// does not declare) and interrupted cases separately.
//
// SIGINT (Ctrl-C) or SIGTERM interrupts a run: the running case is
// cancelled and reported INTERRUPTED (unless it already passed or
// skipped), every case not yet started is reported INTERRUPTED without
// running, each case's stores are dropped as usual, the report is
// written, and the exit code is 130. A second signal ends the process at
// once.
//
// Exit codes: 0 every selected case passed, was skipped or not
// implemented, 1 at least one case failed, 2 usage error or a harness
// that cannot open a store (unknown driver, no Provisioner, a -run pattern
// that matches no case), 130 interrupted (whatever failed before).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// Exit codes of Run.
const (
	ExitOK          = 0   // every selected case passed, was skipped or is not implemented
	ExitFailed      = 1   // at least one case failed
	ExitUsage       = 2   // bad flags, unknown driver, or a harness that cannot open a store
	ExitInterrupted = 130 // the run was interrupted (SIGINT, SIGTERM, or Run's ctx ended): the report is partial
)

// Main runs the command with os.Args and exits with its exit code.
// SIGINT and SIGTERM cancel Run's ctx (see the package doc: the run stops,
// its stores are dropped, exit code 130); a second signal ends the
// process at once.
func Main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		signal.Stop(sigs) // the next signal takes its default action
		cancel(fmt.Errorf("signal %v", sig))
	}()
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel(nil)
	os.Exit(code)
}

// config holds the parsed flags.
type config struct {
	driver  string
	dsn     string
	run     *regexp.Regexp
	format  string
	verbose bool
	list    bool
	timeout time.Duration
	bench   benchConfig
}

// parseFlags parses args. It returns flag.ErrHelp for -h.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	var run string
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.driver, "driver", "sqlite", "registered driver `name` to test: "+strings.Join(sync.Drivers(), ", ")+"; with -bench also \""+AllDrivers+"\" (every one reachable without a DSN)")
	fs.StringVar(&cfg.dsn, "dsn", "", "base `DSN` handed to the driver's Provisioner (\"\" = the driver's default, e.g. a temporary directory)")
	fs.StringVar(&run, "run", "", "run only the cases whose name matches `regex`")
	fs.StringVar(&cfg.format, "format", "text", "report `format` on stdout: text, json, junit, jsonl (one JSON line per finished case, streamed); with -list: text, json, markdown")
	fs.BoolVar(&cfg.verbose, "v", false, "print every case's output, also for passing cases")
	fs.BoolVar(&cfg.list, "list", false, "list the cases with rule and capability; run nothing")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "bound for one case")
	registerBenchFlags(fs, &cfg.bench)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: conformance [flags]\n\nRuns the syncstore conformance suite against a registered driver.\n"+
			"Each case gets a store of its own, dropped after it. SIGINT or SIGTERM stops the run:\n"+
			"cases not finished are reported INTERRUPTED and every store is still dropped.\n"+
			"Exit status: 0 all passed (or skipped, not implemented), 1 a case failed,\n"+
			"2 usage or harness error, 130 interrupted.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	if run != "" {
		re, err := regexp.Compile(run)
		if err != nil {
			return cfg, fmt.Errorf("bad -run pattern: %v", err)
		}
		cfg.run = re
	}
	if err := cfg.bench.validate(cfg); err != nil {
		return cfg, err
	}
	formats := map[string]bool{"text": true, "json": true, "junit": true, "jsonl": true}
	if cfg.list {
		formats = map[string]bool{"text": true, "json": true, "markdown": true}
	}
	if !formats[cfg.format] {
		return cfg, fmt.Errorf("bad -format %q (want %s)", cfg.format, strings.Join(sortedKeys(formats), ", "))
	}
	if cfg.timeout <= 0 {
		return cfg, fmt.Errorf("bad -timeout %s (want > 0)", cfg.timeout)
	}
	return cfg, nil
}

// Run runs the command with args (without the program name), writes the
// report to stdout and diagnostics and live progress to stderr, and
// returns the exit code (ExitOK, ExitFailed, ExitUsage or
// ExitInterrupted). Progress lines are written only when stderr is an
// *os.File on a terminal. ctx bounds the whole run: when it ends, the run
// stops as on SIGINT (package doc) and Run returns ExitInterrupted; each
// case is also bounded by -timeout.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "conformance: %v\n", err)
		return ExitUsage
	}
	if cfg.bench.on {
		return runBench(ctx, cfg, stdout, stderr)
	}
	cases := selectCases(cfg.run)
	if len(cases) == 0 {
		fmt.Fprintf(stderr, "conformance: no case matches -run %q (see -list)\n", cfg.run)
		return ExitUsage
	}
	if cfg.list {
		if err := writeList(stdout, cfg.format, cases); err != nil {
			fmt.Fprintf(stderr, "conformance: %v\n", err)
			return ExitUsage
		}
		return ExitOK
	}
	if cfg.driver == AllDrivers {
		return runAllSuites(ctx, cfg, len(cases), stdout, stderr)
	}
	return runSuite(ctx, cfg, len(cases), stdout, stderr)
}

// selectCases returns the suite's cases whose name re matches (all when re is nil).
func selectCases(re *regexp.Regexp) []conformance.Case {
	var out []conformance.Case
	for _, c := range conformance.Cases() {
		if re == nil || re.MatchString(c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// runSuite runs the selected cases against cfg.driver and writes the report.
func runSuite(ctx context.Context, cfg config, total int, stdout, stderr io.Writer) int {
	d, ok := sync.Lookup(cfg.driver)
	if !ok {
		names := sync.Drivers()
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		fmt.Fprintf(stderr, "conformance: unknown driver %q (registered: %s); is its package blank-imported by this program's main?\n", cfg.driver, list)
		return ExitUsage
	}
	p, err := probe(ctx, cfg.driver, d, cfg.dsn)
	if err != nil {
		fmt.Fprintf(stderr, "conformance: %v\n", err)
		if ctx.Err() != nil {
			return ExitInterrupted
		}
		return ExitUsage
	}
	// The expected capabilities are what the driver declares: a CLI run
	// reports them; a go test harness pins its own expectations (ERR-3).
	h, err := conformance.HarnessFor(cfg.driver, d, cfg.dsn, p.capabilities, false)
	if err != nil {
		fmt.Fprintf(stderr, "conformance: %v\n", err)
		return ExitUsage
	}

	out := &reporter{w: stdout, format: cfg.format, verbose: cfg.verbose}
	prog := newProgress(stderr, total)
	out.header(cfg.driver, p, total)
	opts := conformance.RunOptions{
		Match:       cfg.run,
		CaseTimeout: cfg.timeout,
		OnStart:     prog.start,
		OnResult: func(r conformance.CaseResult) {
			prog.clear()
			out.result(r)
		},
	}
	rep, err := conformance.RunCases(ctx, h, opts)
	prog.clear()
	if err != nil {
		fmt.Fprintf(stderr, "conformance: %v\n", err)
		if ctx.Err() != nil {
			return ExitInterrupted
		}
		return ExitUsage
	}
	if err := out.finish(rep); err != nil {
		fmt.Fprintf(stderr, "conformance: writing report: %v\n", err)
		return ExitUsage
	}
	if rep.Interrupted > 0 || ctx.Err() != nil {
		fmt.Fprintf(stderr, "conformance: interrupted (%v): %d of %d cases did not finish\n",
			context.Cause(ctx), rep.Interrupted, len(rep.Cases))
		return ExitInterrupted
	}
	if rep.Failed > 0 {
		return ExitFailed
	}
	return ExitOK
}

// probeResult is what one provisioned store tells about a driver.
type probeResult struct {
	engineVersion string
	capabilities  []driver.Capability
}

// probe provisions one store, opens it and reads the capabilities the Conn
// declares (by type assertion) and the engine version, then removes it.
func probe(ctx context.Context, name string, d driver.Driver, baseDSN string) (probeResult, error) {
	var res probeResult
	p, ok := d.(driver.Provisioner)
	if !ok {
		return res, fmt.Errorf("driver %q does not implement driver.Provisioner, so the CLI cannot create stores for it; test it with conformance.Run and a hand-written Harness", name)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	dsn, drop, err := p.Provision(ctx, baseDSN)
	if err != nil {
		return res, fmt.Errorf("driver %q: provision a store: %w", name, err)
	}
	defer func() { _ = drop(context.WithoutCancel(ctx)) }()
	conn, err := d.Open(ctx, dsn)
	if err != nil {
		return res, fmt.Errorf("driver %q: open a provisioned store: %w", name, err)
	}
	defer func() { _ = conn.Close() }()
	res.capabilities = driver.ConnCapabilities(conn)
	if v, ok := conn.(driver.EngineVersioner); ok {
		if s, err := v.EngineVersion(ctx); err == nil {
			res.engineVersion = s
		}
	}
	return res, nil
}
