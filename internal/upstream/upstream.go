// Package upstream finds upstream Syncular's source tree (its SPEC, golden
// vectors and conformance catalog) for tests that check syncstore against
// it. Nothing of upstream is copied into this repository.
//
// The tree is found, in this order:
//
//  1. the directory in SYNCULAR_UPSTREAM (the "upstream/" directory, the
//     one holding docs/SPEC.md); set but wrong is an error, never a
//     fallback;
//  2. shared/syncular/upstream under the module root or one of its
//     ancestors (the nearest wins);
//  3. /work/shared/syncular/upstream.
//
// Without one, Require skips the test with a message naming what to set —
// or fails it when SYNCSTORE_TEST_REQUIRE_DB=1 (CI sets it).
package upstream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Env names the variable that points at the upstream directory.
const Env = "SYNCULAR_UPSTREAM"

// requireEnv turns a missing tree from a skip into a failure (as
// internal/testdb does for databases).
const requireEnv = "SYNCSTORE_TEST_REQUIRE_DB"

const fallback = "/work/shared/syncular/upstream"

// marker is a file every upstream tree has.
var marker = filepath.Join("docs", "SPEC.md")

// Dir returns the upstream directory (see the package doc for the order).
func Dir() (string, error) {
	if d := os.Getenv(Env); d != "" {
		if isTree(d) {
			return filepath.Abs(d)
		}
		return "", fmt.Errorf("%s=%s has no %s", Env, d, marker)
	}
	if root, err := moduleRoot(); err == nil {
		for d := root; ; d = filepath.Dir(d) {
			if c := filepath.Join(d, "shared", "syncular", "upstream"); isTree(c) {
				return c, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if isTree(fallback) {
		return fallback, nil
	}
	return "", errors.New("no shared/syncular/upstream above the module root and none at " + fallback)
}

func isTree(d string) bool {
	st, err := os.Stat(filepath.Join(d, marker))
	return err == nil && st.Mode().IsRegular()
}

// moduleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if st, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && st.Mode().IsRegular() {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", errors.New("no go.mod above the working directory")
		}
		d = p
	}
}

// Require returns Dir, or skips t loudly without a tree — fails it when
// SYNCSTORE_TEST_REQUIRE_DB=1.
func Require(t testing.TB) string {
	t.Helper()
	d, err := Dir()
	if err != nil {
		msg := fmt.Sprintf("upstream Syncular tree not found: %v. Set %s to the upstream/ directory of a Syncular checkout", err, Env)
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s (and %s=1 makes this a failure)", msg, requireEnv)
		}
		t.Skip("SKIP (loud): " + msg)
	}
	return d
}

// Vectors returns the golden vectors directory, Require(t)/spec/vectors.
func Vectors(t testing.TB) string {
	t.Helper()
	return filepath.Join(Require(t), "spec", "vectors")
}
