package main

import (
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// evictMu: every operation that reads, writes or makes a file holds it shared; an eviction holds
// it alone, so no write lands in a file while it becomes a stub again.
var evictMu sync.RWMutex

// The mount's root and the local copy's folder, set once mounted.
var (
	rootInode *fs.Inode
	localRoot string
)

// evict turns a file the cloud holds as it is here back into a stub (its blocks freed, its size
// and times kept): the client bounds the local copy so. A file changed since the client sent or
// fetched it (`unchanged`) is busy (EBUSY): those bytes may not be in the cloud yet. No write can
// land between that check and the stub: writes hold evictMu shared.
func evict(rel string, ctime int64) syscall.Errno {
	evictMu.Lock()
	defer evictMu.Unlock()
	st, errno := unchanged(rel, ctime)
	if errno != 0 {
		return errno
	}
	_, errno = stubAgain(rel, st.Size, unix.Timespec(st.Atim), unix.Timespec(st.Mtim))
	return errno
}

// stubAgain makes the local copy of `rel` a stub of `size` bytes with these times (the truncates
// set them), and the kernel's node of it, if any, fetching at its next read. Under evictMu.
func stubAgain(rel string, size int64, atime, mtime unix.Timespec) (*node, syscall.Errno) {
	local := filepath.Join(localRoot, rel)
	if err := unix.Lsetxattr(local, stubMark, []byte("1"), 0); err != nil {
		return nil, fs.ToErrno(err)
	}
	if err := syscall.Truncate(local, 0); err != nil {
		return nil, fs.ToErrno(err)
	}
	if err := syscall.Truncate(local, size); err != nil {
		return nil, fs.ToErrno(err)
	}
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, local, []unix.Timespec{atime, mtime}, unix.AT_SYMLINK_NOFOLLOW)
	n := nodeAt(rel)
	if n != nil {
		n.stub.Store(true)
	}
	return n, 0
}

// unchanged: `rel` is a file the client may replace: a stub (no local change is possible without
// fetching it first) or a file still at the change time (ns) it had when sent or fetched.
func unchanged(rel string, ctime int64) (syscall.Stat_t, syscall.Errno) {
	local := filepath.Join(localRoot, rel)
	var st syscall.Stat_t
	if err := syscall.Lstat(local, &st); err != nil {
		return st, fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return st, syscall.EISDIR
	}
	if !marked(local, stubMark) && st.Ctim.Nano() != ctime {
		return st, syscall.EBUSY
	}
	return st, 0
}

// nodeAt is the kernel's node of `rel` if it has one.
func nodeAt(rel string) *node {
	cur := rootInode
	for _, name := range strings.Split(rel, "/") {
		if cur = cur.GetChild(name); cur == nil {
			return nil
		}
	}
	return child(cur)
}
