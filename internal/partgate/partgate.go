// Package partgate is a Conn's per-partition gate and memory: it
// serializes the Conn's transactions of one partition in the process, and
// remembers what the Conn last learnt of each partition for certain (its
// committed max seq, a D1 stamp), so a transaction can be begun without a
// round trip and checked by a guard at commit instead (one round trip
// per push). A partition whose guard failed — another store
// committed there — is left out of that for Backoff, so stores that share
// a partition do not retry every push.
package partgate

import (
	"context"
	gosync "sync"
	"time"
)

// Backoff is how long after a failed guard a partition's known value is
// not used (Entered.Known is false).
const Backoff = 10 * time.Second

// maxIdle bounds how many partitions a Gates keeps while no transaction
// holds them; past it, the idle ones are forgotten (their next
// transaction begins on the engine).
const maxIdle = 1 << 16

// Gates is the gates of one Conn; V is what is known of a partition. The
// zero value is ready for use.
type Gates[V any] struct {
	mu gosync.Mutex
	m  map[string]*gate[V]
}

type gate[V any] struct {
	sem       chan struct{} // one token while a transaction holds the partition
	refs      int           // transactions holding or waiting
	v         V
	known     bool
	contended time.Time // a guard failed: Known is false until then
}

// Entered is a held gate: Known reports V is certain and may be used.
type Entered[V any] struct {
	g     *gate[V]
	V     V
	Known bool
}

func (gs *Gates[V]) ref(partition string) *gate[V] {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.m == nil {
		gs.m = map[string]*gate[V]{}
	}
	g := gs.m[partition]
	if g == nil {
		g = &gate[V]{sem: make(chan struct{}, 1)}
		gs.m[partition] = g
	}
	g.refs++
	return g
}

func (gs *Gates[V]) entered(g *gate[V]) Entered[V] {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return Entered[V]{g: g, V: g.v, Known: g.known && !time.Now().Before(g.contended)}
}

func (gs *Gates[V]) unref(g *gate[V]) {
	gs.mu.Lock()
	g.refs--
	gs.mu.Unlock()
}

// Enter waits until no other transaction of the Conn holds partition and
// holds it. When ctx ends first it returns ctx's error, holding nothing.
func (gs *Gates[V]) Enter(ctx context.Context, partition string) (Entered[V], error) {
	g := gs.ref(partition)
	select {
	case g.sem <- struct{}{}:
		return gs.entered(g), nil
	case <-ctx.Done():
		gs.unref(g)
		return Entered[V]{}, ctx.Err()
	}
}

// TryEnter holds partition if no other transaction of the Conn does, and
// reports whether it did.
func (gs *Gates[V]) TryEnter(partition string) (Entered[V], bool) {
	g := gs.ref(partition)
	select {
	case g.sem <- struct{}{}:
		return gs.entered(g), true
	default:
		gs.unref(g)
		return Entered[V]{}, false
	}
}

// Leave releases e (once; a zero Entered is ignored), recording v as known
// (known false: forget it) and, when conflict, that a guard failed.
func (gs *Gates[V]) Leave(e Entered[V], v V, known, conflict bool) {
	g := e.g
	if g == nil {
		return
	}
	gs.mu.Lock()
	g.v, g.known = v, known
	if conflict {
		g.contended = time.Now().Add(Backoff)
	}
	g.refs--
	if len(gs.m) > maxIdle {
		for p, x := range gs.m {
			if x.refs == 0 {
				delete(gs.m, p)
			}
		}
	}
	gs.mu.Unlock()
	<-g.sem
}
