package tasks

import (
	"unsafe"

	"github.com/ptilab/ptilab/linuxabi"
)

// Pipes: a byte ring with a read end and a write end, as Linux's pipe(2)
// (fs/pipe.c) for blocking descriptors: a read takes what is there,
// blocking while the pipe is empty and a writer remains, and returns 0 at
// the end; a write of at most PipeBuf bytes is atomic, blocking until
// there is room, and fails with EPIPE without readers (no SIGPIPE: there
// are no signals). Unlike Linux, a longer write writes what fits and
// returns that short count.

const (
	maxPipes = 1024 // pipes and socket pairs' channels
	// PipeBuf is the most bytes a write puts in a pipe at once, whole
	// (Linux's PIPE_BUF).
	PipeBuf = 4096
)

type pipe struct {
	used             bool
	readers, writers int16
	rwait, wwait     waitList // tasks waiting to read, to write
	rpos, wpos       uint64   // bytes read and written so far
	ring             uint64   // address of the ring: memory the caller of NewPipe keeps
	size             uint64   // bytes of the ring
}

var pipes [maxPipes]pipe

func resetPipes() {
	for i := range pipes {
		if pipes[i].used {
			pipes[i] = pipe{}
		}
	}
	nspare = 0
}

// buf returns the pipe's ring.
func (pp *pipe) buf() []byte { return unsafe.Slice((*byte)(pointer(pp.ring)), pp.size) }

// Descriptor objects: pipe p's read end is object 2p, its write end 2p+1;
// file f is object fileObjBase+f.
const fileObjBase = 2 * maxPipes

// NewPipe makes a pipe whose read end is descriptor rfd of process rproc
// and write end wfd of wproc, with ring as its buffer (its capacity: Linux
// has 16 pages; the caller keeps the memory, mapped in the kernel side of
// every process, until Reset). It returns the pipe, or -1 when the table
// is full, a descriptor is out of range or taken, or the ring is empty.
func NewPipe(rproc, rfd, wproc, wfd int, ring []byte) int {
	if !fdFree(rproc, rfd) || !fdFree(wproc, wfd) || rproc == wproc && rfd == wfd || len(ring) == 0 {
		return -1
	}
	for i := range pipes {
		if !pipes[i].used {
			pipes[i] = pipe{used: true, readers: 1, writers: 1, rwait: waitList{-1, -1}, wwait: waitList{-1, -1},
				ring: uint64(uintptr(unsafe.Pointer(&ring[0]))), size: uint64(len(ring))}
			procs[rproc].fds()[rfd] = int16(2*i) + 1
			procs[wproc].fds()[wfd] = int16(2*i+1) + 1
			return i
		}
	}
	return -1
}

// ShareFD makes descriptor fd of process from also descriptor fd of
// process to (as a descriptor inherited across fork), and returns false
// when it cannot.
func ShareFD(from, to, fd int) bool {
	if from < 0 || from >= maxProcs || !procs[from].used || fd < 0 || fd >= int(procs[from].nfds) || procs[from].fds()[fd] == 0 || !fdFree(to, fd) {
		return false
	}
	obj := int(procs[from].fds()[fd]) - 1
	procs[to].fds()[fd] = int16(obj + 1)
	switch {
	case obj >= sockObjBase:
		pipes[obj-sockObjBase].readers++
		pipes[(obj-sockObjBase)^1].writers++
	case obj >= fileObjBase:
		files[obj-fileObjBase].refs++
	case obj%2 == 0:
		pipes[obj/2].readers++
	default:
		pipes[obj/2].writers++
	}
	return true
}

func fdFree(proc, fd int) bool {
	return proc >= 0 && proc < maxProcs && procs[proc].used && fd >= 0 && fd < int(procs[proc].nfds) && procs[proc].fds()[fd] == 0
}

// object returns the object behind descriptor fd of the running task's
// process, -1 when none.
func object(fd uint64) int {
	if cur < 0 {
		return -1
	}
	p := &procs[tasks[cur].proc]
	if fd >= uint64(p.nfds) {
		return -1
	}
	return int(fdSlots[p.fdBase+int32(fd)]) - 1
}

// PipeBytes returns the bytes written into and read from pipe p.
func PipeBytes(p int) (written, read uint64) { return pipes[p].wpos, pipes[p].rpos }

