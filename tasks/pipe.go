package tasks

import (
	"unsafe"

	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/tasks/core"
)

// Pipes: core's (Linux's pipe(2) for blocking descriptors; see there),
// each with its ring here, kernel memory the run gives.

const (
	maxPipes = core.MaxPipes // pipes and socket pairs' channels
	// PipeBuf is the most bytes a write puts in a pipe at once, whole
	// (Linux's PIPE_BUF).
	PipeBuf = core.PipeBuf
)

// rings are the pipe slots' rings, core.RingSize bytes each at these
// addresses (memory the caller of NewPipe or NewSocketPair keeps); 0 for
// a free slot.
var rings [maxPipes]uint64

func resetPipes() {
	rings = [maxPipes]uint64{}
	nspare = 0
}

// Descriptor objects: pipe p's read end is object 2p, its write end 2p+1;
// file f is object fileObjBase+f.
const fileObjBase = 2 * maxPipes

// NewPipe makes a pipe whose read end is descriptor rfd of process rproc
// and write end wfd of wproc, with ring as its buffer (core.RingSize
// bytes: Linux's 16 pages; the caller keeps the memory, mapped in the
// kernel side of every process, until Reset). It returns the pipe, or -1
// when the table is full, a descriptor is out of range or taken, or the
// ring is not core.RingSize bytes.
func NewPipe(rproc, rfd, wproc, wfd int, ring []byte) int {
	if !fdFree(rproc, rfd) || !fdFree(wproc, wfd) || rproc == wproc && rfd == wfd || len(ring) != core.RingSize {
		return -1
	}
	for i := range rings {
		if rings[i] == 0 {
			rings[i] = uint64(uintptr(unsafe.Pointer(&ring[0])))
			kernel.OpenPipe(uint32(i))
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
		kernel.Pipes[obj-sockObjBase].Readers++
		kernel.Pipes[(obj-sockObjBase)^1].Writers++
	case obj >= fileObjBase:
		files[obj-fileObjBase].refs++
	case obj%2 == 0:
		kernel.Pipes[obj/2].Readers++
	default:
		kernel.Pipes[obj/2].Writers++
	}
	return true
}

func fdFree(proc, fd int) bool {
	return proc >= 0 && proc < maxProcs && procs[proc].used && fd >= 0 && fd < int(procs[proc].nfds) && procs[proc].fds()[fd] == 0
}

// object returns the object behind descriptor fd of the running task's
// process, -1 when none.
func object(fd uint64) int {
	if kernel.Cur == core.NoTask {
		return -1
	}
	p := &procs[tasks[kernel.Cur].proc]
	if fd >= uint64(p.nfds) {
		return -1
	}
	return int(fdSlots[p.fdBase+int32(fd)]) - 1
}

// PipeBytes returns the bytes written into and read from pipe p.
func PipeBytes(p int) (written, read uint64) {
	return uint64(kernel.Pipes[p].WPos), uint64(kernel.Pipes[p].RPos)
}

// userRoom returns the bytes from va to the end of the tasks' part of the
// address space (PML4 slot 255), 0 when va is not in it: the kernel side
// of the running task's process maps it, and core's copies stay within it,
// so that a bad buffer is EFAULT instead of a fault in the kernel.
func userRoom(va uint64) uintptr {
	const lo, hi = 0x00007f8000000000, 0x0000800000000000
	if va < lo || va >= hi {
		return 0
	}
	return uintptr(hi - va)
}

func pointer(va uint64) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&va)) }

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
		kernel.CloseSocket(uint32(obj - sockObjBase)) // here, off the pipes' path
	case obj%2 == 0:
		kernel.CloseRead(uint32(obj / 2))
	default:
		kernel.CloseWrite(uint32(obj / 2))
	}
	return 0
}
