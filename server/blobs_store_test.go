package server_test

import (
	"testing"

	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/server/blobstoretest"
)

func TestFileBlobStore(t *testing.T) {
	fs, err := server.NewFileBlobStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobstoretest.Run(t, fs, "")
}
