package server

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// Blobs (SPEC §5.9): content-addressed file attachments a row references
// through a blob_ref column. The bytes live in a BlobStore (this file),
// reached over the routes of blobs_http.go; the push-time existence check
// and the reference index are in blobs_push.go, the sweep of unreferenced
// blobs in blobs_gc.go, presigned URLs in blobs_presign.go.

// Errors of a BlobStore. Implementations return them (wrapped or not);
// callers test with errors.Is.
var (
	// ErrBlobNotFound: no blob with that id in that partition.
	ErrBlobNotFound = errors.New("server: blob not found")
	// ErrBlobHashMismatch: the bytes Put read do not hash to the id, or
	// are not BlobInfo.ByteLength long. Nothing is stored.
	ErrBlobHashMismatch = errors.New("server: blob bytes do not match the blob id")
	// ErrBlobTooLarge: the store refuses a blob of that size.
	ErrBlobTooLarge = errors.New("server: blob too large for the store")
)

// Bounds of blobs.
const (
	// DefaultMaxBlobBytes is BlobConfig.MaxBytes's default: 64 MiB.
	DefaultMaxBlobBytes = 64 << 20
	// DefaultBlobURLTTL is BlobConfig.URLTTL's default, the SPEC's
	// ceiling for a presigned URL (§5.4, §5.9.5): 15 minutes.
	DefaultBlobURLTTL = 15 * time.Minute
	// MaxBlobMediaTypeBytes bounds a stored media type; a longer one is
	// not stored (it is advisory, §5.9.1).
	MaxBlobMediaTypeBytes = 255
	// maxBlobReferrers bounds the referencing rows a download reads to
	// authorize (§5.9.5): the engine's page bound (sync.MaxLimit).
	maxBlobReferrers = 10000
)

// BlobInfo describes a stored blob.
type BlobInfo struct {
	// ID is the content address: "sha256:" + the lowercase hex SHA-256 of
	// the bytes (SPEC §5.9.1).
	ID string
	// ByteLength is the size of the bytes, ≥ 0.
	ByteLength int64
	// MediaType is the advisory type the uploader declared ("" none), at
	// most MaxBlobMediaTypeBytes; never parsed nor trusted.
	MediaType string
	// CreatedAtMs is when the blob was first stored (epoch ms, the
	// server's clock): the orphan sweep's grace period counts from it.
	CreatedAtMs int64
}

// BlobStore keeps blob bytes, per partition, keyed by content address
// (SPEC §5.9.2). Unlike segments, blobs are durable: a store never forgets
// a blob on its own; only Delete (the orphan sweep, SweepOrphanBlobs)
// removes one. Implementations are safe for concurrent use; a store shared
// by several server instances lets each serve every blob. Every method
// takes a context first and honours its cancellation.
type BlobStore interface {
	// Put stores the bytes read from body — exactly info.ByteLength of
	// them, whose SHA-256 is info.ID — under (partition, info.ID), with
	// info.MediaType and info.CreatedAtMs. Bytes of another length or
	// hash → ErrBlobHashMismatch, nothing stored. Putting a blob already
	// stored succeeds and keeps the stored one (content addressing makes
	// it the same bytes). A store may refuse a size with ErrBlobTooLarge.
	Put(ctx context.Context, partition string, info BlobInfo, body io.Reader) error
	// Open returns the blob's bytes and info; the caller closes the
	// reader. Absent → ErrBlobNotFound.
	Open(ctx context.Context, partition, id string) (io.ReadCloser, BlobInfo, error)
	// Stat returns the blob's info. Absent → ErrBlobNotFound.
	Stat(ctx context.Context, partition, id string) (BlobInfo, error)
	// Delete removes the blob; an absent blob is not an error.
	Delete(ctx context.Context, partition, id string) error
	// List returns the infos of partition's blobs whose id is greater
	// than afterID ("" = from the first), ascending bytewise by id, at
	// most limit (1…10,000): paging by the last id returns every blob
	// once.
	List(ctx context.Context, partition, afterID string, limit int) ([]BlobInfo, error)
}

