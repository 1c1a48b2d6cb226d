package tasks

import (
	"unsafe"

	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/tasks/core"
)

// Unix-domain stream socket pairs, as socketpair(AF_UNIX, SOCK_STREAM, 0)
// makes them: their streams are package core's (the model of Linux's
// af_unix and its sk_sndbuf accounting, and how it differs from Linux,
// are written there). Each direction is a channel, a slot of the pipes
// table with its ring; a pair takes two adjacent slots, 2k and 2k+1, and
// an endpoint is the channel it reads from, c, with the channel it writes
// to, c^1. A descriptor of endpoint c is object sockObjBase+c.

// Socket pairs' descriptor objects follow the files'.
const sockObjBase = fileObjBase + maxFiles

// NewSocketPair makes a socket pair whose one endpoint is descriptor afd
// of process aproc and the other bfd of bproc, with ringA and ringB as
// the buffers of the streams into a and into b (the caller keeps the
// memory, mapped in the kernel side of every process, until Reset). It
// returns the channel a reads (b reads the next one), or -1 when no two
// adjacent slots are free, a descriptor is out of range or taken, or a
// ring is not core.RingSize bytes.
func NewSocketPair(aproc, afd, bproc, bfd int, ringA, ringB []byte) int {
	if !fdFree(aproc, afd) || !fdFree(bproc, bfd) || aproc == bproc && afd == bfd || len(ringA) != core.RingSize || len(ringB) != core.RingSize {
		return -1
	}
	c := freePair()
	if c < 0 {
		return -1
	}
	openPair(c, uint64(uintptr(unsafe.Pointer(&ringA[0]))), uint64(uintptr(unsafe.Pointer(&ringB[0]))))
	procs[aproc].fds()[afd] = int16(sockObjBase+c) + 1
	procs[bproc].fds()[bfd] = int16(sockObjBase+c+1) + 1
	return c
}

// freePair returns the first of two adjacent free slots, -1 when none.
func freePair() int {
	for c := 0; c+1 < maxPipes; c += 2 {
		if rings[c] == 0 && rings[c+1] == 0 {
			return c
		}
	}
	return -1
}

// openPair makes channels c and c+1 a socket pair's, with their rings.
func openPair(c int, ringA, ringB uint64) {
	rings[c], rings[c+1] = ringA, ringB
	kernel.OpenPair(uint32(c))
}

// Rings for the socket pairs tasks make with socketpair(2): the kernel
// cannot allocate, so the run gives it rings beforehand (SetSocketRings).
var (
	spareRings [2 * maxPipes]uint64
	nspare     int
)

// SetSocketRings gives socketpair(2) rings of core.RingSize bytes each,
// two per pair, at the addresses in spare (memory the caller keeps, mapped
// in the kernel side of every process); Reset forgets them.
func SetSocketRings(spare []uint64) {
	nspare = copy(spareRings[:], spare)
}

// socketpair is socketpair(2) for the running task: an AF_UNIX
// SOCK_STREAM pair on the two lowest free descriptors, stored as two ints
// at sv. Errors as Linux's __sys_socketpair and unix_create:
// EAFNOSUPPORT for another family (Linux answers EOPNOTSUPP for families
// it has without socketpair), EINVAL for flags other than SOCK_CLOEXEC
// and SOCK_NONBLOCK, ESOCKTNOSUPPORT for another type (Linux also has
// SOCK_DGRAM and SOCK_SEQPACKET pairs; not modelled), EPROTONOSUPPORT
// for a protocol other than 0 or PF_UNIX, EMFILE without two free
// descriptors, ENFILE without a free pair or rings for it, EFAULT when sv
// is not the task's (the descriptors are not opened). SOCK_NONBLOCK is
// not modelled: EINVAL. SOCK_CLOEXEC is accepted (there is no exec).
func socketpair(domain, typ, protocol, sv uint64) int64 {
	if kernel.Cur == core.NoTask {
		return -linuxabi.EBADF
	}
	switch {
	case int32(domain) != linuxabi.AF_UNIX:
		return -linuxabi.EAFNOSUPPORT
	case uint32(typ)&^(linuxabi.SOCK_TYPE_MASK|linuxabi.SOCK_CLOEXEC) != 0:
		return -linuxabi.EINVAL
	case uint32(typ)&linuxabi.SOCK_TYPE_MASK != linuxabi.SOCK_STREAM:
		return -linuxabi.ESOCKTNOSUPPORT
	case int32(protocol) != 0 && int32(protocol) != linuxabi.AF_UNIX:
		return -linuxabi.EPROTONOSUPPORT
	}
	proc := int(tasks[kernel.Cur].proc)
	fda, fdb := -1, -1
	for fd := 0; fd < int(procs[proc].nfds) && fdb < 0; fd++ {
		if procs[proc].fds()[fd] == 0 {
			if fda < 0 {
				fda = fd
			} else {
				fdb = fd
			}
		}
	}
	if fdb < 0 {
		return -linuxabi.EMFILE
	}
	c := freePair()
	if c < 0 || nspare < 2 {
		return -linuxabi.ENFILE
	}
	if userRoom(sv) < 8 {
		return -linuxabi.EFAULT
	}
	nspare -= 2
	openPair(c, spareRings[nspare], spareRings[nspare+1])
	procs[proc].fds()[fda] = int16(sockObjBase+c) + 1
	procs[proc].fds()[fdb] = int16(sockObjBase+c+1) + 1
	*(*int32)(pointer(sv)) = int32(fda)
	*(*int32)(pointer(sv + 4)) = int32(fdb)
	return 0
}
