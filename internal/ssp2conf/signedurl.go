package ssp2conf

import (
	"crypto/rand"
	"time"

	"github.com/syncstore/syncstore/server"
)

// server maps upstream's signedUrls option onto server.SignedURLConfig: a
// fresh random key per instance, URLs leading to the host's own
// /i/{id}/signed route (the URL host's role, played by the instance's
// SignedSegmentHandler), and the TTL to set once the server exists (0 is
// a TTL there: URLs born expired). nil: signed URLs off.
func (o *createSignedURLs) server(urlBase string) (*server.SignedURLConfig, time.Duration, error) {
	if o == nil {
		return nil, 0, nil
	}
	ttl := int64(server.DefaultSignedURLTTL / time.Second)
	if o.TTLSeconds != nil {
		ttl = *o.TTLSeconds
	}
	if ttl < 0 || ttl > int64(server.MaxSignedURLTTL/time.Second) {
		return nil, 0, badRequest("signedUrls.ttlSeconds must be 0…%d", int64(server.MaxSignedURLTTL/time.Second))
	}
	key := make([]byte, server.MinSignedURLKeyBytes)
	_, _ = rand.Read(key) // crypto/rand never fails on supported platforms
	return &server.SignedURLConfig{BaseURL: urlBase, Keys: [][]byte{key}}, time.Duration(ttl) * time.Second, nil
}
