package conformance

import (
	"math"
	"slices"
	"time"
)

// Latency per operation: every workload records the duration
// of each of its operations inside the loop that already times it, with
// no second clock: an opClock keeps the time the previous operation ended,
// and each operation's end — one time.Now — is both its own end and the
// next one's start. So the recording costs one clock read and one append
// into a preallocated slice per operation, and the operations' durations
// add up to the loop's timed part (less whatever runs between laps, such
// as the workload's own checks of each answer, which fall into the next
// operation).

// opClock measures consecutive operations by chained timestamps.
type opClock struct{ last time.Time }

// startClock starts an opClock now.
func startClock() opClock { return opClock{last: time.Now()} }

// clockAt starts an opClock at t (a time the caller already read).
func clockAt(t time.Time) opClock { return opClock{last: t} }

// lap appends the time since the previous lap (or the start) to *to and
// returns now.
func (c *opClock) lap(to *[]time.Duration) time.Time {
	now := time.Now()
	*to = append(*to, now.Sub(c.last))
	c.last = now
	return now
}

// Latency is the distribution of one operation's durations in a workload:
// percentiles by nearest rank over the samples of all its runs pooled
// (not a median of per-run percentiles), in milliseconds.
type Latency struct {
	// Op names the operation timed, e.g. "push commit", "pull page",
	// "scan page", "claim", "lookup".
	Op string `json:"op"`
	// Samples is how many operations were timed (over all runs).
	Samples int `json:"samples"`
	// P50Ms, P99Ms and MaxMs are the 50th and 99th percentiles and the
	// maximum, in milliseconds (float).
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// latencyOf returns op's Latency over ds (sorted in place); the zero
// figures when ds is empty.
func latencyOf(op string, ds []time.Duration) Latency {
	l := Latency{Op: op, Samples: len(ds)}
	if len(ds) == 0 {
		return l
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	l.P50Ms, l.P99Ms, l.MaxMs = ms(nearestRank(ds, 0.50)), ms(nearestRank(ds, 0.99)), ms(ds[len(ds)-1])
	return l
}

// nearestRank returns the p-quantile (0 < p ≤ 1) of sorted ds: the
// smallest sample with at least p of the samples at or below it.
func nearestRank(ds []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
