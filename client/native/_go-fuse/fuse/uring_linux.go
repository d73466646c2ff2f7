// Added to go-fuse's fuse package at build time (go build -overlay, see the Makefile): go-fuse
// v2.12 does not speak FUSE over io_uring, and the transport needs its request handling.

package fuse

// FUSE over io_uring (Linux 6.14+, when the fuse module's enable_uring is on): the kernel keeps a
// queue per CPU and puts each request on the queue of the CPU its caller runs on. A thread on
// that CPU serving the queue answers without waking another CPU, which on a VM costs more than
// the request itself.

import (
	"log"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	uringHeaderSize     = 288 // struct fuse_uring_req_header: in_out[128], op_in[128], ent_in_out
	uringOpIn           = 128
	uringEntInOut       = 256 // struct fuse_uring_ent_in_out: flags, commit_id, payload_sz
	uringCmdRegister    = 1
	uringCmdCommitFetch = 2
	uringOpURingCmd     = 46 // IORING_OP_URING_CMD
	uringSetupSQE128    = 1 << 10
	uringEnterGetEvents = 1
	uringOffSQEs        = 0x10000000
	uringSQESize        = 128
	uringCQESize        = 16
	uringDepth          = 4 // entries per queue: requests of one CPU in flight at once
)

type uringEntry struct {
	ring    *uring
	index   int
	header  []byte // uringHeaderSize bytes the kernel reads and writes
	payload []byte
	iov     [2]unix.Iovec
}

type uring struct {
	server  *Server
	fd      int
	devFD   int
	qid     uint16
	sq, sqe []byte
	sqTail  *uint32
	sqMask  uint32
	sqArray unsafe.Pointer
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    unsafe.Pointer
	entries []*uringEntry

	mu      sync.Mutex // the submission ring
	pending uint32
	owner   atomic.Int32 // thread id of the loop waiting on the ring
}

type uringParams struct { // struct io_uring_params
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  [10]uint32 // io_sqring_offsets
	cqOff                                                                  [10]uint32 // io_cqring_offsets
}

var (
	uringOn sync.Map // *Server -> true: requests come over io_uring
	rings   sync.Map // thread id -> *uring, for Blocking
)

// ServeIOUring starts serving the kernel's io_uring queues, one per possible CPU, if INIT agreed
// on FUSE over io_uring (CAP_OVER_IO_URING in MountOptions.ExtraCapabilities, and the kernel
// offered it). Call it after NewServer and before anything uses the mount: once agreed, the
// kernel holds every request until each queue has its entries.
func (ms *Server) ServeIOUring() bool {
	if ms.negotiatedFlags&CAP_OVER_IO_URING == 0 {
		return false
	}
	var dev int
	if ms.fuseFD.withFD(func(fd int) { dev = fd }) != nil {
		return false
	}
	cpus, err := possibleCPUs()
	if err != nil {
		log.Printf("io_uring: %v", err)
		return false
	}
	for q := 0; q < cpus; q++ {
		r, err := newURing(ms, dev, uint16(q))
		if err != nil {
			log.Printf("io_uring queue %d: %v", q, err)
			return false
		}
		ms.fuseFD.loops.Add(1)
		go r.loop()
	}
	uringOn.Store(ms, true)
	return true
}

// IOUringUsable: whether this process may set up an io_uring of the kind the queues need (a
// sysctl, seccomp or a container can forbid it). Ask for CAP_OVER_IO_URING only then: once INIT
// agrees on it, a mount whose queues cannot start answers nothing.
func IOUringUsable() bool {
	p := uringParams{flags: uringSetupSQE128}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return false
	}
	unix.Close(int(fd))
	return true
}

// IOUring: whether requests come over io_uring.
func (ms *Server) IOUring() bool {
	_, on := uringOn.Load(ms)
	return on
}

// Blocking: the calling handler is about to wait (on another process, say). If it runs on an
// io_uring queue's thread, a new loop takes the queue over meanwhile, and this one ends after
// answering.
func (ms *Server) Blocking() {
	tid := int32(unix.Gettid())
	value, ok := rings.Load(tid)
	if !ok {
		return
	}
	r := value.(*uring)
	if r.owner.CompareAndSwap(tid, -1) {
		ms.fuseFD.loops.Add(1)
		go r.loop()
	}
}

