package main

import (
	"sync"
	"syscall"
	"time"
)

// The files written since they were last told, told together every tellEvery: a file written
// in many calls costs one message, and the client reads it when it sends it.
const tellEvery = 100 * time.Millisecond

var written = struct {
	sync.Mutex
	nodes map[*node]struct{}
}{nodes: map[*node]struct{}{}}

func changed(n *node) {
	written.Lock()
	written.nodes[n] = struct{}{}
	written.Unlock()
}

// tellChanged tells `only` now if it was written (fsync), or every file written (nil).
func tellChanged(only *node) {
	written.Lock()
	var due []*node
	if only != nil {
		if _, ok := written.nodes[only]; ok {
			delete(written.nodes, only)
			due = append(due, only)
		}
	} else {
		for n := range written.nodes {
			due = append(due, n)
		}
		clear(written.nodes)
	}
	written.Unlock()
	for _, n := range due {
		var st syscall.Stat_t
		if syscall.Lstat(n.local(), &st) == nil { // else removed since: nothing to send
			cloud.tell(message{Op: "put", Path: n.rel()})
		}
	}
}

func tellingChanges() {
	for range time.Tick(tellEvery) {
		tellChanged(nil)
	}
}
