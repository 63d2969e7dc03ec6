// Package blobstoretest checks a server.BlobStore against the interface's
// documented behaviour: what a host's own store (or one of the bundled
// ones) must do for the server's blob routes, push check and sweep.
package blobstoretest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/server"
)

// ID returns the content address of b.
func ID(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// Run checks store, using partitions whose names start with prefix (a
// shared store: make prefix unique per run). The store must start without
// blobs in those partitions.
func Run(t *testing.T, store server.BlobStore, prefix string) {
	ctx := context.Background()
	p, q := prefix+"p", prefix+"q"
	b := []byte("the bytes of a blob")
	info := server.BlobInfo{ID: ID(b), ByteLength: int64(len(b)), MediaType: "image/png", CreatedAtMs: 1_750_000_000_000}

	t.Run("refused puts store nothing", func(t *testing.T) {
		for _, c := range []struct {
			info server.BlobInfo
			body string
		}{
			{info, string(b[:len(b)-1])},                           // short
			{info, string(b) + "!"},                                // long
			{info, strings.ToUpper(string(b))},                     // other bytes
			{server.BlobInfo{ID: "sha256:zz", ByteLength: 1}, "x"}, // malformed id
		} {
			if err := store.Put(ctx, p, c.info, strings.NewReader(c.body)); !errors.Is(err, server.ErrBlobHashMismatch) {
				t.Errorf("Put of %q: %v, want ErrBlobHashMismatch", c.body, err)
			}
		}
		if l, err := store.List(ctx, p, "", 10); err != nil || len(l) != 0 {
			t.Fatalf("after refused puts: %v %v", l, err)
		}
	})

	t.Run("put open stat", func(t *testing.T) {
		for range 2 { // the second is idempotent
			if err := store.Put(ctx, p, info, bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
		rc, got, err := store.Open(ctx, p, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		all, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(all, b) {
			t.Fatalf("Open: %q %v", all, err)
		}
		st, err := store.Stat(ctx, p, info.ID)
		if err != nil || st.ID != info.ID || st.ByteLength != info.ByteLength || st.MediaType != "image/png" || st.CreatedAtMs <= 0 {
			t.Fatalf("Stat: %+v %v (Open: %+v)", st, err, got)
		}
		if _, err := store.Stat(ctx, q, info.ID); !errors.Is(err, server.ErrBlobNotFound) {
			t.Fatalf("another partition: %v", err)
		}
		if _, _, err := store.Open(ctx, q, info.ID); !errors.Is(err, server.ErrBlobNotFound) {
			t.Fatalf("Open in another partition: %v", err)
		}
		if _, err := store.Stat(ctx, p, "sha256:nope"); !errors.Is(err, server.ErrBlobNotFound) {
			t.Fatalf("malformed id: %v", err)
		}
	})

	t.Run("list pages in id order", func(t *testing.T) {
		var ids []string
		for i := range 7 {
			body := []byte(fmt.Sprintf("blob %d", i))
			if err := store.Put(ctx, q, server.BlobInfo{ID: ID(body), ByteLength: int64(len(body))}, bytes.NewReader(body)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ID(body))
		}
		var got []string
		after := ""
		for {
			page, err := store.List(ctx, q, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, bi := range page {
				got = append(got, bi.ID)
				after = bi.ID
			}
			if len(page) < 3 {
				break
			}
		}
		if len(got) != len(ids) {
			t.Fatalf("listed %d, want %d", len(got), len(ids))
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Fatalf("not ascending: %v", got)
			}
		}
		if _, err := store.List(ctx, q, "", 0); err == nil {
			t.Fatal("limit 0 accepted")
		}
	})

	t.Run("delete", func(t *testing.T) {
		for range 2 { // absent is no error
			if err := store.Delete(ctx, p, info.ID); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := store.Stat(ctx, p, info.ID); !errors.Is(err, server.ErrBlobNotFound) {
			t.Fatalf("after delete: %v", err)
		}
	})
}
