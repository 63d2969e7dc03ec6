//go:build !race

package postgres

// raceOn: the race detector is on (race_on_test.go).
const raceOn = false
