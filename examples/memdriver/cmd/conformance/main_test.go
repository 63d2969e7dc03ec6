package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/conformance/cli"
	"github.com/syncstore/syncstore/driver"

	"github.com/syncstore/syncstore/examples/memdriver"
)

// TestReport runs what main runs, with this file's blank import in effect,
// and checks the JSON report: the driver is found by its name, the matrix
// lists every capability, and every selected case passes.
func TestReport(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), []string{"-driver", memdriver.Name, "-format", "json", "-run", `^(SEQ|WIN|IXL|ERR-3)-`},
		&out, &errOut)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	var rep conformance.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("the JSON report does not decode: %v\n%s", err, out.String())
	}
	if rep.Driver != memdriver.Name || rep.Failed != 0 || rep.Passed < 20 {
		t.Errorf("report: driver %q, %s; want %s, 0 failed, ≥ 20 passed", rep.Driver, rep.Summary(), memdriver.Name)
	}
	if len(rep.Capabilities) != len(driver.AllCapabilities) {
		t.Errorf("the capability matrix has %d rows, want %d", len(rep.Capabilities), len(driver.AllCapabilities))
	}
}

// TestUnknownDriverIsAUsageError checks the exit code a typo in -driver gets.
func TestUnknownDriverIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli.Run(context.Background(), []string{"-driver", memdriver.Name + "-typo"}, &out, &errOut); code != cli.ExitUsage {
		t.Errorf("exit %d for an unknown driver, want %d; stderr: %s", code, cli.ExitUsage, errOut.String())
	}
	if !bytes.Contains(errOut.Bytes(), []byte("registered: "+memdriver.Name)) {
		t.Errorf("stderr does not list the registered driver: %s", errOut.String())
	}
}
