// hycloud-fused serves `hycloud mount --native` from a local copy of the mounted folder; the
// client process that starts it lists, fetches and sends through its stdin and stdout.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"sync"
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
	}
}

func main() {
	backing := flag.String("backing", "", "the local copy")
	ttl := flag.Duration("ttl", 30*time.Second, "how long the kernel keeps names and attributes")
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
	server, err := fs.Mount(flag.Arg(0), root.RootNode, &fs.Options{
		AttrTimeout:     ttl,
		EntryTimeout:    ttl,
		NegativeTimeout: ttl,
		MountOptions:    fuseOptions(),
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
	cloud.tell(message{Op: "mounted"})
	server.Wait()
	finish()
}
