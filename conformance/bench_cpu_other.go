//go:build !unix

package conformance

import "time"

// processCPU reports false: this system has no getrusage, so W1 reports
// wall-clock rates only.
func processCPU() (time.Duration, bool) { return 0, false }