// BlobPresigner mints presigned URLs for a BlobStore's objects: a GET URL
// a client fetches a blob from without host authentication (§5.9.5
// always-issue) and a PUT URL it uploads one to (§5.9.3 upload grant).
// The URL is the whole grant: whoever holds it may use it until it
// expires, so the server only mints one after its own checks (the
// download's row-derived authorization, the grant's authentication and
// size cap). NewS3BlobStore's store (package server/s3blob) and
// BlobURLSigner are presigners.
type BlobPresigner interface {
	// PresignGet returns a URL serving the blob (partition, info.ID),
	// valid for ttl from now.
	PresignGet(ctx context.Context, partition string, info BlobInfo, now time.Time, ttl time.Duration) (string, error)
	// PresignPut returns a URL accepting one upload of exactly
	// byteLength bytes for (partition, blobID), valid for ttl from now.
	// The object host stores them under blobID; integrity is checked at
	// reference time (the push's existence check, every download's
	// content-address check, §5.9.3).
	PresignPut(ctx context.Context, partition, blobID string, byteLength int64, mediaType string, now time.Time, ttl time.Duration) (string, error)
}

// BlobConfig turns blobs on (Config.Blobs). Store is required.
type BlobConfig struct {
	// Store keeps the bytes.
	Store BlobStore
	// MaxBytes bounds one blob: an upload or a grant over it is HTTP 413
	// blob.too_large (§5.9.3). 0 → DefaultMaxBlobBytes.
	MaxBytes int64
	// Presigner, if set, makes downloads answer presigned GET URLs
	// instead of bytes and upload grants presigned PUT URLs (§5.9.3,
	// §5.9.5); Server.SetBlobPresigner changes it at run time. nil: bytes
	// ride the server, and a grant request answers "no grant" ({}).
	Presigner BlobPresigner
	// URLTTL is how long a presigned URL is valid (§5.9.5: the revocation
	// window). 0 → DefaultBlobURLTTL; at most 15 minutes.
	URLTTL time.Duration
}

// blobState is a Server's blob configuration.
type blobState struct {
	store     BlobStore
	maxBytes  int64
	ttl       time.Duration
	presigner atomic.Pointer[presignerBox]
}

type presignerBox struct{ p BlobPresigner }

// newBlobState checks c; nil c → nil (blobs off).
func newBlobState(c *BlobConfig) (*blobState, error) {
	if c == nil {
		return nil, nil
	}
	if c.Store == nil {
		return nil, errors.New("server: Config.Blobs.Store is required")
	}
	b := &blobState{store: c.Store, maxBytes: c.MaxBytes, ttl: c.URLTTL}
	if b.maxBytes == 0 {
		b.maxBytes = DefaultMaxBlobBytes
	}
	if b.ttl == 0 {
		b.ttl = DefaultBlobURLTTL
	}
	switch {
	case b.maxBytes < 0:
		return nil, errors.New("server: negative Config.Blobs.MaxBytes")
	case b.ttl < time.Second || b.ttl > 15*time.Minute:
		return nil, errors.New("server: Config.Blobs.URLTTL must be 1 s…15 min (SPEC §5.4)")
	}
	if c.Presigner != nil {
		b.presigner.Store(&presignerBox{c.Presigner})
	}
	return b, nil
}

func (b *blobState) presign() BlobPresigner {
	if box := b.presigner.Load(); box != nil {
		return box.p
	}
	return nil
}

// SetBlobPresigner switches presigned blob URLs at run time (upstream's
// setBlobPresign): p non-nil makes the next downloads and upload grants
// answer URLs minted by p, nil makes downloads serve bytes and grants
// answer "no grant". URLs already issued stay valid until they expire.
// It fails when blobs are off (Config.Blobs nil).
func (s *Server) SetBlobPresigner(p BlobPresigner) error {
	if s.blobs == nil {
		return errors.New("server: blobs are off (Config.Blobs is nil)")
	}
	if p == nil {
		s.blobs.presigner.Store(nil)
	} else {
		s.blobs.presigner.Store(&presignerBox{p})
	}
	return nil
}
