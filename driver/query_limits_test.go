package driver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

func TestQueryLimitsDefaultsAndCheck(t *testing.T) {
	got := driver.QueryLimits{}.WithDefaults()
	want := driver.QueryLimits{MaxRows: 10_000, MaxResultBytes: 16 << 20, MaxValueBytes: 1 << 20, Timeout: 5 * time.Second}
	if got != want {
		t.Fatalf("zero QueryLimits.WithDefaults() = %+v, want %+v", got, want)
	}
	if err := (driver.QueryLimits{}).Check(); err != nil {
		t.Fatalf("zero QueryLimits.Check() = %v", err)
	}
	for _, bad := range []driver.QueryLimits{
		{MaxRows: -1}, {MaxRows: driver.MaxQueryMaxRows + 1}, {MaxResultBytes: -1}, {MaxValueBytes: driver.MaxQueryMaxValueBytes + 1},
		{Timeout: -time.Second}, {Timeout: driver.MaxQueryTimeout + 1},
	} {
		if err := bad.Check(); driver.CodeOf(err) != driver.CodeInvalidLimit {
			t.Errorf("%+v.Check() = %v, want %s", bad, err, driver.CodeInvalidLimit)
		}
	}
	if ms := (driver.QueryLimits{Timeout: 1500 * time.Microsecond}).TimeoutMillis(); ms != 2 {
		t.Errorf("TimeoutMillis of 1.5 ms = %d, want 2 (rounded up)", ms)
	}
}

func TestQueryLimitErrorIsTyped(t *testing.T) {
	cause := errors.New("engine said no")
	err := fmt.Errorf("host: %w", driver.NewQueryLimitError(driver.BoundTime, 5000, cause, "x: authoritative query"))
	if !errors.Is(err, driver.ErrQueryLimit) || errors.Is(err, driver.ErrQueryInvalid) || !errors.Is(err, cause) {
		t.Fatalf("errors.Is on %v: sentinel/other/cause wrong", err)
	}
	var le *driver.QueryLimitError
	if !errors.As(err, &le) || le.Bound != driver.BoundTime || le.Limit != 5000 {
		t.Fatalf("errors.As QueryLimitError: %#v", le)
	}
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != driver.CodeQueryLimit || de.Retryable() || driver.IsRetryable(err) {
		t.Fatalf("errors.As Error: %#v", de)
	}
	if msg := err.Error(); !strings.Contains(msg, string(driver.CodeQueryLimit)) || !strings.Contains(msg, "time") {
		t.Fatalf("message %q must carry the code and the bound", msg)
	}
	if driver.Wrap(driver.CodeInternal, err, "outer") != err {
		t.Fatal("Wrap must keep a QueryLimitError's classification")
	}
}

func TestQueryMeterStopsAtTheBounds(t *testing.T) {
	bound := func(err error) driver.QueryBound {
		var le *driver.QueryLimitError
		if errors.As(err, &le) {
			return le.Bound
		}
		return ""
	}
	m := driver.QueryLimits{MaxRows: 2}.Meter("test")
	for i := range 2 {
		if err := m.Row(); err != nil {
			t.Fatalf("row %d of 2 refused: %v", i+1, err)
		}
	}
	if b := bound(m.Row()); b != driver.BoundRows {
		t.Fatalf("third row of 2: bound %q", b)
	}
	m = driver.QueryLimits{MaxResultBytes: 20, MaxValueBytes: 10}.Meter("test")
	if m.Value(10) != nil || m.Value(8) != nil {
		t.Fatal("values within the bounds refused")
	}
	if b := bound(m.Value(11)); b != driver.BoundValueBytes {
		t.Fatalf("an 11-byte value over 10: bound %q", b)
	}
	if b := bound(m.Value(3)); b != driver.BoundBytes {
		t.Fatalf("21 bytes over 20: bound %q", b)
	}
	// A number is never over MaxValueBytes, however small.
	m = driver.QueryLimits{MaxValueBytes: 1}.Meter("test")
	if m.ValueOf(int64(3)) != nil || m.ValueOf(nil) != nil || m.ValueOf("a") != nil {
		t.Fatal("ValueOf: a number, NULL or a 1-byte string refused under MaxValueBytes 1")
	}
	if b := bound(m.ValueOf([]byte("ab"))); b != driver.BoundValueBytes {
		t.Fatalf("ValueOf: a 2-byte blob over 1: bound %q", b)
	}
	if driver.QueryValueSize("abc") != 3 || driver.QueryValueSize([]byte{1}) != 1 || driver.QueryValueSize(int64(1)) != 8 || driver.QueryValueSize(nil) != 8 {
		t.Fatal("QueryValueSize")
	}
}

// A host bounds a query and tells a bound hit from other errors.
func ExampleQueryLimitError() {
	q := driver.Query{SQL: `SELECT id FROM todos`, Tables: []string{"todos"},
		Limits: driver.QueryLimits{MaxRows: 500, Timeout: 2 * time.Second}}
	_ = q // store.AuthoritativeQuery(ctx, partition, q)
	err := error(driver.NewQueryLimitError(driver.BoundRows, 500, nil, "sqlite: authoritative query"))
	var le *driver.QueryLimitError
	if errors.As(err, &le) {
		fmt.Println(errors.Is(err, driver.ErrQueryLimit), le.Bound, le.Limit, driver.IsRetryable(err))
	}
	// Output: true rows 500 false
}
