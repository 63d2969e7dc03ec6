// Command ssp2load is the load server of package ssp2load: our SSP2
// server over a fresh store, with upstream Syncular's load-server
// conventions, for upstream's load suite (.ci/load-compare.sh):
//
//	go run ./internal/ssp2load/cmd/ssp2load -driver sqlite
//	go run ./internal/ssp2load/cmd/ssp2load -driver postgres   # a new database on 127.0.0.1:5432
//	go run ./internal/ssp2load/cmd/ssp2load -driver mysql      # a new database on 127.0.0.1:3306
//
// Like upstream's load/src/server.ts it reads SYNCULAR_LOAD_PORT (0 = any
// free port) and SYNCULAR_LOAD_SEED_ROWS from the environment, listens on
// 127.0.0.1 and prints "LOAD_SERVER_READY <port>" on stdout. POST
// /__load/shutdown, SIGTERM or SIGINT closes the server and the store,
// drops the store and exits 0 (1 when the drop failed).
//
// -segments DIR keeps external segments in files in DIR instead of in
// memory (the directory is left behind). -pprof ADDR (e.g.
// 127.0.0.1:7441) also serves net/http/pprof's /debug/pprof/ there, on
// its own listener, for profiling the server under a run:
// go tool pprof http://ADDR/debug/pprof/profile?seconds=30.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	_ "github.com/syncstore/syncstore/drivers/d1http"   // registers "d1http"
	_ "github.com/syncstore/syncstore/drivers/mysql"    // registers "mysql"
	_ "github.com/syncstore/syncstore/drivers/postgres" // registers "postgres"
	_ "github.com/syncstore/syncstore/drivers/sqlite"   // registers "sqlite"
	"github.com/syncstore/syncstore/internal/ssp2load"
)

func main() {
	drv := flag.String("driver", "sqlite", "the store's driver: sqlite, postgres, mysql")
	dsn := flag.String("dsn", "", "base DSN the run's store is provisioned on (\"\" = the driver's default)")
	pprofAddr := flag.String("pprof", "", "also serve /debug/pprof/ on this address (\"\" = not at all)")
	segDir := flag.String("segments", "", "keep external segments in files in this directory (\"\" = in memory)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("ssp2load: ")
	if *pprofAddr != "" {
		if err := servePprof(*pprofAddr); err != nil {
			log.Fatal(err)
		}
	}
	if err := run(*drv, *dsn, *segDir); err != nil {
		log.Fatal(err)
	}
}

func envInt(name string) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return n, nil
}

func run(drv, dsn, segDir string) error {
	port, err := envInt("SYNCULAR_LOAD_PORT")
	if err != nil {
		return err
	}
	seedRows, err := envInt("SYNCULAR_LOAD_SEED_ROWS")
	if err != nil {
		return err
	}
	// Signals are caught for the whole life of the process: a second
	// SIGTERM while the store is being dropped must not cut the drop.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{}, 1)
	stop := func() {
		select {
		case quit <- struct{}{}:
		default:
		}
	}
	ctx := context.Background()
	l, err := ssp2load.Open(ctx, ssp2load.Config{
		Driver: drv, BaseDSN: dsn, SeedRows: seedRows, Shutdown: stop, SegmentDir: segDir,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		_ = l.Close(ctx)
		return err
	}
	hs := &http.Server{Handler: l, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Printf("LOAD_SERVER_READY %d\n", ln.Addr().(*net.TCPAddr).Port)

	var serveErr error
	select {
	case <-sigs:
	case <-quit:
	case serveErr = <-served:
	}
	shutdown, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	closing, cancel2 := context.WithTimeout(ctx, time.Minute)
	defer cancel2()
	err = l.Close(closing)
	_ = hs.Close()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return errors.Join(serveErr, err)
	}
	return err
}

// servePprof serves net/http/pprof's handlers on addr until the process
// exits; it returns once the address is bound.
func servePprof(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-pprof %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() { _ = http.Serve(ln, mux) }()
	return nil
}
