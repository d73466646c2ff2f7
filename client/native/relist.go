package main

import (
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// relistAfter: a folder looked into this long after its last listing is listed again (the
// client merges the cloud's changes into the local copy); set from -ttl.
var relistAfter = 30 * time.Second

// maybeStale tells the client, at most once per relistAfter, that a listed folder is being used
// long after it was listed. The lookup does not wait: it answers from the local copy.
func (n *node) maybeStale() {
	last := n.listedAt.Load()
	now := time.Now().UnixNano()
	if now-last < int64(relistAfter) || !n.listedAt.CompareAndSwap(last, now) {
		return
	}
	cloud.tell(message{Op: "stale", Path: n.rel()})
}

// The client's merges of a new listing, each checked here against the local copy as an eviction
// is (a file changed since it was sent or fetched, neither a stub nor at `ctime`, is EBUSY), and
// told to the kernel once the local copy is changed (not under evictMu: a request waiting on it
// may hold the folder's lock the kernel needs).

// restub: the cloud holds another version: a stub of its size and mtime.
func restub(m message) syscall.Errno {
	n, errno := func() (*node, syscall.Errno) {
		evictMu.Lock()
		defer evictMu.Unlock()
		if _, errno := unchanged(m.Path, m.Ctime); errno != 0 {
			return nil, errno
		}
		mtime := unix.NsecToTimespec(m.Mtime)
		return stubAgain(m.Path, m.Size, mtime, mtime)
	}()
	if errno == 0 && n != nil {
		n.NotifyContent(0, 0) // its pages and attributes
	}
	return errno
}

// drop: the cloud no longer holds the file.
func drop(m message) syscall.Errno {
	errno := func() syscall.Errno {
		evictMu.Lock()
		defer evictMu.Unlock()
		if _, errno := unchanged(m.Path, m.Ctime); errno != 0 {
			return errno
		}
		return fs.ToErrno(syscall.Unlink(filepath.Join(localRoot, m.Path)))
	}()
	if errno == 0 {
		forgetName(m.Path)
	}
	return errno
}

// removedHere: names removed or moved away through the mount lately; a listing read before the
// client applied that change may still show them, and must not bring them back.
var removedHere = struct {
	sync.Mutex
	at     map[string]time.Time
	pruned time.Time
}{at: map[string]time.Time{}}

// removed notes `rel`; names past their time are pruned once per relistAfter, not at every
// removal (an `rm -r` of thousands of files would walk the map once per file).
func removed(rel string) {
	removedHere.Lock()
	defer removedHere.Unlock()
	now := time.Now()
	if now.Sub(removedHere.pruned) > relistAfter {
		for name, at := range removedHere.at {
			if now.Sub(at) > 2*relistAfter {
				delete(removedHere.at, name)
			}
		}
		removedHere.pruned = now
	}
	removedHere.at[rel] = now
}

func removedLately(rel string) bool {
	removedHere.Lock()
	defer removedHere.Unlock()
	at, ok := removedHere.at[rel]
	return ok && time.Since(at) <= 2*relistAfter
}

// added: a name new in the cloud: a stub of its size and mtime, or a folder (dir), unless the name
// exists here or was removed here lately (EEXIST).
func added(m message, dir bool) syscall.Errno {
	local := filepath.Join(localRoot, m.Path)
	errno := func() syscall.Errno {
		evictMu.Lock()
		defer evictMu.Unlock()
		if removedLately(m.Path) {
			return syscall.EEXIST
		}
		if dir {
			return fs.ToErrno(syscall.Mkdir(local, 0o755))
		}
		fd, err := syscall.Open(local, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL, 0o644)
		if err != nil {
			return fs.ToErrno(err)
		}
		defer syscall.Close(fd)
		if err := syscall.Ftruncate(fd, m.Size); err != nil {
			return fs.ToErrno(err)
		}
		if err := unix.Fsetxattr(fd, stubMark, []byte("1"), 0); err != nil {
			return fs.ToErrno(err)
		}
		mtime := unix.NsecToTimespec(m.Mtime)
		return fs.ToErrno(unix.UtimesNanoAt(unix.AT_FDCWD, local, []unix.Timespec{mtime, mtime}, 0))
	}()
	if errno == 0 {
		forgetName(m.Path)
	}
	return errno
}

func forgetName(rel string) {
	parent := rootInode
	if dir := filepath.Dir(rel); dir != "." {
		if p := nodeAt(dir); p != nil {
			parent = p.EmbeddedInode()
		} else {
			return // the kernel holds nothing under a folder it has not looked up
		}
	}
	name := filepath.Base(rel)
	parent.RmChild(name)
	parent.NotifyEntry(name)
}
