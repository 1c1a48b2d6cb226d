package core

import "github.com/ptilab/ptilab/linuxabi"

// Pipes: a byte ring with a read end and a write end, as Linux's pipe(2)
// (fs/pipe.c) for blocking descriptors: a read takes what is there,
// blocking while the pipe is empty and a writer remains, and returns 0 at
// the end; a write of at most PipeBuf bytes is atomic, blocking until
// there is room, and fails with EPIPE without readers (no SIGPIPE: there
// are no signals). Unlike Linux, a longer write writes what fits and
// returns that short count.
//
// The calls take the pipe's ring (its address: RingSize bytes the kernel
// maps) and the user's buffer buf of n bytes with room, the bytes from
// buf to the end of the task's memory that holds it (0 when none does;
// the world's check: the kernel's reads may also use read-only memory),
// which the copies stay within: past it the call fails with EFAULT.

// Read is read(2) of up to n bytes into buf from pipe p, or from socket
// channel p for the endpoint that reads it: what is there; 0 at the end
// (empty, no writers); otherwise the task waits. A pipe's read wakes its
// writers; a socket channel's frees the skbs it took whole (sockRead).
//
//go:nosplit
func (k *Kernel) Read(p uint32, ring, buf, room, n uintptr) int32 {
	pp := &k.Pipes[p]
	if n == 0 {
		return 0
	}
	avail := pp.WPos - pp.RPos
	if avail == 0 {
		if pp.Writers == 0 {
			return 0
		}
		k.block(WaitRead, p)
		return 0
	}
	c := min(n, uintptr(avail))
	if c > room {
		return -linuxabi.EFAULT
	}
	fromRing(buf, ring, pp.RPos, c)
	pp.RPos += uint32(c)
	if pp.Sock != 0 {
		k.sockRead(p, uint32(c))
	} else {
		// Room for the writers: each checks its own need when picked.
		k.wake(&pp.WriteQ)
	}
	return int32(c)
}

// need is the room a write of n bytes needs to go ahead in a pipe: all of
// them up to PipeBuf bytes, one for a longer write.
//
//go:nosplit
func need(n uintptr) uint32 {
	if n > PipeBuf {
		return 1
	}
	return uint32(n)
}

// PipeWrite is write(2) of n bytes from buf into pipe p: EPIPE without
// readers; what fits (all of a write of at most PipeBuf bytes), or the
// task waits.
//
//go:nosplit
func (k *Kernel) PipeWrite(p uint32, ring, buf, room, n uintptr) int32 {
	pp := &k.Pipes[p]
	if n == 0 {
		return 0
	}
	if pp.Readers == 0 {
		return -linuxabi.EPIPE
	}
	free := RingSize - (pp.WPos - pp.RPos)
	if free < need(n) {
		k.Tasks[k.Cur].Need = need(n)
		k.block(WaitWrite, p)
		return 0
	}
	c := min(n, uintptr(free))
	if c > room {
		return -linuxabi.EFAULT
	}
	toRing(ring, pp.WPos, buf, c)
	wasEmpty := pp.WPos == pp.RPos
	pp.WPos += uint32(c)
	if wasEmpty { // readers wait only on an empty pipe
		k.wake(&pp.ReadQ)
	}
	return int32(c)
}

// CloseRead drops a reference to pipe p's read end: the last one wakes
// the writers, which then fail with EPIPE.
//
//go:nosplit
func (k *Kernel) CloseRead(p uint32) {
	pp := &k.Pipes[p]
	if pp.Readers--; pp.Readers == 0 {
		k.wake(&pp.WriteQ)
	}
}

// CloseWrite drops a reference to pipe p's write end: the last one wakes
// the readers, which then read the end of the pipe.
//
//go:nosplit
func (k *Kernel) CloseWrite(p uint32) {
	pp := &k.Pipes[p]
	if pp.Writers--; pp.Writers == 0 {
		k.wake(&pp.ReadQ)
	}
}
