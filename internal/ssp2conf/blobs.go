package ssp2conf

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"os"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/server"
)

// Blobs (upstream's blobs and blob-presign capabilities, SPEC §5.9). Each
// instance serves blobs from a server.FileBlobStore in a temporary
// directory of its own, removed when it closes. For blob-presign the host
// plays object store and CDN, as upstream's ts-server pairing does with
// its own URL form: a server.BlobURLSigner with a random key mints URLs
// under
//
//	GET|PUT /i/{id}/blob-cdn/{token}   no host authentication: the URL is the grant
//
// and serves them from the same store, reading expiry against the
// instance's virtual clock. Presign is off until the control
//
//	setBlobPresign {enabled} → {}
//
// turns it on (server.Server.SetBlobPresigner).

// instanceBlobs is an instance's blob side.
type instanceBlobs struct {
	dir    string
	store  *server.FileBlobStore
	signer *server.BlobURLSigner
}

// newInstanceBlobs makes the store and the signer whose URLs start with
// cdnBase.
func newInstanceBlobs(in *instance, cdnBase string) (*instanceBlobs, error) {
	dir, err := os.MkdirTemp("", "ssp2host-blobs-*")
	if err != nil {
		return nil, err
	}
	b := &instanceBlobs{dir: dir}
	if b.store, err = server.NewFileBlobStore(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, key); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if b.signer, err = server.NewBlobURLSigner(key, cdnBase, b.store, in.now); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return b, nil
}

func (b *instanceBlobs) close() {
	if b != nil {
		_ = os.RemoveAll(b.dir)
	}
}

// blobCDN is GET|PUT /i/{id}/blob-cdn/{token}: the instance's signer.
func (h *Host) blobCDN(w http.ResponseWriter, r *http.Request) {
	in, err := h.lookup(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	in.blobs.signer.ServeHTTP(w, r)
}

// setBlobPresign is the control of that name.
func (in *instance) setBlobPresign(r *http.Request) (any, error) {
	var req struct {
		Enabled bool `json:"enabled"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	var p server.BlobPresigner
	if req.Enabled {
		p = in.blobs.signer
	}
	if err := in.srv.SetBlobPresigner(p); err != nil {
		return nil, err
	}
	in.mu.Lock()
	in.presigner = p
	in.mu.Unlock()
	return struct{}{}, nil
}

// The blob-refs capability passes through faultConn (fault.go): the
// server's download authorization and the sweep read the reference index
// through the Store, which finds it on the Conn. Every driver the host runs
// has it; one without answers the driver's unsupported error.
var _ driver.BlobRefsConn = faultConn{}

func (c faultConn) ListRowsReferencingBlob(ctx context.Context, partition, blobID string, limit int) ([]driver.BlobRowRef, error) {
	b, ok := c.Conn.(driver.BlobRefsConn)
	if !ok {
		return nil, &driver.Error{Code: driver.CodeUnsupported, OpIndex: -1, Message: "the store has no blob-refs capability"}
	}
	return b.ListRowsReferencingBlob(ctx, partition, blobID, limit)
}

func (c faultConn) ListReferencedBlobIDs(ctx context.Context, partition, afterBlobID string, limit int) ([]string, error) {
	b, ok := c.Conn.(driver.BlobRefsConn)
	if !ok {
		return nil, &driver.Error{Code: driver.CodeUnsupported, OpIndex: -1, Message: "the store has no blob-refs capability"}
	}
	return b.ListReferencedBlobIDs(ctx, partition, afterBlobID, limit)
}
