package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// TestReadmeShowsThisFile fails when README.md's host example and this
// package's main.go differ: the README's code must compile.
func TestReadmeShowsThisFile(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	const open, end = "```go\n// Command host", "```\n"
	i := strings.Index(string(readme), open)
	if i < 0 {
		t.Fatal("README.md has no ```go block starting with // Command host")
	}
	block := string(readme)[i+len("```go\n"):]
	block = block[:strings.Index(block, end)]
	if block != string(src) {
		t.Errorf("README.md's host example differs from examples/host/main.go; copy main.go into the README verbatim")
	}
}

// TestRun runs the example twice on the same store: the second push is a
// retry of the first, so it must be answered from the stored result and
// not add a commit; both pulls bootstrap the one row.
func TestRun(t *testing.T) {
	t.Chdir(t.TempDir())
	for i, replayed := range []bool{false, true} {
		want := fmt.Sprintf("push: applied at commit 1 (replayed %v)\npull: t1 version 1, next cursor 1\n", replayed)
		if got := captureStdout(t, main); got != want {
			t.Errorf("run %d printed %q, want %q", i+1, got, want)
		}
	}
	if _, err := os.Stat("app.db"); err != nil {
		t.Errorf("the store file: %v", err)
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = old }()
	f()
	w.Close()
	return <-done
}