// possibleCPUs: the kernel keeps a queue per possible CPU ("0-1" there: 2).
func possibleCPUs() (int, error) {
	data, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	text := strings.TrimSpace(string(data))
	last, err := strconv.Atoi(text[strings.LastIndexAny(text, "-,")+1:])
	return last + 1, err
}

func newURing(ms *Server, dev int, qid uint16) (*uring, error) {
	p := uringParams{flags: uringSetupSQE128}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 2*uringDepth, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, errno
	}
	r := &uring{server: ms, fd: int(fd), devFD: dev, qid: qid}
	size := max(int(p.sqOff[6])+int(p.sqEntries)*4, int(p.cqOff[5])+int(p.cqEntries)*uringCQESize)
	rw, shared := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	var err error
	if r.sq, err = unix.Mmap(r.fd, 0, size, rw, shared); err != nil { // both rings (IORING_FEAT_SINGLE_MMAP)
		return nil, err
	}
	if r.sqe, err = unix.Mmap(r.fd, uringOffSQEs, int(p.sqEntries)*uringSQESize, rw, shared); err != nil {
		return nil, err
	}
	at := func(off uint32) unsafe.Pointer { return unsafe.Pointer(&r.sq[off]) }
	r.sqTail, r.sqMask, r.sqArray = (*uint32)(at(p.sqOff[1])), *(*uint32)(at(p.sqOff[2])), at(p.sqOff[6])
	r.cqHead, r.cqTail, r.cqMask = (*uint32)(at(p.cqOff[0])), (*uint32)(at(p.cqOff[1])), *(*uint32)(at(p.cqOff[2]))
	r.cqes = at(p.cqOff[5])
	payload := max(ms.opts.MaxWrite, 1<<20) + 4096 // at least the kernel's max_pages pages
	for i := 0; i < uringDepth; i++ {
		mem, err := unix.Mmap(-1, 0, uringHeaderSize+payload, rw, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, err
		}
		e := &uringEntry{ring: r, index: i, header: mem[:uringHeaderSize], payload: mem[uringHeaderSize:]}
		e.iov[0] = unix.Iovec{Base: &e.header[0], Len: uint64(len(e.header))}
		e.iov[1] = unix.Iovec{Base: &e.payload[0], Len: uint64(len(e.payload))}
		r.entries = append(r.entries, e)
	}
	return r, nil
}

// queue puts a command for entry e on the submission ring; now: submit it at once (from a
// goroutine other than the ring's loop), else with the loop's next wait.
func (r *uring) queue(e *uringEntry, op uint32, commitID uint64, now bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tail := *r.sqTail
	index := tail & r.sqMask
	sqe := r.sqe[index*uringSQESize : (index+1)*uringSQESize]
	clear(sqe)
	sqe[0] = uringOpURingCmd
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(r.devFD)
	*(*uint32)(unsafe.Pointer(&sqe[8])) = op // cmd_op
	if op == uringCmdRegister {
		*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(&e.iov[0])))
		*(*uint32)(unsafe.Pointer(&sqe[24])) = uint32(len(e.iov))
	}
	*(*uint64)(unsafe.Pointer(&sqe[32])) = uint64(e.index) // user_data
	// struct fuse_uring_cmd_req in the command area (at 48): flags, commit_id, qid
	*(*uint64)(unsafe.Pointer(&sqe[56])) = commitID
	*(*uint16)(unsafe.Pointer(&sqe[64])) = r.qid
	*(*uint32)(unsafe.Add(r.sqArray, 4*index)) = index
	atomic.StoreUint32(r.sqTail, tail+1)
	r.pending++
	if now {
		r.enter(r.pending, 0, 0)
		r.pending = 0
	}
}

func (r *uring) enter(submit, wait, flags uint32) syscall.Errno {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), uintptr(wait), uintptr(flags), 0, 0)
	return errno
}

