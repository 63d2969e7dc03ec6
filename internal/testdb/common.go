// Package testdb gives tests a fresh database on a real engine (no mocks in
// place of a database). For each engine the server is found, once
// per test process, in this order:
//
//  1. the DSN in the engine's environment variable
//     (SYNCSTORE_TEST_POSTGRES_DSN, SYNCSTORE_TEST_MYSQL_DSN, …);
//  2. the local service, if it answers (PostgreSQL postgres@127.0.0.1:5432,
//     MariaDB root@127.0.0.1:3306);
//  3. a testcontainers-go container, when a Docker daemon is reachable;
//  4. else the test is skipped with a message naming exactly what to set —
//     or fails, when SYNCSTORE_TEST_REQUIRE_DB=1 (CI sets it).
//
// Each test then gets a database of its own, created with a random name
// and dropped by t.Cleanup, also after a failed test, so tests run in
// parallel and leave nothing behind. An engine is described by an Engine
// value; a per-engine file (postgres.go, mysql.go) only fills one in.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	gosync "sync"
	"testing"
	"time"
)

// RequireEnv is the variable that turns "no database" from a skip into a
// failure.
const RequireEnv = "SYNCSTORE_TEST_REQUIRE_DB"

// Engine describes how to find and use one kind of database server.
type Engine struct {
	// Name is the engine's name in messages ("PostgreSQL").
	Name string
	// EnvVar holds a server DSN supplied by the user.
	EnvVar string
	// LocalAddr is the host:port of the local service, probed with a TCP
	// dial; LocalDSN is the server DSN used when it answers.
	LocalAddr string
	LocalDSN  string
	// Ping checks that dsn reaches a server that accepts the credentials.
	Ping func(ctx context.Context, dsn string) error
	// Container starts a throwaway server and returns its DSN and a
	// function that stops it; nil when the engine has no container.
	Container func(ctx context.Context) (dsn string, stop func(), err error)
	// Create creates database name on the server of dsn and returns a DSN
	// of it; Drop removes it (and ends sessions still using it).
	Create func(ctx context.Context, dsn, name string) (string, error)
	Drop   func(ctx context.Context, dsn, name string) error
}

type resolved struct {
	dsn, source string
	err         error
}

var (
	mu    gosync.Mutex
	cache = map[string]*resolved{}
)

// ServerDSN returns the DSN of a server of engine e (see the package doc
// for the order), resolving it once per process; without one it skips t,
// or fails it when SYNCSTORE_TEST_REQUIRE_DB=1.
func ServerDSN(t testing.TB, e Engine) string {
	t.Helper()
	mu.Lock()
	r, ok := cache[e.Name]
	if !ok {
		r = resolve(e)
		cache[e.Name] = r
	}
	mu.Unlock()
	if r.err != nil {
		msg := fmt.Sprintf("testdb: no %s server: %v. Set %s to a server DSN (its role must be allowed to create databases), start the local service at %s, or make a Docker daemon reachable",
			e.Name, r.err, e.EnvVar, e.LocalAddr)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s (%s=1 requires a database)", msg, RequireEnv)
		}
		t.Skip(msg)
	}
	return r.dsn
}

// Source reports where the server of e was found ("env", "local",
// "container") after ServerDSN resolved it, else "".
func Source(e Engine) string {
	mu.Lock()
	defer mu.Unlock()
	if r, ok := cache[e.Name]; ok {
		return r.source
	}
	return ""
}

func resolve(e Engine) *resolved {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if dsn := os.Getenv(e.EnvVar); dsn != "" {
		if err := e.Ping(ctx, dsn); err != nil {
			return &resolved{err: fmt.Errorf("%s is set but the server does not answer: %w", e.EnvVar, err)}
		}
		return &resolved{dsn: dsn, source: "env"}
	}
	var local error
	if d, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", e.LocalAddr); err == nil {
		_ = d.Close()
		if local = e.Ping(ctx, e.LocalDSN); local == nil {
			return &resolved{dsn: e.LocalDSN, source: "local"}
		}
	} else {
		local = fmt.Errorf("nothing listens on %s", e.LocalAddr)
	}
	if e.Container == nil || !dockerReachable() {
		return &resolved{err: fmt.Errorf("%s is unset; local service: %v; no Docker daemon", e.EnvVar, local)}
	}
	dsn, _, err := e.Container(ctx)
	if err != nil {
		return &resolved{err: fmt.Errorf("%s is unset; local service: %v; container: %w", e.EnvVar, local, err)}
	}
	// The container lives as long as the test process (testcontainers'
	// reaper removes it afterwards).
	return &resolved{dsn: dsn, source: "container"}
}

// dockerReachable reports whether a Docker daemon answers on DOCKER_HOST
// or the default socket, without loading a Docker client.
func dockerReachable() bool {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return true // let testcontainers try the configured daemon
	}
	for _, sock := range []string{"/var/run/docker.sock", os.ExpandEnv("$HOME/.docker/run/docker.sock")} {
		if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			_ = c.Close()
			return true
		}
	}
	return false
}

// NewDatabase creates a database with a random name on the server of e
// and returns its DSN; t.Cleanup drops it, also after a failed test.
func NewDatabase(t testing.TB, e Engine) string {
	t.Helper()
	server := ServerDSN(t, e)
	name := RandomName()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := e.Create(ctx, server, name)
	if err != nil {
		t.Fatalf("testdb: create a %s database: %v", e.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Drop(ctx, server, name); err != nil {
			t.Errorf("testdb: drop %s database %s: %v", e.Name, name, err)
		}
	})
	return dsn
}

// RandomName returns a fresh database name: "syncstore_t_" + 16 hex digits.
func RandomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "syncstore_t_" + hex.EncodeToString(b[:])
}
