package sync

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// errRefused is what refusingDriver.Open returns.
var errRefused = errors.New("refused")

// refusingDriver is a registry entry whose Open always fails: the registry
// tests never reach a store.
type refusingDriver struct{}

func (refusingDriver) Open(context.Context, string) (driver.Conn, error) { return nil, errRefused }

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestRegisterPanics(t *testing.T) {
	Register("registry-test-dup", refusingDriver{})
	mustPanic(t, "Register(nil driver)", func() { Register("registry-test-nil", nil) })
	mustPanic(t, "Register(empty name)", func() { Register("", refusingDriver{}) })
	mustPanic(t, "Register(duplicate name)", func() { Register("registry-test-dup", refusingDriver{}) })
	if _, ok := Lookup("registry-test-nil"); ok {
		t.Errorf("a panicking Register left the nil driver registered")
	}
}

func TestDriversSortedAndLookup(t *testing.T) {
	Register("registry-test-zz", refusingDriver{})
	Register("registry-test-aa", refusingDriver{})
	names := Drivers()
	if !slices.IsSorted(names) {
		t.Errorf("Drivers() = %q, not sorted", names)
	}
	for _, n := range []string{"registry-test-aa", "registry-test-zz"} {
		if !slices.Contains(names, n) {
			t.Errorf("Drivers() = %q, missing %q", names, n)
		}
		if d, ok := Lookup(n); !ok || d == nil {
			t.Errorf("Lookup(%q) = %v, %v; want the driver, true", n, d, ok)
		}
	}
	if d, ok := Lookup("registry-test-missing"); ok || d != nil {
		t.Errorf("Lookup(missing) = %v, %v; want nil, false", d, ok)
	}
}

func TestOpenUnknownNameListsDriversAndHintsImport(t *testing.T) {
	Register("registry-test-listed", refusingDriver{})
	s, err := Open("registry-test-unknown", "dsn")
	if s != nil {
		t.Fatalf("Open(unknown) returned a Store")
	}
	var e *driver.Error
	if !errors.As(err, &e) || e.Code != driver.CodeInvalidArgument {
		t.Fatalf("Open(unknown) = %v; want *driver.Error with %s", err, driver.CodeInvalidArgument)
	}
	for _, want := range []string{`"registry-test-unknown"`, "registry-test-listed", `sync.Register("registry-test-unknown"`} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("Open(unknown) message %q does not contain %q", e.Message, want)
		}
	}
	if strings.Contains(e.Message, "drivers/sqlite") {
		t.Errorf("Open(unknown) hint %q points a third-party name at the SQLite driver", e.Message)
	}
	if got := importHint("postgres"); got != `import _ "github.com/syncstore/syncstore/drivers/postgres"` {
		t.Errorf("importHint(postgres) = %s", got)
	}
}

func TestOpenDriverErrorIsTyped(t *testing.T) {
	Register("registry-test-refuses", refusingDriver{})
	s, err := OpenContext(t.Context(), "registry-test-refuses", "user:secret-password@host")
	if s != nil || driver.CodeOf(err) != driver.CodeUnavailable || !errors.Is(err, errRefused) {
		t.Fatalf("Open with a failing driver = %v, %v; want code %s wrapping the driver's error", s, err, driver.CodeUnavailable)
	}
	if strings.Contains(err.Error(), "secret-password") {
		t.Errorf("Open error %q contains the DSN", err)
	}
	// An error the driver already classified is returned as it is.
	Register("registry-test-typed", typedRefusal{})
	if _, err := Open("registry-test-typed", ""); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Errorf("Open = %v; want the driver's own code %s", err, driver.CodeInvalidArgument)
	}
}

// typedRefusal refuses a DSN with a classified error, as Driver.Open's
// contract allows.
type typedRefusal struct{}

func (typedRefusal) Open(context.Context, string) (driver.Conn, error) {
	return nil, driver.Errorf(driver.CodeInvalidArgument, "malformed DSN")
}
