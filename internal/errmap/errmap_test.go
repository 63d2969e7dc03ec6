package errmap

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

func code(err error) driver.Code {
	var de *driver.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

func TestCommon(t *testing.T) {
	if m, done := Common(context.Background(), nil, "x"); m != nil || !done {
		t.Errorf("nil: %v %v", m, done)
	}
	mapped := driver.Errorf(driver.CodeUnknownTable, "t")
	if m, done := Common(context.Background(), mapped, "x"); m != mapped || !done {
		t.Errorf("a driver.Error must pass unchanged: %v %v", m, done)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if m, done := Common(ctx, errors.New("io"), "x"); code(m) != driver.CodeUnavailable || !done {
		t.Errorf("an ended context: %v %v", m, done)
	}
	if m, done := Common(context.Background(), errors.New("engine"), "x"); m != nil || done {
		t.Errorf("an engine error is the driver's to map: %v %v", m, done)
	}
}

func TestRest(t *testing.T) {
	if code(Rest(sql.ErrTxDone, "x")) != driver.CodeUnavailable || code(Rest(errors.New("e"), "x")) != driver.CodeInternal {
		t.Error("Rest: ErrTxDone → CodeUnavailable, else CodeInternal")
	}
}
