// Package ssp2conf is the conformance host that upstream Syncular's
// scenario catalog (packages/conformance) runs against: one loopback HTTP
// handler serving many SSP2 server instances (package server), each over
// a fresh store of one driver, with the host controls the catalog's
// ServerDriver seam needs (a virtual clock, a settable grant map, pruning,
// introspection). The TypeScript ServerDriver that talks to it is in ts/,
// the program that serves it in cmd/ssp2host, and the lane that runs the
// whole catalog with upstream's TypeScript client against it is
// .ci/ssp2-catalog.sh (docs/testing.md).
//
// Routes (all JSON unless noted; errors are {"code","message"} with a
// 4xx/5xx status):
//
//	POST /instances                 {schema, partition, nowMs, limits?, leases?} → {id}
//	POST /i/{id}/sync               SSP2 (the instance's server, §1.1)
//	GET  /i/{id}/segments/{seg}     SSG2 (§5.5)
//	GET  /i/{id}/realtime?clientId= WebSocket (§8)
//	GET  /i/{id}/signed/{seg}?st=   a signed segment URL (§5.4), no auth
//	POST /i/{id}/ctl/{op}           a host control (see instance.control)
//	PUT  /i/{id}/blobs/{blob}        blobs (§5.9.3; upload-grant, GET §5.9.5)
//	GET|PUT /i/{id}/blob-cdn/{token} presigned blob URLs (blobs.go)
//
// Every SSP2 route authenticates "Authorization: Bearer <actor>" (missing
// or empty → 401 sync.auth_required); the partition is the instance's.
package ssp2conf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// Config configures a Host.
type Config struct {
	// Driver is the registered driver name every instance's store is
	// opened with (sqlite, postgres, mysql, d1http, …); it must implement
	// driver.Provisioner.
	Driver string
	// BaseDSN is handed to Provision: "" = the driver's default place (a
	// temporary directory, the default local server); for d1http a
	// d1://ACCOUNT?token=…&endpoint=… of the D1 API.
	BaseDSN string
	// MaxInstances bounds the instances alive at once (0 = 64); a create
	// beyond it is refused with 503 host.too_many_instances.
	MaxInstances int
	// Spares is how many fresh stores are kept provisioned and opened
	// ahead of creates (0 = none: each create provisions its own).
	Spares int
	// Logger receives instance lifecycle and server logs (nil = discard).
	Logger *slog.Logger
}

// maxControlBytes bounds a control or create request body.
const maxControlBytes = 1 << 20

// Host serves the instances. Create one with New; Close ends them all.
type Host struct {
	cfg  Config
	prov driver.Provisioner
	// backuper: the driver's whole-store copy, nil without one
	// (backup.go: the backup-restore controls answer 501).
	backuper driver.Backuper
	log      *slog.Logger
	mux      *http.ServeMux

	mu        gosync.Mutex
	next      uint64
	instances map[string]*instance
	closed    bool

	// stores.go: spare stores and background drops.
	spares   chan *freshStore
	bgCtx    context.Context
	bgCancel context.CancelFunc
	fillers  gosync.WaitGroup
	bg       gosync.WaitGroup
	errMu    gosync.Mutex
	dropErr  error
}

// New checks cfg (the driver registered and able to provision stores)
// and returns a Host.
func New(cfg Config) (*Host, error) {
	d, ok := sync.Lookup(cfg.Driver)
	if !ok {
		return nil, fmt.Errorf("ssp2conf: driver %q is not registered", cfg.Driver)
	}
	prov, ok := d.(driver.Provisioner)
	if !ok {
		return nil, fmt.Errorf("ssp2conf: driver %q cannot provision stores", cfg.Driver)
	}
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = 64
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	h := &Host{cfg: cfg, prov: prov, log: lg, instances: map[string]*instance{}, spares: make(chan *freshStore, max(cfg.Spares, 0))}
	h.backuper, _ = d.(driver.Backuper)
	h.bgCtx, h.bgCancel = context.WithCancel(context.Background())
	if cfg.Spares > 0 {
		h.fillers.Add(1)
		go h.fill()
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("POST /instances", h.create)
	h.mux.HandleFunc("POST /i/{id}/ctl/{op}", h.control)
	h.mux.HandleFunc("/i/{id}/", h.protocol)
	h.mux.HandleFunc("/i/{id}/blob-cdn/{token}", h.blobCDN)
	return h, nil
}

// ServeHTTP routes a request (see the package doc).
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Close closes every instance (its server, its store), drops every store
// (the spares too) and waits for the drops; later creates are refused. It
// returns the first error.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	all := make([]*instance, 0, len(h.instances))
	for id, in := range h.instances {
		all = append(all, in)
		delete(h.instances, id)
	}
	h.mu.Unlock()
	var first error
	for _, in := range all {
		if err := in.close(); err != nil && first == nil {
			first = err
		}
	}
	if err := h.settle(); err != nil && first == nil {
		first = err
	}
	return first
}

