// Package ssp2load is the load server of our SSP2 server: the Go
// counterpart of upstream Syncular's load/src/server.ts, so upstream's
// load suite (load/, five scenarios of protocol-level virtual clients)
// runs against package server over a sync.Store unchanged. Command
// ssp2load (cmd/ssp2load) serves it; .ci/load-compare.sh runs the suite
// against it and against upstream's own server side by side, and
// docs/performance.md says how to read the table.
//
// Upstream's conventions, kept:
//
//   - One partition, "load"; every request authenticates as actor
//     "load-actor" (no header needed); the actor may read and write every
//     project (project_id "*").
//   - Schema version 1, one table tasks: id, project_id, title (string),
//     done (boolean), priority, updated_at_ms (integer), all not null;
//     primary key id; scope project:{project_id}.
//   - SeedRows rows are seeded into project "storm" before the server
//     listens, with upstream's deterministic generator (mulberry32, seed
//     0x10adb6), so every row has upstream's bytes. Upstream writes them
//     into storage without a commit; the engine has no such path, so they
//     are pushed as commits of 1,000 rows (sync.MaxPushOps) by client
//     "load-seed" — the rows a client bootstraps are the same.
//   - GET /__load/metrics answers upstream's ServerMetrics JSON (RSS and
//     peak RSS in bytes, request counts and durations, segment built and
//     reused counts, applied pushes, prune counts) plus cpuSeconds.
//   - POST /__load/prune prunes with upstream's aggressive retention
//     (active window 0, force age 1 s, keep the newest 50 commits) and
//     answers {"removedCommits": n}.
//   - POST /__load/shutdown answers {"ok":true} and asks the process to
//     exit (Config.Shutdown).
//
// Counters upstream reads from its events seam and our server has no
// seam for: requests and requestErrors count HTTP requests to /sync and
// /segments/ (an error is a status ≥ 400; an in-band ERROR frame is not
// seen — the virtual clients count those); segmentsBuilt counts segments
// stored (external rows segments and SQLite images; upstream also counts
// each inline rows segment as built), segmentsReused the §5.3 image
// lookups that found one; pushApplied is the partition's commit count
// minus the seed's; pushConflicted, pushRejected and the realtime
// counters stay 0.
package ssp2load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// Upstream's fixture (load/src/fixture.ts).
const (
	Partition    = "load"
	ActorID      = "load-actor"
	Table        = "tasks"
	StormProject = "storm"
	seedClient   = "load-seed"
)

// Schema is upstream's load schema.
var Schema = ssp2.Schema{Version: 1, Tables: []ssp2.Table{{
	Name: Table,
	Columns: []ssp2.Column{
		{Name: "id", Type: ssp2.TypeString},
		{Name: "project_id", Type: ssp2.TypeString},
		{Name: "title", Type: ssp2.TypeString},
		{Name: "done", Type: ssp2.TypeBoolean},
		{Name: "priority", Type: ssp2.TypeInteger},
		{Name: "updated_at_ms", Type: ssp2.TypeInteger},
	},
	PrimaryKey: "id",
	Scopes:     []ssp2.ScopePattern{{Pattern: "project:{project_id}"}},
}}}

// Config configures Open.
type Config struct {
	// Driver names the store's driver (sqlite, postgres, mysql, d1http);
	// it must provision stores (driver.Provisioner).
	Driver string
	// BaseDSN is where the run's store is provisioned ("" = the
	// driver's default place: a temporary SQLite file, a new database on
	// the local PostgreSQL or MariaDB). The store is dropped by Close.
	BaseDSN string
	// SeedRows rows are seeded into project "storm" (0…10,000,000).
	SeedRows int
	// Shutdown is called (once, on its own goroutine) after
	// POST /__load/shutdown has been answered. nil: the route answers
	// and nothing else happens.
	Shutdown func()
	// Logger receives the SSP2 server's logs; nil discards them.
	Logger *slog.Logger
	// SegmentDir, when not "", keeps external segments (rows pages and
	// SQLite images) in files in that directory (server.FileSegmentStore)
	// instead of this process's memory (server.MemorySegmentStore, as
	// upstream's load server does). Close leaves the directory.
	SegmentDir string
}

