//go:build unix

package conformance

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used so
// far, from getrusage(RUSAGE_SELF), and true. W1 reports it per tenth next
// to the wall-clock rates: for an in-process engine (SQLite) it is the
// engine's own cost, which a loaded machine disturbs far less than wall
// time; for a server engine it is the client side only.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
