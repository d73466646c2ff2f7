package main

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Marks the client sets on the local copy: a file whose bytes are still only in the cloud
// (a sparse file of the right size and mtime) and a folder whose cloud listing is in place.
const (
	stubMark   = "user.hycloud.stub"
	listedMark = "user.hycloud.listed"
)

var cloud *bridge

var attrTTL time.Duration // how long the kernel keeps attributes (-ttl)

// node serves from the local copy (the kernel's requests cost a system call, not a round trip to
// the client); it asks the client to list a folder before its first lookup and to fetch a file
// before its first open, and tells it every change once made.
type node struct {
	fs.LoopbackNode
	listed   atomic.Bool
	listedAt atomic.Int64 // unix ns of its last listing (0: listed before this mount, or made here)
	listMu   sync.Mutex
	stub     atomic.Bool
}

func newNode(root *fs.LoopbackRoot, parent *fs.Inode, name string, st *syscall.Stat_t) fs.InodeEmbedder {
	n := &node{LoopbackNode: fs.LoopbackNode{RootData: root}}
	local := root.Path
	if parent != nil {
		local = filepath.Join(root.Path, parent.Path(nil), name)
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		n.listed.Store(marked(local, listedMark))
	case syscall.S_IFREG:
		n.stub.Store(marked(local, stubMark))
	}
	return n
}

func marked(local, mark string) bool {
	_, err := unix.Lgetxattr(local, mark, nil)
	return err == nil
}

func (n *node) rel() string { return n.Path(n.Root()) }

func (n *node) local() string { return filepath.Join(n.RootData.Path, n.rel()) }

func child(inode *fs.Inode) *node {
	if inode == nil {
		return nil
	}
	c, _ := inode.Operations().(*node)
	return c
}

// du counts blocks: a stub's are the cloud file's, not the sparse local copy's (none).
func (n *node) blocks(attr *fuse.Attr) {
	if n.stub.Load() {
		attr.Blocks = (attr.Size + 511) / 512
	}
}

func (n *node) ensureListed() syscall.Errno {
	if n.listed.Load() {
		n.maybeStale()
		return 0
	}
	n.listMu.Lock()
	defer n.listMu.Unlock()
	if n.listed.Load() {
		return 0
	}
	if _, errno := cloud.ask(message{Op: "list", Path: n.rel()}); errno != 0 {
		return errno
	}
	n.listedAt.Store(time.Now().UnixNano())
	n.listed.Store(true)
	return 0
}

func (n *node) ensureFetched() syscall.Errno {
	if !n.stub.Load() {
		return 0
	}
	n.listMu.Lock()
	defer n.listMu.Unlock()
	if !n.stub.Load() {
		return 0
	}
	if _, errno := cloud.ask(message{Op: "fetch", Path: n.rel()}); errno != 0 {
		return errno
	}
	n.stub.Store(false)
	return 0
}

// unstub: the file's cloud bytes are not needed (truncated to 0): the local copy is the file now.
func (n *node) unstub() {
	n.listMu.Lock() // after a fetch under way, not during it
	defer n.listMu.Unlock()
	if n.stub.Swap(false) {
		_ = unix.Lremovexattr(n.local(), stubMark)
	}
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	evictMu.RLock()
	defer evictMu.RUnlock()
	if errno := n.ensureListed(); errno != 0 {
		return nil, errno
	}
	inode, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if c := child(inode); c != nil {
		c.blocks(&out.Attr)
	}
	return inode, errno
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.ensureListed(); errno != 0 {
		return nil, 0, errno
	}
	h, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if d, ok := h.(loopbackDir); ok {
		return &folderHandle{d, n}, fuseFlags, errno
	}
	return h, fuseFlags, errno
}

// loopbackDir is what go-fuse's loopback folder handle offers.
type loopbackDir interface {
	fs.DirStream
	fs.FileReleasedirer
	fs.FileSeekdirer
	fs.FileReaddirenter
}

// folderHandle is an open folder whose fsync makes the folder durable in the cloud, as a file's
// fsync does (go-fuse's own syncs only the local copy's folder).
type folderHandle struct {
	loopbackDir
	n *node
}

func (h *folderHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return h.n.Fsync(ctx, nil, flags)
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if errno := n.ensureListed(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Readdir(ctx)
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	errno := n.LoopbackNode.Getattr(ctx, f, out)
	n.blocks(&out.Attr)
	return errno
}

// Open is answered ENOSYS once: the kernel then opens files without asking (no OPEN, FLUSH or
// RELEASE per file), and each read and write names the file, not a handle.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, syscall.ENOSYS
}