// userBuf returns the n bytes of the running task's memory at va, or nil
// when they are not all in the tasks' part of the address space (PML4 slot
// 255). The kernel side of the running task's process maps them.
func userBuf(va, n uint64) []byte {
	const lo, hi = 0x00007f8000000000, 0x0000800000000000
	if va < lo || va > hi || n > hi-va {
		return nil
	}
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(pointer(va)), n)
}

func pointer(va uint64) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&va)) }

func pipeRead(p int, buf, n uint64) int64 {
	pp := &pipes[p]
	if n == 0 {
		return 0
	}
	avail := pp.wpos - pp.rpos
	if avail == 0 {
		if pp.writers == 0 {
			return 0
		}
		block(waitRead, p, &pp.rwait)
		return 0
	}
	k := min(n, avail)
	dst := userBuf(buf, k)
	if dst == nil {
		return -linuxabi.EFAULT
	}
	ring := pp.buf()
	if c := copy(dst, ring[pp.rpos%pp.size:]); c < len(dst) {
		copy(dst[c:], ring) // the ring wraps
	}
	pp.rpos += k
	// Room for the writers: each checks its own need when picked.
	wake(&pp.wwait)
	return int64(k)
}

// writable reports whether a write of n bytes can go ahead in pipe pp: a
// write of at most PipeBuf bytes needs room for all of them, a longer one
// room for one.
func (pp *pipe) writable(n uint64) bool {
	need := n
	if n > PipeBuf {
		need = 1
	}
	return pp.size-(pp.wpos-pp.rpos) >= need
}

func pipeWrite(p int, buf, n uint64) int64 {
	pp := &pipes[p]
	if n == 0 {
		return 0
	}
	if pp.readers == 0 {
		return -linuxabi.EPIPE
	}
	if !pp.writable(n) {
		block(waitWrite, p, &pp.wwait)
		return 0
	}
	k := min(n, pp.size-(pp.wpos-pp.rpos))
	src := userBuf(buf, k)
	if src == nil {
		return -linuxabi.EFAULT
	}
	ring := pp.buf()
	if c := copy(ring[pp.wpos%pp.size:], src); c < len(src) {
		copy(ring, src[c:]) // the ring wraps
	}
	wasEmpty := pp.wpos == pp.rpos
	pp.wpos += k
	if wasEmpty { // readers wait only on an empty pipe
		wake(&pp.rwait)
	}
	return int64(k)
}

// ready reports whether blocked task t's call can go ahead now; a task
// woken by a wake-up that others used up goes back to waiting, before its
// address space is loaded.
func (t *task) ready() bool {
	pp := &pipes[t.obj]
	switch t.wait {
	case waitRead:
		return pp.wpos != pp.rpos || pp.writers == 0
	case waitWrite:
		return pp.readers == 0 || pp.writable(t.regs.DX)
	}
	// A socket's writer (waitSockWrite) is woken only when its call can
	// go ahead (sockRead, closeFD); should others have filled the queue
	// again first, its retried call waits again, as in Linux, where the
	// woken task runs and checks.
	return true
}

// waitListOf returns the list pipe obj keeps for waiters of kind.
func waitListOf(kind Wait, obj int) *waitList {
	if kind == waitRead {
		return &pipes[obj].rwait
	}
	return &pipes[obj].wwait
}

// closeFD closes descriptor fd of process proc, if open: the last
// reference to a pipe end wakes the tasks that then see the end of the
// pipe (readers: end of file; writers: EPIPE).
func closeFD(proc, fd int) int64 {
	fds := procs[proc].fds()
	if fd < 0 || fd >= len(fds) || fds[fd] == 0 {
		return -linuxabi.EBADF
	}
	obj := int(fds[fd]) - 1
	fds[fd] = 0
	switch {
	case obj >= fileObjBase:
		if obj < sockObjBase {
			files[obj-fileObjBase].refs--
			break
		}
		// Here, off the pipes' path: the endpoint reads channel c and
		// writes c^1; the last descriptor ends both streams at this end
		// (the peer's reader sees the end of file, its writer EPIPE).
		c := obj - sockObjBase
		if pipes[c].readers--; pipes[c].readers == 0 {
			wake(&pipes[c].wwait)
		}
		if pipes[c^1].writers--; pipes[c^1].writers == 0 {
			wake(&pipes[c^1].rwait)
		}
	case obj%2 == 0:
		pp := &pipes[obj/2]
		if pp.readers--; pp.readers == 0 {
			wake(&pp.wwait)
		}
	default:
		pp := &pipes[obj/2]
		if pp.writers--; pp.writers == 0 {
			wake(&pp.rwait)
		}
	}
	return 0
}
