//go:build race

package postgres

// raceOn: the race detector is on; it allows at most 8,128 live
// goroutines, so tests that hold one per subscription use fewer.
const raceOn = true
