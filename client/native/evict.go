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
// and mtime kept): the client bounds the local copy so. A file changed since the client sent or
// fetched it (its change time is not `ctime`, in ns) is busy (EBUSY): those bytes may not be in
// the cloud yet. No write can land between that check and the stub: writes hold evictMu shared.
func evict(rel string, ctime int64) syscall.Errno {
	evictMu.Lock()
	defer evictMu.Unlock()
	local := filepath.Join(localRoot, rel)
	var st syscall.Stat_t
	if err := syscall.Lstat(local, &st); err != nil {
		return fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return syscall.EISDIR
	}
	if st.Ctim.Nano() != ctime {
		return syscall.EBUSY
	}
	if err := unix.Lsetxattr(local, stubMark, []byte("1"), 0); err != nil {
		return fs.ToErrno(err)
	}
	if err := syscall.Truncate(local, 0); err != nil {
		return fs.ToErrno(err)
	}
	if err := syscall.Truncate(local, st.Size); err != nil {
		return fs.ToErrno(err)
	}
	times := []unix.Timespec{unix.Timespec(st.Atim), unix.Timespec(st.Mtim)}
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, local, times, unix.AT_SYMLINK_NOFOLLOW) // truncate set them
	if n := nodeAt(rel); n != nil {
		n.stub.Store(true)
	}
	return 0
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