// loop waits on the ring and answers its requests on the queue's CPU; it ends when the mount
// is gone, or after a handler that blocked handed the ring to a new loop (Blocking).
func (r *uring) loop() {
	defer r.server.fuseFD.loops.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread() // the thread lives on: io_uring ends a thread's commands with it
	tid := int32(unix.Gettid())
	var all, cpu unix.CPUSet
	_ = unix.SchedGetaffinity(0, &all)
	defer unix.SchedSetaffinity(0, &all) //nolint:errcheck // the thread goes back to the runtime
	cpu.Set(int(r.qid))
	_ = unix.SchedSetaffinity(0, &cpu)
	rings.Store(tid, r)
	defer rings.Delete(tid)
	if r.owner.Swap(tid) == 0 {
		for _, e := range r.entries {
			r.queue(e, uringCmdRegister, 0, false)
		}
	}
	for r.owner.Load() == tid {
		r.mu.Lock()
		submit := r.pending
		r.pending = 0
		r.mu.Unlock()
		if errno := r.enter(submit, 1, uringEnterGetEvents); errno != 0 && errno != syscall.EINTR {
			log.Printf("io_uring queue %d: %v", r.qid, errno)
			return
		}
		for head := *r.cqHead; head != atomic.LoadUint32(r.cqTail); head = *r.cqHead {
			cqe := unsafe.Add(r.cqes, uringCQESize*(head&r.cqMask))
			index, res := *(*uint64)(cqe), *(*int32)(unsafe.Add(cqe, 8))
			atomic.StoreUint32(r.cqHead, head+1)
			if res < 0 { // the mount is gone (ENOTCONN, ENODEV), or a command was refused
				if res != -int32(syscall.ENOTCONN) && res != -int32(syscall.ENODEV) {
					log.Printf("io_uring queue %d: %v", r.qid, syscall.Errno(-res))
				}
				return
			}
			r.serve(r.entries[index])
			if r.owner.Load() != tid {
				return
			}
		}
	}
}

// serve lays the entry's request out as /dev/fuse gives it (header, the opcode's struct, the
// rest), answers it as Server.handleRequest does, and commits the answer to the entry.
func (r *uring) serve(e *uringEntry) {
	ms, fd := r.server, r.server.fuseFD
	in := (*InHeader)(unsafe.Pointer(&e.header[0]))
	payloadSize := int(*(*uint32)(unsafe.Pointer(&e.header[uringEntInOut+16])))
	structSize := min(max(int(in.Length)-int(unsafe.Sizeof(InHeader{}))-payloadSize, 0), uringOpIn)
	fd.reqMu.Lock()
	fd.inflightRequestBytes += fd.requestBytes()
	fd.reqMu.Unlock()
	req := fd.reqPool.Get().(*requestAlloc)
	buf := fd.readPool.Get().([]byte)
	n := copy(buf, e.header[:unsafe.Sizeof(InHeader{})])
	n += copy(buf[n:], e.header[uringOpIn:uringOpIn+structSize])
	n += copy(buf[n:], e.payload[:payloadSize])
	if !req.setInput(buf[:n]) {
		fd.reqMu.Lock()
		fd.putReadBuf(buf)
		fd.reqMu.Unlock()
	}
	defer fd.returnRequest(req)
	h, inSize, outSize, outPayloadSize, code := parseRequest(req.inputBuf, &ms.kernelSettings, ms.negotiatedFlags)
	req.request.status = code
	if code.Ok() {
		req.request.status = req.splitPayload(inSize, int(h.InputSize))
	}
	req.outHeaderBuf = req.outHeaderInline[:]
	req.outDataBuf = req.outDataInline[:outSize]
	clear(req.outHeaderBuf)
	clear(req.outDataBuf)
	if outPayloadSize > 0 {
		req.outPayload = ms.buffers.AllocBuffer(uint32(outPayloadSize))
		req.bufferPoolOutputBuf = req.outPayload
	}
	ms.protocolServer.handleRequest(h, &req.request)
	if req.readResult != nil {
		req.outPayload, req.status = req.readResult.Bytes(req.outPayload)
		req.serializeHeader(len(req.outPayload))
		req.readResult.Done()
		req.readResult = nil
	}
	commitID := *(*uint64)(unsafe.Pointer(&e.header[uringEntInOut+8]))
	copy(e.header, req.outHeaderBuf) // struct fuse_out_header, in in_out
	size := copy(e.payload, req.outDataBuf)
	size += copy(e.payload[size:], req.outPayload)
	*(*uint32)(unsafe.Pointer(&e.header[uringEntInOut+16])) = uint32(size)
	r.queue(e, uringCmdCommitFetch, commitID, r.owner.Load() != int32(unix.Gettid()))
}
