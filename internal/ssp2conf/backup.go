package ssp2conf

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/sync"
)

// The backup-restore capability (upstream's captureBackup and
// restoreBackup; SPEC §2.1's backup restore rule, docs/syncular.md
// "Backup and restore"):
//
//	captureBackup {} → {}   a whole-store copy of the instance's store
//	restoreBackup {} → {rotated}   the store put back to that copy, then
//	                        every partition's log epoch rotated, then a
//	                        new server over it
//
// The copy is the engine's own (driver.Backuper: a PostgreSQL template
// database, a MySQL schema copied table by table, SQLite's VACUUM INTO
// and backup API, D1's Time Travel); the engines need the store closed
// while they copy it, so both controls stop the instance: requests wait
// at the gate, the server is closed (its realtime sockets too; clients
// reconnect), the store closed, copied or restored, reopened, and a new
// server made with the same configuration. restoreBackup is the
// procedure a host operator follows (server.RotateAllLogEpochs): the
// epochs are rotated before the new server takes a request.

// storeBackup is an instance's captured copy.
type storeBackup struct {
	restore, drop func(context.Context) error
}

// errUnavailable answers a request that reaches an instance whose
// restart failed.
var errUnavailable = &hostError{http.StatusServiceUnavailable, "host.instance_down", "the instance's store could not be reopened"}

// serve hands r to the instance's server, holding the gate shared; a
// realtime socket lets go of it once upgraded, since closing the server
// ends it.
func (in *instance) serve(w http.ResponseWriter, r *http.Request) {
	in.gate.RLock()
	srv := in.srv
	if strings.HasSuffix(r.URL.Path, "/realtime") {
		in.gate.RUnlock()
	} else {
		defer in.gate.RUnlock()
	}
	if srv == nil {
		writeErr(w, errUnavailable)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/i/"+in.id+"/signed/") {
		// The URL host's role (signed-urls): no credential, the URL is
		// the grant.
		srv.SignedSegmentHandler().ServeHTTP(w, r)
		return
	}
	http.StripPrefix("/i/"+in.id, srv).ServeHTTP(w, r)
}

// gatedControl runs op: captureBackup and restoreBackup alone, the
// others holding the gate shared.
func (in *instance) gatedControl(r *http.Request, op string) (any, error) {
	switch op {
	case "captureBackup", "restoreBackup":
		if err := decodeBody(r, &struct{}{}); err != nil {
			return nil, err
		}
		if in.host.backuper == nil {
			return nil, &hostError{http.StatusNotImplemented, "host.unsupported",
				op + ": driver " + in.host.cfg.Driver + " cannot back up a store (driver.Backuper)"}
		}
		in.gate.Lock()
		defer in.gate.Unlock()
		if op == "captureBackup" {
			return struct{}{}, in.captureBackup(r.Context())
		}
		n, err := in.restoreBackup(r.Context())
		if err != nil {
			return nil, err
		}
		return map[string]int{"rotated": n}, nil
	}
	in.gate.RLock()
	defer in.gate.RUnlock()
	if in.srv == nil {
		return nil, errUnavailable
	}
	return in.control(r, op)
}

// captureBackup copies the store (a former copy is dropped); the gate is
// held.
func (in *instance) captureBackup(ctx context.Context) error {
	if err := in.stop(); err != nil {
		return err
	}
	restore, drop, err := in.host.backuper.Backup(ctx, in.dsn)
	if err == nil {
		if in.backup != nil {
			err = in.backup.drop(context.WithoutCancel(ctx))
		}
		in.backup = &storeBackup{restore: restore, drop: drop}
	}
	return errors.Join(err, in.restart(ctx))
}

// restoreBackup puts the copy back and rotates every partition's log
// epoch before a new server serves it; the gate is held. It returns the
// partitions rotated.
func (in *instance) restoreBackup(ctx context.Context) (int, error) {
	if in.backup == nil {
		return 0, badRequest("restoreBackup: captureBackup has not run")
	}
	if err := in.stop(); err != nil {
		return 0, err
	}
	if err := in.backup.restore(ctx); err != nil {
		return 0, errors.Join(err, in.restart(ctx))
	}
	owner, err := sync.OpenContext(ctx, in.host.cfg.Driver, in.dsn)
	if err != nil {
		return 0, fmt.Errorf("reopen the restored store: %w", err)
	}
	in.owner = owner
	// The operator's step (SPEC §2.1): no server has seen the restored
	// store yet.
	n, err := server.RotateAllLogEpochs(ctx, owner, in.now())
	if err != nil {
		return n, fmt.Errorf("rotate the log epochs: %w", err)
	}
	return n, in.startServer(ctx)
}

// stop closes the server and the store (not dropping it); the gate is
// held.
func (in *instance) stop() error {
	var errs []error
	if in.srv != nil {
		errs = append(errs, in.srv.Close())
		in.srv = nil
	}
	if in.store != nil {
		_ = in.store.Close() // faultConn's Close: nothing
		in.store = nil
	}
	if in.owner != nil {
		errs = append(errs, in.owner.Close())
		in.owner = nil
	}
	return errors.Join(errs...)
}

// restart reopens the store and makes the server again; the gate is
// held.
func (in *instance) restart(ctx context.Context) error {
	owner, err := sync.OpenContext(ctx, in.host.cfg.Driver, in.dsn)
	if err != nil {
		return fmt.Errorf("reopen the store: %w", err)
	}
	in.owner = owner
	return in.startServer(ctx)
}

// startServer makes the server over in.owner, as newInstance did.
func (in *instance) startServer(ctx context.Context) error {
	fc, err := newFaultConn(in.owner.Conn(), &in.idemFault)
	if err != nil {
		return err
	}
	in.store = sync.OpenConn(fc)
	if err := in.store.EnsureSchema(ctx, in.engine); err != nil {
		return fmt.Errorf("ensure the schema: %w", err)
	}
	srv, err := server.New(in.store, in.srvCfg)
	if err != nil {
		return fmt.Errorf("server.New: %w", err)
	}
	// What the controls set at run time carries over to the new server.
	in.mu.Lock()
	presigner, ttl := in.presigner, in.signedTTL
	in.mu.Unlock()
	if presigner != nil {
		if err := srv.SetBlobPresigner(presigner); err != nil {
			return err
		}
	}
	if ttl >= 0 && in.srvCfg.SignedURLs != nil {
		if err := srv.SetSignedURLTTL(ttl); err != nil {
			return err
		}
	}
	in.srv = srv
	return nil
}

// withBackupDrop returns drop preceded by dropping the instance's
// backup, if any.
func (in *instance) withBackupDrop(drop func(context.Context) error) func(context.Context) error {
	bk := in.backup
	if bk == nil {
		return drop
	}
	return func(ctx context.Context) error {
		err := bk.drop(ctx)
		if drop != nil {
			err = errors.Join(err, drop(ctx))
		}
		return err
	}
}