// maxSeedRows bounds Config.SeedRows.
const maxSeedRows = 10_000_000

// maxDurations bounds the request durations kept for the percentiles;
// past it, samples are kept by reservoir sampling.
const maxDurations = 1 << 20

// Load is one run's server: a fresh store, the SSP2 server over it, the
// control routes and the metrics. Close ends it and drops the store.
type Load struct {
	cfg       Config
	store     *sync.Store
	drop      func(context.Context) error
	srv       *server.Server
	segs      *countingSegments
	seedSeq   int64
	handler   http.Handler
	stopRSS   chan struct{}
	rssDone   chan struct{}
	closeOnce gosync.Once
	closeErr  error
	shutOnce  gosync.Once

	peakRSS      atomic.Int64
	requests     atomic.Int64
	requestErrs  atomic.Int64
	pruneRuns    atomic.Int64
	pruneRemoved atomic.Int64

	durMu  gosync.Mutex
	durs   []float64 // ms
	durN   int64     // samples offered
	durRng *rand.Rand
}

// Open provisions a store on cfg.Driver, lays out the schema, seeds it
// and returns the Load serving it. On error nothing is left behind.
func Open(ctx context.Context, cfg Config) (_ *Load, err error) {
	if cfg.SeedRows < 0 || cfg.SeedRows > maxSeedRows {
		return nil, fmt.Errorf("ssp2load: SeedRows %d is outside 0…%d", cfg.SeedRows, maxSeedRows)
	}
	d, ok := sync.Lookup(cfg.Driver)
	if !ok {
		return nil, fmt.Errorf("ssp2load: driver %q is not registered", cfg.Driver)
	}
	prov, ok := d.(driver.Provisioner)
	if !ok {
		return nil, fmt.Errorf("ssp2load: driver %q cannot provision stores", cfg.Driver)
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	dsn, drop, err := prov.Provision(ctx, cfg.BaseDSN)
	if err != nil {
		return nil, fmt.Errorf("ssp2load: provision a %s store: %w", cfg.Driver, err)
	}
	l := &Load{cfg: cfg, drop: drop, durRng: rand.New(rand.NewPCG(1, 2))}
	defer func() {
		if err != nil {
			_ = l.Close(context.WithoutCancel(ctx))
		}
	}()
	if l.store, err = sync.OpenContext(ctx, cfg.Driver, dsn); err != nil {
		return nil, fmt.Errorf("ssp2load: open the %s store: %w", cfg.Driver, err)
	}
	engine, err := Schema.DriverSchema()
	if err != nil {
		return nil, err
	}
	if err = l.store.EnsureSchema(ctx, engine); err != nil {
		return nil, fmt.Errorf("ssp2load: ensure the schema: %w", err)
	}
	if err = seed(ctx, l.store, cfg.SeedRows); err != nil {
		return nil, err
	}
	if l.seedSeq, err = l.store.MaxCommitSeq(ctx, Partition); err != nil {
		return nil, err
	}
	var segStore server.SegmentStore = server.NewMemorySegmentStore(0)
	if cfg.SegmentDir != "" {
		if segStore, err = server.NewFileSegmentStore(cfg.SegmentDir); err != nil {
			return nil, err
		}
	}
	l.segs = &countingSegments{SegmentStore: segStore}
	l.srv, err = server.New(l.store, server.Config{
		Schema: Schema,
		Authenticate: func(*http.Request) (server.Identity, error) {
			return server.Identity{Partition: Partition, ActorID: ActorID}, nil
		},
		ResolveScopes: func(context.Context, server.Identity, string) (map[string][]string, error) {
			return map[string][]string{"project_id": {"*"}}, nil
		},
		Segments: l.segs,
		Logger:   lg,
	})
	if err != nil {
		return nil, fmt.Errorf("ssp2load: server.New: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /__load/metrics", l.serveMetrics)
	mux.HandleFunc("POST /__load/prune", l.servePrune)
	mux.HandleFunc("POST /__load/shutdown", l.serveShutdown)
	mux.Handle("/", l.timed(l.srv))
	l.handler = mux
	l.stopRSS, l.rssDone = make(chan struct{}), make(chan struct{})
	go l.sampleRSS()
	return l, nil
}

// ServeHTTP serves the SSP2 routes (POST /sync, GET /realtime,
// GET /segments/{id}) and the control routes.
func (l *Load) ServeHTTP(w http.ResponseWriter, r *http.Request) { l.handler.ServeHTTP(w, r) }

// Close ends the SSP2 server (its sockets too), closes the store and
// drops it. Later calls return the first call's error.
func (l *Load) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		var errs []error
		if l.stopRSS != nil {
			close(l.stopRSS)
			<-l.rssDone
		}
		if l.srv != nil {
			errs = append(errs, l.srv.Close())
		}
		if l.store != nil {
			errs = append(errs, l.store.Close())
		}
		if l.drop != nil {
			errs = append(errs, l.drop(ctx))
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// timed counts and times the HTTP requests to /sync and /segments/.
func (l *Load) timed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sync" && !strings.HasPrefix(r.URL.Path, "/segments/") {
			next.ServeHTTP(w, r)
			return
		}
		t0 := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		l.requests.Add(1)
		if sw.status >= 400 {
			l.requestErrs.Add(1)
		}
		l.addDuration(float64(time.Since(t0).Microseconds()) / 1000)
	})
}

