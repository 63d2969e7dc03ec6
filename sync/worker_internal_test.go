package sync

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

func TestWorkerRetryDelayIsCappedExponential(t *testing.T) {
	cfg := WorkerConfig{Partitions: StaticPartitions("p"), RetryInitial: time.Second, RetryMax: 5 * time.Minute,
		RetryMultiplier: 2, RetryJitter: -1}
	if err := normalizeWorkerConfig("test", &cfg, false); err != nil {
		t.Fatal(err)
	}
	r := &workerRun{w: &Worker{cfg: cfg}}
	want := map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 9: 256 * time.Second,
		10: 5 * time.Minute, 50: 5 * time.Minute, 1000: 5 * time.Minute}
	for n, d := range want {
		if got := r.retryDelay(n); got != d {
			t.Errorf("delay after attempt %d = %v, want %v", n, got, d)
		}
	}
	r.w.cfg.RetryJitter = 0.5
	for range 50 {
		if got := r.retryDelay(3); got < 2*time.Second || got > 6*time.Second {
			t.Fatalf("jittered delay after attempt 3 = %v, want 4 s ± 50%%", got)
		}
	}
}

func TestPermanentKeepsCodeAndDetails(t *testing.T) {
	cause := errors.New("cause text")
	for _, tc := range []struct {
		name      string
		err       error
		code      string
		details   driver.JSON
		wantCause bool
	}{
		{"plain error", cause, "", "", true},
		{"handler error", FailWith("app.code", `{"a":1}`, cause), "app.code", `{"a":1}`, true},
		{"wrapped handler error", fmt.Errorf("ctx: %w", FailWith("app.code", "", cause)), "app.code", "", true},
	} {
		err := Permanent(tc.err)
		var he *HandlerError
		if !errors.As(err, &he) || !he.Permanent || he.Code != tc.code || he.Details != tc.details {
			t.Errorf("%s: Permanent → %#v, want permanent with code %q details %q", tc.name, err, tc.code, tc.details)
		}
		if errors.Is(err, cause) != tc.wantCause {
			t.Errorf("%s: errors.Is(cause) = %v", tc.name, !tc.wantCause)
		}
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
}

func TestCheckFailure(t *testing.T) {
	for _, tc := range []struct {
		code     string
		details  driver.JSON
		reserved bool
		ok       bool
	}{
		{"app.code", "", false, true},
		{"app.code", `{"a":[1,2]}`, false, true},
		{"reaction.handler_error", "", false, false},
		{"reaction.handler_error", "", true, true},
		{"9bad", "", true, false},
		{"app.code", "{", false, false},
		{"app.code", driver.JSON(`"` + string(make([]byte, 0)) + `"`), false, true},
		{"app.code", driver.JSON("\"\xff\""), false, false},
	} {
		err := checkFailure("op", tc.code, tc.details, tc.reserved)
		if (err == nil) != tc.ok {
			t.Errorf("checkFailure(%q, %q, reserved %v) = %v, want ok %v", tc.code, tc.details, tc.reserved, err, tc.ok)
		}
		if err != nil && driver.CodeOf(err) != driver.CodeInvalidArgument {
			t.Errorf("checkFailure code %s, want invalid_argument", driver.CodeOf(err))
		}
	}
}