func (n *node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	evictMu.RLock()
	defer evictMu.RUnlock()
	if errno := n.ensureFetched(); errno != 0 {
		return nil, errno
	}
	fd, err := syscall.Open(n.local(), syscall.O_RDONLY, 0)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	got, err := syscall.Pread(fd, dest, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:got]), 0
}

func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	evictMu.RLock()
	defer evictMu.RUnlock()
	if errno := n.ensureFetched(); errno != 0 {
		return 0, errno
	}
	fd, err := syscall.Open(n.local(), syscall.O_WRONLY, 0)
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	wrote, err := syscall.Pwrite(fd, data, off)
	changed(n)
	return uint32(wrote), fs.ToErrno(err)
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	evictMu.RLock()
	defer evictMu.RUnlock()
	if errno := n.ensureListed(); errno != 0 {
		return nil, nil, 0, errno
	}
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if r, ok := fh.(fs.FileReleaser); ok {
		r.Release(ctx) // no handle: reads and writes name the file, as after an open
	}
	if c := child(inode); c != nil {
		c.unstub() // O_CREAT on an existing stub without O_EXCL: treated as rewritten
		changed(c)
	}
	return inode, nil, fuseFlags, errno
}

func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	tellChanged(n)
	_, errno := cloud.ask(message{Op: "sync", Path: n.rel()})
	return errno
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	evictMu.RLock()
	defer evictMu.RUnlock()
	size, sized := in.GetSize()
	if sized && size == 0 {
		n.unstub()
	} else if sized {
		if errno := n.ensureFetched(); errno != 0 {
			return errno
		}
	}
	_, timed := in.GetMTime()
	errno := n.LoopbackNode.Setattr(ctx, f, in, out)
	out.SetTimeout(attrTTL) // else kept 0 s: the stat after each chmod or utimens would ask again
	if errno == 0 && !n.stub.Load() && n.IsRegular() && (sized || timed) {
		changed(n)
	}
	n.blocks(&out.Attr)
	return errno
}

func (n *node) IsRegular() bool { return n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFREG }

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	evictMu.RLock()
	defer evictMu.RUnlock()
	if errno := n.ensureListed(); errno != 0 {
		return nil, errno
	}
	inode, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if c := child(inode); c != nil { // not under n until this returns: named from n
		_ = unix.Lsetxattr(filepath.Join(n.local(), name), listedMark, []byte("1"), 0) // nothing to list
		c.listed.Store(true)
		c.listedAt.Store(time.Now().UnixNano())
		cloud.tell(message{Op: "mkdir", Path: filepath.Join(n.rel(), name)})
	}
	return inode, errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	evictMu.RLock()
	defer evictMu.RUnlock()
	if errno := n.ensureListed(); errno != 0 {
		return errno
	}
	if c := child(n.GetChild(name)); c != nil {
		if errno := c.ensureListed(); errno != 0 { // not empty in the cloud: not empty here
			return errno
		}
	}
	errno := n.LoopbackNode.Rmdir(ctx, name)
	if errno == 0 {
		n.removedHere("rmdir", name, "")
	}
	return errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	evictMu.RLock()
	defer evictMu.RUnlock()
	if errno := n.ensureListed(); errno != 0 {
		return errno
	}
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 {
		n.removedHere("rm", name, "")
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	evictMu.RLock()
	defer evictMu.RUnlock()
	if flags&unix.RENAME_EXCHANGE != 0 {
		return syscall.EINVAL // the cloud has no atomic exchange
	}
	to := child(newParent.EmbeddedInode())
	if to == nil {
		return syscall.EXDEV
	}
	for _, dir := range []*node{n, to} {
		if errno := dir.ensureListed(); errno != 0 {
			return errno
		}
	}
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	if errno == 0 {
		n.removedHere("mv", name, filepath.Join(to.rel(), newName))
	}
	return errno
}

// Answered ENOSYS once, never asked again: the kernel checks access itself, closes
// without a FLUSH (the local copy needs none), and the mount has no extended attributes (the cloud keeps
// none; the kernel's security.capability check at each write costs nothing then).
func (n *node) Access(ctx context.Context, mask uint32) syscall.Errno { return syscall.ENOSYS }

func (n *node) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOSYS
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno { return syscall.ENOSYS }

// removedHere: `name` left this folder (op rm, rmdir, or mv to `to`): remembered, so that a
// listing read before the client applied it does not bring it back, and told to the client.
func (n *node) removedHere(op, name, to string) {
	path := filepath.Join(n.rel(), name)
	removed(path)
	cloud.tell(message{Op: op, Path: path, To: to})
}

// The cloud keeps no links, devices or hard links: refused (git falls back to rename).
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}