func (l *Load) addDuration(ms float64) {
	l.durMu.Lock()
	defer l.durMu.Unlock()
	l.durN++
	if len(l.durs) < maxDurations {
		l.durs = append(l.durs, ms)
		return
	}
	if i := l.durRng.Int64N(l.durN); i < maxDurations {
		l.durs[i] = ms
	}
}

// statusWriter records the status; it passes Flush through (the sync
// response streams).
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(p)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Metrics is upstream's ServerMetrics (load/src/harness.ts) plus
// CPUSeconds, the process's user+system CPU time.
type Metrics struct {
	RSSBytes            int64       `json:"rssBytes"`
	PeakRSSBytes        int64       `json:"peakRssBytes"`
	Requests            int64       `json:"requests"`
	RequestErrors       int64       `json:"requestErrors"`
	RequestDurationMs   Percentiles `json:"requestDurationMs"`
	SegmentsBuilt       int64       `json:"segmentsBuilt"`
	SegmentsReused      int64       `json:"segmentsReused"`
	PushApplied         int64       `json:"pushApplied"`
	PushConflicted      int64       `json:"pushConflicted"`
	PushRejected        int64       `json:"pushRejected"`
	RealtimeDeltas      int64       `json:"realtimeDeltas"`
	RealtimeWakes       int64       `json:"realtimeWakes"`
	RealtimeOpened      int64       `json:"realtimeOpened"`
	RealtimeClosed      int64       `json:"realtimeClosed"`
	PruneRuns           int64       `json:"pruneRuns"`
	PruneRemovedCommits int64       `json:"pruneRemovedCommits"`
	CPUSeconds          float64     `json:"cpuSeconds"`
}

// Percentiles of request durations in ms; null (NaN upstream) when no
// request was served.
type Percentiles struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	P99 *float64 `json:"p99"`
}

