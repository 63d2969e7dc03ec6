package ssp2conf

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncstore/syncstore/sync"
)

// A fresh store costs a CREATE DATABASE, an Open that lays out the
// engine's tables and, later, a DROP DATABASE: on PostgreSQL and MariaDB
// seconds per scenario. The host therefore keeps up to Config.Spares
// stores provisioned and opened ahead (never shared: each is handed to one
// instance), and drops a closed instance's store in the background. Host.Close
// waits for every drop and drops the spares.

// freshStore is a provisioned, opened, empty store.
type freshStore struct {
	store *sync.Store
	dsn   string
	drop  func(context.Context) error
}

// provision makes a fresh store.
func (h *Host) provision(ctx context.Context) (*freshStore, error) {
	dsn, drop, err := h.prov.Provision(ctx, h.cfg.BaseDSN)
	if err != nil {
		return nil, fmt.Errorf("provision a %s store: %w", h.cfg.Driver, err)
	}
	st, err := sync.OpenContext(ctx, h.cfg.Driver, dsn)
	if err != nil {
		_ = drop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open the %s store: %w", h.cfg.Driver, err)
	}
	return &freshStore{store: st, dsn: dsn, drop: drop}, nil
}

// take returns a spare, or provisions one now.
func (h *Host) take(ctx context.Context) (*freshStore, error) {
	select {
	case fs := <-h.spares:
		return fs, nil
	default:
		return h.provision(ctx)
	}
}

// fill keeps h.spares full until the host closes; it stops at the first
// failure (create then provisions synchronously and reports it).
func (h *Host) fill() {
	defer h.fillers.Done()
	for {
		fs, err := h.provision(h.bgCtx)
		if err != nil {
			if h.bgCtx.Err() == nil {
				h.log.Warn("provisioning spare stores stopped", "err", err)
			}
			return
		}
		select {
		case h.spares <- fs:
		case <-h.bgCtx.Done():
			h.dispose(fs.store, fs.drop)
			return
		}
	}
}

// dispose closes st and drops its store in the background; a failure is
// kept for Close.
func (h *Host) dispose(st *sync.Store, drop func(context.Context) error) {
	var errs []error
	if st != nil {
		errs = append(errs, st.Close())
	}
	if drop == nil {
		h.keep(errors.Join(errs...))
		return
	}
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		// Not h.bgCtx: a drop must finish even while the host closes.
		h.keep(errors.Join(append(errs, drop(context.Background()))...))
	}()
}

// keep records the first disposal failure.
func (h *Host) keep(err error) {
	if err == nil {
		return
	}
	h.log.Warn("dropping a store failed", "err", err)
	h.errMu.Lock()
	if h.dropErr == nil {
		h.dropErr = err
	}
	h.errMu.Unlock()
}

// settle stops the spare filler, drops the spares and waits for every
// drop in flight; it returns the first disposal failure.
func (h *Host) settle() error {
	h.bgCancel()
	h.fillers.Wait()
	for {
		select {
		case fs := <-h.spares:
			h.dispose(fs.store, fs.drop)
			continue
		default:
		}
		break
	}
	h.bg.Wait()
	h.errMu.Lock()
	defer h.errMu.Unlock()
	return h.dropErr
}
