package ssp2conf

import (
	"github.com/syncstore/syncstore/crdt/yjs"
	"github.com/syncstore/syncstore/server"
)

// crdtMergers is every instance's CRDT merger registry: the catalog's crdt
// scenarios (upstream's catalog/crdt.ts) push real Yjs updates to a
// "yjs-doc" column, as upstream's own pairing registers @syncular/crdt-yjs.
// A schema with a crdt column of another crdtType fails the create
// (server.New, SPEC §5.10.1).
var crdtMergers = map[string]server.CRDTMerger{"yjs-doc": yjs.Merger{}}
