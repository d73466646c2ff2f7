// hycloud-fused serves `hycloud mount --native` from a local copy of the mounted folder; the
// client process that starts it lists, fetches and sends through its stdin and stdout.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

func fuseOptions() fuse.MountOptions {
	return fuse.MountOptions{
		FsName:  "hycloud",
		Options: []string{"noatime"}, // a read that changed atime would make the next stat ask
		Name:    "hycloud",
		Debug:   os.Getenv("HYCLOUD_FUSED_DEBUG") != "", // every request and answer on stderr
		// every write reaches the daemon, which tells the client what changed
		DisabledCapabilities: fuse.CAP_PASSTHROUGH,
		// pages are kept until told otherwise, not dropped when a stat shows a new mtime: every
		// change to the local copy comes through the kernel (a stub is fetched before any read)
		ExplicitDataCacheControl: true,
		// FUSE over io_uring where the kernel offers it (Linux 6.14+ with the fuse module's
		// enable_uring on): each request answered on its caller's CPU (_go-fuse/fuse/uring_linux.go)
		ExtraCapabilities: fuse.CAP_OVER_IO_URING,
	}
}

var fuseServer atomic.Pointer[fuse.Server] // for Blocking, set before the first request

// mount is fs.Mount with the io_uring queues served before anything uses the mount: once the
// kernel agrees to io_uring, it holds every request until each queue has its entries.
func mount(dir string, root fs.InodeEmbedder, options *fs.Options) (*fuse.Server, error) {
	server, err := fuse.NewServer(fs.NewNodeFS(root, options), dir, &options.MountOptions)
	if err != nil {
		return nil, err
	}
	fuseServer.Store(server)
	server.ServeIOUring()
	go server.Serve()
	return server, server.WaitMount()
}

func main() {
	backing := flag.String("backing", "", "the local copy")
	ttl := flag.Duration("ttl", 30*time.Second, "how long the kernel keeps names and attributes")
	uring := flag.Bool("io-uring", true, "take requests over io_uring where the kernel offers it")
	flag.Parse()
	if *backing == "" || flag.NArg() != 1 {
		log.Fatal("usage: hycloud-fused -backing DIR MOUNTPOINT")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(*backing, &st); err != nil {
		log.Fatal(err)
	}
	attrTTL, relistAfter = *ttl, *ttl
	closed := make(chan struct{})
	cloud = newBridge(os.Stdout, os.Stdin, closed)
	root := &fs.LoopbackRoot{Path: *backing, Dev: uint64(st.Dev), NewNode: newNode}
	root.RootNode = newNode(root, nil, "", &st)
	options := fuseOptions()
	if !*uring || !fuse.IOUringUsable() {
		options.ExtraCapabilities &^= fuse.CAP_OVER_IO_URING
	}
	server, err := mount(flag.Arg(0), root.RootNode, &fs.Options{
		AttrTimeout:     ttl,
		EntryTimeout:    ttl,
		NegativeTimeout: ttl,
		MountOptions:    options,
	})
	if err != nil {
		log.Fatalf("cannot mount on %s: %v", flag.Arg(0), err)
	}
	rootInode, localRoot = root.RootNode.EmbeddedInode(), *backing
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case <-signals:
		case <-closed: // the client is gone: no stale mount is left behind
		}
		_ = server.Unmount()
	}()
	// SIGUSR1: unmounted here, but alive in a mount namespace copied meanwhile (a container, a
	// sandbox), so the kernel never ends the connection: tell the last changes and end.
	gone := make(chan os.Signal, 1)
	signal.Notify(gone, syscall.SIGUSR1)
	finish := sync.OnceFunc(func() {
		tellChanged(nil) // the last writes, before the client sends everything
		os.Exit(0)
	})
	go func() {
		<-gone
		finish()
	}()
	go tellingChanges()
	transport := "/dev/fuse"
	if server.IOUring() {
		transport = "io_uring"
	}
	cloud.tell(message{Op: "mounted", Transport: transport})
	server.Wait()
	finish()
}
