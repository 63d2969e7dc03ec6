// Package memdriver is a complete syncstore driver that keeps every store
// in memory: the example a driver author copies. It uses only the exported
// API of github.com/syncstore/syncstore (the driver, sync and conformance
// packages), passes every core case of the conformance suite and declares
// one capability, index-lookup. It favours clarity over speed: reads scan
// maps and sort, where an engine would use an index (WIN-7, SCAN-5).
//
// Import it for its side effect and open a store by name:
//
//	import _ "github.com/syncstore/syncstore/examples/memdriver"
//	store, err := sync.Open("memory", "my-store")
//
// # DSN
//
// A DSN names a store of this process: every Conn opened with the same
// name shares it, until Provision's drop function removes it. "" opens a
// private store that lives as long as its Conn.
//
// # How the contract is met
//
//   - Each partition's committed state (rows, commit log, push results,
//     client records, horizon) is an immutable value; the store holds a
//     pointer to it per partition. Readers take the pointer and read
//     without further locking, so they see committed data only (TX-4) and
//     never a half-applied commit (TX-2, SEQ-6).
//   - Each partition has a write lock, a channel with room for one token.
//     Begin takes it (waiting until ctx ends, TX-1, TX-6) and the Tx holds
//     it until Commit or Rollback; Conn-level writes (PutClientRecord,
//     SetHorizonSeq, …) take it too, so they never interleave with a Tx.
//     Transactions of different partitions never wait for each other.
//   - A Tx stages its writes in a draft: a shallow copy of the committed
//     state whose maps are copied on first write (copy-on-write). Commit
//     publishes the draft with one pointer swap; Rollback drops it, so a
//     rolled-back Tx consumes no commit number (SEQ-2).
//   - Ids order bytewise: Go's string comparison (SCAN-1, REG-3, CR-2).
//   - Push results are stored encoded with driver.EncodePushResult and
//     decoded on read, so an undecodable one is a cache miss (PR-5).
//   - Values are deep-copied in and out: a caller never shares memory with
//     the store (VAL-1).
package memdriver

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/sync"
)

// Name is the name the driver registers under: sync.Open(Name, dsn).
const Name = "memory"

func init() { sync.Register(Name, Driver{}) }

// Driver opens in-memory stores. The zero value is ready to use and safe
// for concurrent use.
type Driver struct{}

var (
	_ driver.Driver      = Driver{}
	_ driver.Provisioner = Driver{}
)

// stores holds the named stores of the process, by DSN.
var (
	storesMu   gosync.Mutex
	stores     = map[string]*store{}
	provisions atomic.Int64
)

// Open returns a Conn to the store named dsn, creating it if needed; ""
// opens a private store. It fails only with CodeUnavailable when ctx has
// already ended.
func (Driver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, driver.Wrap(driver.CodeUnavailable, err, "memory: open")
	}
	if dsn == "" {
		return &Conn{s: newStore()}, nil
	}
	storesMu.Lock()
	defer storesMu.Unlock()
	s, ok := stores[dsn]
	if !ok {
		s = newStore()
		stores[dsn] = s
	}
	return &Conn{s: s}, nil
}

// Provision creates a new, empty named store for one test (its name is
// baseDSN, or "memdriver" when empty, followed by a unique number) and
// returns its DSN and a drop function that forgets it.
func (Driver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	if baseDSN == "" {
		baseDSN = "memdriver"
	}
	dsn := fmt.Sprintf("%s/provisioned-%d", baseDSN, provisions.Add(1))
	storesMu.Lock()
	stores[dsn] = newStore()
	storesMu.Unlock()
	drop := func(context.Context) error {
		storesMu.Lock()
		delete(stores, dsn)
		storesMu.Unlock()
		return nil
	}
	return dsn, drop, nil
}
