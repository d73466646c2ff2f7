package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log"
	"sync"
	"sync/atomic"
	"syscall"
)

// message is one line of the bridge, either way: a question (an op and an id > 0, answered with
// the same id and no op), an event (id 0, not answered) or an answer (errno 0 for success). The
// daemon asks `list`, `fetch` and `sync` and tells `stale`; the client asks `evict`, `restub`,
// `drop`, `stub` and `dir`.
type message struct {
	ID    uint64 `json:"id"`
	Op    string `json:"op,omitempty"`
	Path  string `json:"path,omitempty"`
	To    string `json:"to,omitempty"`
	Ctime int64  `json:"ctime,omitempty"` // evict: the change time the file had when sent or fetched
	Size  int64  `json:"size,omitempty"`  // restub: the cloud's size and mtime (ns)
	Mtime int64  `json:"mtime,omitempty"`
	Errno int    `json:"errno,omitempty"`
	// mounted: how requests come from the kernel, "io_uring" or "/dev/fuse"
	Transport string `json:"transport,omitempty"`
}

// bridge carries the daemon's questions and changes to the client process over a pipe pair:
// the client owns the cloud side (listings, downloads, the write-back of changes).
type bridge struct {
	out     *json.Encoder
	outMu   sync.Mutex
	waiting sync.Map // id -> chan message
	next    atomic.Uint64
}

// newBridge reads answers until the client closes its end; then `closed` is closed.
func newBridge(w io.Writer, r io.Reader, closed chan struct{}) *bridge {
	b := &bridge{out: json.NewEncoder(w)}
	go func() {
		b.answers(r)
		close(closed)
	}()
	return b
}

func (b *bridge) answers(r io.Reader) {
	scan := bufio.NewScanner(r)
	scan.Buffer(make([]byte, 1<<20), 64<<20)
	for scan.Scan() {
		var m message
		if err := json.Unmarshal(scan.Bytes(), &m); err != nil {
			log.Printf("bridge: bad answer: %v", err)
			continue
		}
		if m.Op != "" { // the client's own question
			go b.answer(m)
		} else if ch, ok := b.waiting.LoadAndDelete(m.ID); ok {
			ch.(chan message) <- m
		}
	}
	// the client is gone: every question waiting fails
	b.waiting.Range(func(id, ch any) bool {
		b.waiting.Delete(id)
		ch.(chan message) <- message{Errno: int(syscall.EIO)}
		return true
	})
}

func (b *bridge) send(m message) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	if err := b.out.Encode(m); err != nil {
		log.Printf("bridge: cannot send %s: %v", m.Op, err)
	}
}

// tell sends a change; the client applies changes in the order told.
func (b *bridge) tell(m message) {
	m.ID = 0
	b.send(m)
}

// ask sends a question and waits for its answer.
func (b *bridge) ask(m message) (message, syscall.Errno) {
	m.ID = b.next.Add(1)
	ch := make(chan message, 1)
	if server := fuseServer.Load(); server != nil {
		server.Blocking() // an io_uring queue's thread hands its queue on while it waits
	}
	b.waiting.Store(m.ID, ch)
	b.send(m)
	answer := <-ch
	return answer, syscall.Errno(answer.Errno)
}

func (b *bridge) answer(m message) {
	errno := syscall.ENOSYS
	switch m.Op {
	case "evict":
		errno = evict(m.Path, m.Ctime)
	case "restub":
		errno = restub(m)
	case "drop":
		errno = drop(m)
	case "stub":
		errno = added(m, false)
	case "dir":
		errno = added(m, true)
	}
	b.send(message{ID: m.ID, Errno: int(errno)})
}
