package conformance

import (
	"bufio"
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	gosync "sync"
	"time"
)

// Peak memory of the process during a workload (docs/performance.md: "peak RSS").
//
// On Linux the figure is the kernel's VmHWM (/proc/self/status), reset
// before each workload by writing "5" to /proc/self/clear_refs, so it is
// the peak of that workload alone. Where neither file works (other
// systems, restricted containers) it falls back to sampling the Go
// runtime's total mapped memory (runtime/metrics
// /memory/classes/total:bytes) every 10 ms; that misses memory an engine
// allocates outside the Go runtime (cgo), which the report says.

// memProbe measures the peak memory of one workload.
type memProbe struct {
	hwm     bool // VmHWM was reset and is read at stop
	stopCh  chan struct{}
	wg      gosync.WaitGroup
	mu      gosync.Mutex
	sampled uint64
}

// memSource names where peak memory comes from: "VmHWM" or "go-runtime".
func memSource() string {
	if _, ok := readVmHWM(); ok && resetHWM() {
		return "VmHWM"
	}
	return "go-runtime"
}

// startMem starts measuring.
func startMem() *memProbe {
	p := &memProbe{}
	if resetHWM() {
		if _, ok := readVmHWM(); ok {
			p.hwm = true
			return p
		}
	}
	p.stopCh = make(chan struct{})
	p.sample()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stopCh:
				return
			case <-tick.C:
				p.sample()
			}
		}
	}()
	return p
}

func (p *memProbe) sample() {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	v := s[0].Value.Uint64()
	p.mu.Lock()
	p.sampled = max(p.sampled, v)
	p.mu.Unlock()
}

// stop ends the measurement and returns the peak in bytes (0 unknown).
func (p *memProbe) stop() int64 {
	if p.hwm {
		v, _ := readVmHWM()
		return v
	}
	close(p.stopCh)
	p.wg.Wait()
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(p.sampled)
}

// resetHWM resets the kernel's peak RSS of this process (Linux ≥ 4.0).
func resetHWM() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// readVmHWM returns the process's peak resident set size in bytes.
func readVmHWM() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}
