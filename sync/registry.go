package sync

import (
	"context"
	"sort"
	"strings"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

var (
	driversMu gosync.RWMutex
	drivers   = map[string]driver.Driver{}
)

// Register makes a driver available by name to Open. Drivers call it from
// init: sync.Register("sqlite", Driver{}). It panics when d is nil, name is
// empty, or a driver is already registered under name, as database/sql's
// Register does. Safe for concurrent use.
func Register(name string, d driver.Driver) {
	if d == nil {
		panic("sync: Register driver is nil")
	}
	if name == "" {
		panic("sync: Register called with an empty driver name")
	}
	driversMu.Lock()
	defer driversMu.Unlock()
	if _, dup := drivers[name]; dup {
		panic("sync: Register called twice for driver " + name)
	}
	drivers[name] = d
}

// Drivers returns the names of the registered drivers, sorted.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	out := make([]string, 0, len(drivers))
	for name := range drivers {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the driver registered under name and true, or nil and false.
func Lookup(name string) (driver.Driver, bool) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	d, ok := drivers[name]
	return d, ok
}

// Open opens a Store with the driver registered under name; it is
// OpenContext with context.Background().
func Open(name, dsn string) (*Store, error) {
	return OpenContext(context.Background(), name, dsn)
}

// OpenContext opens a Store with the driver registered under name; dsn's
// form is the driver's. An unknown name → CodeInvalidArgument whose
// message lists the registered drivers and hints at the missing blank
// import. The driver's errors are returned as *Error: a classified
// one unchanged, any other wrapped as CodeUnavailable. sync never puts the
// DSN, which may hold a password, in a message (drivers must not either).
func OpenContext(ctx context.Context, name, dsn string) (*Store, error) {
	d, ok := Lookup(name)
	if !ok {
		registered := Drivers()
		list := "none"
		if len(registered) > 0 {
			list = strings.Join(registered, ", ")
		}
		return nil, driver.Errorf(CodeInvalidArgument,
			"unknown driver %q (registered: %s); is the driver's package imported? e.g. %s",
			name, list, importHint(name))
	}
	conn, err := d.Open(ctx, dsn)
	if err != nil {
		return nil, driver.Wrap(CodeUnavailable, err, "open a %s store", name)
	}
	if conn == nil {
		return nil, driver.Errorf(CodeInternal, "driver %s returned neither a connection nor an error", name)
	}
	s := OpenConn(conn)
	s.name = name
	return s, nil
}

// bundledDrivers are the drivers shipped in this module, by registered
// name; the unknown-driver message names their import path.
var bundledDrivers = map[string]bool{"sqlite": true, "postgres": true, "mysql": true, "d1http": true}

// importHint returns the blank import that registers name when it is a
// bundled driver; for any other name, the general form.
func importHint(name string) string {
	if !bundledDrivers[name] {
		return `import _ "<the module path of the driver's package>"` + ` (its init calls sync.Register("` + name + `", …))`
	}
	return `import _ "github.com/syncstore/syncstore/drivers/` + name + `"`
}