// Len reports the instances alive.
func (h *Host) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.instances)
}

// hostError is a control-plane error answered as JSON.
type hostError struct {
	status  int
	code    string
	message string
}

func (e *hostError) Error() string { return e.code + ": " + e.message }

func badRequest(format string, args ...any) error {
	return &hostError{http.StatusBadRequest, "host.bad_request", fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	var he *hostError
	if !errors.As(err, &he) {
		code := "host.internal"
		var de *driver.Error
		if errors.As(err, &de) {
			code = "store." + string(de.Code)
		}
		he = &hostError{http.StatusInternalServerError, code, err.Error()}
	}
	writeJSON(w, he.status, map[string]string{"code": he.code, "message": he.message})
}

// decodeBody reads r's JSON body (at most maxControlBytes; an empty body
// is {}) into v, refusing unknown fields.
func decodeBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxControlBytes+1))
	if err != nil {
		return badRequest("read the body: %v", err)
	}
	if len(b) > maxControlBytes {
		return badRequest("the body exceeds %d bytes", maxControlBytes)
	}
	if len(b) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("the body is not the expected JSON: %v", err)
	}
	return nil
}

func (h *Host) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decodeBody(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		writeErr(w, &hostError{http.StatusServiceUnavailable, "host.closed", "the host is shutting down"})
		return
	case len(h.instances) >= h.cfg.MaxInstances:
		h.mu.Unlock()
		writeErr(w, &hostError{http.StatusServiceUnavailable, "host.too_many_instances",
			fmt.Sprintf("%d instances are alive (the bound); close some", len(h.instances))})
		return
	}
	h.next++
	id := "i" + strconv.FormatUint(h.next, 10)
	h.mu.Unlock()
	req.cdnBase = "http://" + r.Host + "/i/" + id + "/blob-cdn"

	in, err := h.newInstance(r.Context(), id, "http://"+r.Host+"/i/"+id+"/signed", req)
	if err != nil {
		writeErr(w, err)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = in.close()
		writeErr(w, &hostError{http.StatusServiceUnavailable, "host.closed", "the host is shutting down"})
		return
	}
	h.instances[id] = in
	h.mu.Unlock()
	h.log.Info("instance created", "id", id, "driver", h.cfg.Driver, "partition", req.Partition)
	writeJSON(w, http.StatusOK, map[string]string{"id": id})
}

func (h *Host) lookup(id string) (*instance, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	in, ok := h.instances[id]
	if !ok {
		return nil, &hostError{http.StatusNotFound, "host.unknown_instance", "no instance " + strconv.Quote(id)}
	}
	return in, nil
}

func (h *Host) control(w http.ResponseWriter, r *http.Request) {
	id, op := r.PathValue("id"), r.PathValue("op")
	in, err := h.lookup(id)
	if err != nil {
		writeErr(w, err)
		return
	}
	if op == "close" {
		h.mu.Lock()
		delete(h.instances, id)
		h.mu.Unlock()
		if err := in.close(); err != nil {
			writeErr(w, err)
			return
		}
		h.log.Info("instance closed", "id", id)
		writeJSON(w, http.StatusOK, struct{}{})
		return
	}
	out, err := in.gatedControl(r, op)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Host) protocol(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	in, err := h.lookup(id)
	if err != nil {
		writeErr(w, err)
		return
	}
	in.serve(w, r)
}
