package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FileBlobStore is a BlobStore in a directory: one file per blob, in one
// subdirectory per partition (named by a hash of the partition, which
// never appears on disk), each file a one-line JSON header (media type,
// creation time, length) and the bytes. A blob is written to a temporary
// file, its SHA-256 and length checked, then renamed into place, so a
// reader never sees a partial blob and several server instances may share
// the directory (a shared volume).
type FileBlobStore struct {
	dir string
}

var _ BlobStore = (*FileBlobStore)(nil)

// NewFileBlobStore returns a store in dir, creating it if needed.
func NewFileBlobStore(dir string) (*FileBlobStore, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("server: blob store directory: %w", err)
	}
	return &FileBlobStore{dir: dir}, nil
}

// fileBlobHeader is the first line of a blob file.
type fileBlobHeader struct {
	ByteLength  int64  `json:"n"`
	MediaType   string `json:"t,omitempty"`
	CreatedAtMs int64  `json:"c"`
}

// maxFileBlobHeader bounds the header line (MaxBlobMediaTypeBytes of
// escaped media type and two numbers fit many times over).
const maxFileBlobHeader = 4096

func (f *FileBlobStore) partDir(partition string) string {
	return filepath.Join(f.dir, "b-"+hashHex(partition)[:32])
}

func blobFile(id string) string { return strings.TrimPrefix(id, "sha256:") + ".blob" }

// Put implements BlobStore: the bytes are hashed while written.
func (f *FileBlobStore) Put(ctx context.Context, partition string, info BlobInfo, body io.Reader) error {
	if !validSegmentID(info.ID) || info.ByteLength < 0 {
		return fmt.Errorf("%w: malformed id or length", ErrBlobHashMismatch)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := f.partDir(partition)
	if _, err := os.Stat(filepath.Join(dir, blobFile(info.ID))); err == nil {
		return nil // content addressing: the same bytes are there
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if len(info.MediaType) > MaxBlobMediaTypeBytes {
		info.MediaType = ""
	}
	hdr, err := json.Marshal(fileBlobHeader{ByteLength: info.ByteLength, MediaType: info.MediaType, CreatedAtMs: info.CreatedAtMs})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	h := sha256.New()
	_, err = tmp.Write(append(hdr, '\n'))
	var n int64
	if err == nil {
		n, err = io.Copy(io.MultiWriter(tmp, h), io.LimitReader(ctxReader{ctx, body}, info.ByteLength+1))
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != info.ByteLength || "sha256:"+hex.EncodeToString(h.Sum(nil)) != info.ID {
		return ErrBlobHashMismatch
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, blobFile(info.ID)))
}

// ctxReader fails a long copy once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// open opens the blob file and reads its header.
func (f *FileBlobStore) open(partition, id string) (*os.File, *bufio.Reader, BlobInfo, error) {
	if !validSegmentID(id) {
		return nil, nil, BlobInfo{}, ErrBlobNotFound
	}
	file, err := os.Open(filepath.Join(f.partDir(partition), blobFile(id)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, BlobInfo{}, ErrBlobNotFound
	}
	if err != nil {
		return nil, nil, BlobInfo{}, err
	}
	br := bufio.NewReaderSize(file, maxFileBlobHeader)
	line, err := br.ReadSlice('\n')
	var hdr fileBlobHeader
	if err == nil {
		err = json.Unmarshal(line, &hdr)
	}
	if err != nil {
		file.Close()
		return nil, nil, BlobInfo{}, fmt.Errorf("server: blob file header: %w", err)
	}
	return file, br, BlobInfo{ID: id, ByteLength: hdr.ByteLength, MediaType: hdr.MediaType, CreatedAtMs: hdr.CreatedAtMs}, nil
}

// Open implements BlobStore.
func (f *FileBlobStore) Open(ctx context.Context, partition, id string) (io.ReadCloser, BlobInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, BlobInfo{}, err
	}
	file, br, info, err := f.open(partition, id)
	if err != nil {
		return nil, BlobInfo{}, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(br, info.ByteLength), file}, info, nil
}

// Stat implements BlobStore.
func (f *FileBlobStore) Stat(ctx context.Context, partition, id string) (BlobInfo, error) {
	if err := ctx.Err(); err != nil {
		return BlobInfo{}, err
	}
	file, _, info, err := f.open(partition, id)
	if err != nil {
		return BlobInfo{}, err
	}
	file.Close()
	return info, nil
}

// Delete implements BlobStore.
func (f *FileBlobStore) Delete(ctx context.Context, partition, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !validSegmentID(id) {
		return nil
	}
	err := os.Remove(filepath.Join(f.partDir(partition), blobFile(id)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// List implements BlobStore. It reads the partition's directory names
// (one entry per blob) and the headers of the page it returns.
func (f *FileBlobStore) List(ctx context.Context, partition, afterID string, limit int) ([]BlobInfo, error) {
	if limit < 1 || limit > maxBlobReferrers {
		return nil, fmt.Errorf("server: FileBlobStore.List: limit must be 1…%d", maxBlobReferrers)
	}
	entries, err := os.ReadDir(f.partDir(partition))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".blob")
		if id := "sha256:" + name; ok && validSegmentID(id) && id > afterID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]BlobInfo, 0, min(len(ids), limit))
	for _, id := range ids {
		if len(out) == limit {
			break
		}
		info, err := f.Stat(ctx, partition, id)
		if errors.Is(err, ErrBlobNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}