// Snapshot returns the metrics now.
func (l *Load) Snapshot(ctx context.Context) (Metrics, error) {
	rss := readRSS()
	raisePeak(&l.peakRSS, rss)
	maxSeq, err := l.store.MaxCommitSeq(ctx, Partition)
	if err != nil {
		return Metrics{}, err
	}
	l.durMu.Lock()
	sorted := slices.Clone(l.durs)
	l.durMu.Unlock()
	slices.Sort(sorted)
	pct := func(p float64) *float64 {
		if len(sorted) == 0 {
			return nil
		}
		i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
		v := sorted[min(max(i, 0), len(sorted)-1)]
		return &v
	}
	return Metrics{
		RSSBytes:            rss,
		PeakRSSBytes:        l.peakRSS.Load(),
		Requests:            l.requests.Load(),
		RequestErrors:       l.requestErrs.Load(),
		RequestDurationMs:   Percentiles{pct(50), pct(95), pct(99)},
		SegmentsBuilt:       l.segs.built.Load(),
		SegmentsReused:      l.segs.reused.Load(),
		PushApplied:         maxSeq - l.seedSeq,
		PruneRuns:           l.pruneRuns.Load(),
		PruneRemovedCommits: l.pruneRemoved.Load(),
		CPUSeconds:          readCPUSeconds(),
	}, nil
}

func (l *Load) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m, err := l.Snapshot(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"code": "load.metrics_failed", "message": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// PrunePolicy is upstream's load retention (server.ts): no client is
// active, commits older than 1 s go, the newest 50 always stay; push
// results and client records keep the defaults.
func PrunePolicy() sync.RetentionPolicy {
	pol := sync.DefaultRetentionPolicy
	pol.NoDefaults = true
	pol.ActiveWindow = 0
	pol.ForceAge = time.Second
	pol.MinRetainedCommits = 50
	return pol
}

func (l *Load) servePrune(w http.ResponseWriter, r *http.Request) {
	rep, err := l.store.Prune(r.Context(), Partition, PrunePolicy())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"code": "load.prune_failed", "message": err.Error()})
		return
	}
	l.pruneRuns.Add(1)
	l.pruneRemoved.Add(rep.CommitsPruned)
	writeJSON(w, http.StatusOK, map[string]int64{"removedCommits": rep.CommitsPruned})
}

func (l *Load) serveShutdown(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if l.cfg.Shutdown != nil {
		l.shutOnce.Do(func() { go l.cfg.Shutdown() })
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sampleRSS raises the peak every 100 ms (upstream's tick), so a peak
// between two metrics reads is seen.
func (l *Load) sampleRSS() {
	defer close(l.rssDone)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		raisePeak(&l.peakRSS, readRSS())
		select {
		case <-t.C:
		case <-l.stopRSS:
			return
		}
	}
}

func raisePeak(peak *atomic.Int64, v int64) {
	for {
		p := peak.Load()
		if v <= p || peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// readRSS returns the process's resident set in bytes (Linux
// /proc/self/statm), 0 where it cannot be read.
func readRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// readCPUSeconds returns the process's user+system CPU time (Linux
// /proc/self/stat, in clock ticks of 1/100 s), 0 where it cannot be read.
func readCPUSeconds() float64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After the command: state is field 3; utime and stime are 14, 15.
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return float64(ut+st) / 100
}

// countingSegments counts what the server stores (built) and the §5.3
// image lookups that found a stored image (reused).
type countingSegments struct {
	server.SegmentStore
	built, reused atomic.Int64
}

func (c *countingSegments) Put(ctx context.Context, rec server.SegmentRecord, body io.Reader) error {
	err := c.SegmentStore.Put(ctx, rec, body)
	if err == nil {
		c.built.Add(1)
	}
	return err
}

func (c *countingSegments) Find(ctx context.Context, key server.SegmentKey, nowMs int64) (server.SegmentRecord, bool, error) {
	rec, ok, err := c.SegmentStore.Find(ctx, key, nowMs)
	if ok && err == nil {
		c.reused.Add(1)
	}
	return rec, ok, err
}
