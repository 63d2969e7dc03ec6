// Command ssp2host serves the conformance host of package ssp2conf on a
// loopback port, for upstream Syncular's scenario catalog run with the
// TypeScript ServerDriver in internal/ssp2conf/ts (.ci/ssp2-catalog.sh):
//
//	go run ./internal/ssp2conf/cmd/ssp2host -driver sqlite
//	go run ./internal/ssp2conf/cmd/ssp2host -driver postgres -dsn 'postgres://postgres@127.0.0.1:5432/postgres'
//	go run ./internal/ssp2conf/cmd/ssp2host -driver mysql -dsn 'root@tcp(127.0.0.1:3306)/'
//	go run ./internal/ssp2conf/cmd/ssp2host -driver d1http      # on an in-process D1 double
//
// Every instance gets a fresh store from the driver's Provisioner on -dsn
// ("" = the driver's default place; for d1http "" starts the D1 HTTP
// double, drivers/d1http/d1test, on another loopback port); -spares
// stores are kept provisioned ahead and closed instances' stores are
// dropped in the background, since a PostgreSQL or MariaDB database costs
// seconds to create and drop. Once
// listening it prints "SSP2HOST_READY <port>" on stdout. SIGTERM or
// SIGINT closes every instance, drops every store and exits 0.
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
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/syncstore/syncstore/drivers/d1http" // registers "d1http"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	_ "github.com/syncstore/syncstore/drivers/mysql"    // registers "mysql"
	_ "github.com/syncstore/syncstore/drivers/postgres" // registers "postgres"
	_ "github.com/syncstore/syncstore/drivers/sqlite"   // registers "sqlite"
	"github.com/syncstore/syncstore/internal/ssp2conf"
)

func main() {
	drv := flag.String("driver", "sqlite", "driver of every instance's store: sqlite, postgres, mysql, d1http")
	dsn := flag.String("dsn", "", "base DSN the stores are provisioned on (\"\" = the driver's default; d1http: an in-process D1 double)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (port 0 = any free port)")
	maxInst := flag.Int("max-instances", 64, "instances alive at once")
	spares := flag.Int("spares", 2, "fresh stores kept provisioned ahead of creates")
	verbose := flag.Bool("v", false, "log instance lifecycle and server logs to stderr")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("ssp2host: ")
	if err := run(*drv, *dsn, *addr, *maxInst, *spares, *verbose); err != nil {
		log.Fatal(err)
	}
}

func run(drv, dsn, addr string, maxInstances, spares int, verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if drv == "d1http" && dsn == "" {
		d1, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		double := d1test.NewHandler("t")
		defer double.Close()
		d1srv := &http.Server{Handler: double, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = d1srv.Serve(d1) }()
		defer d1srv.Close()
		dsn = "d1://acct?token=t&endpoint=http://" + d1.Addr().String()
	}

	lg := slog.New(slog.DiscardHandler)
	if verbose {
		lg = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	host, err := ssp2conf.New(ssp2conf.Config{Driver: drv, BaseDSN: dsn, MaxInstances: maxInstances, Spares: spares, Logger: lg})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: host, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("SSP2HOST_READY %d\n", ln.Addr().(*net.TCPAddr).Port)

	select {
	case <-ctx.Done():
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			_ = host.Close(context.Background())
			return err
		}
	}
	// Stop taking requests, then end every instance (its sockets too) and
	// drop its store.
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	closing, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	err = host.Close(closing)
	_ = srv.Close()
	if err != nil {
		return fmt.Errorf("closing the instances: %w", err)
	}
	return nil
}
