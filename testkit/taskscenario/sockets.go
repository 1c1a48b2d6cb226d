package taskscenario

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/linuxabi"
)

// Socket pairs: the AF_UNIX stream semantics of net/unix/af_unix.c that
// sched-messaging relies on, with Linux's sk_sndbuf accounting (x86-64
// Linux 6.x: 212992 bytes, a 100-byte message's skb charged 768 bytes of
// truesize).

func init() {
	Scenarios = append(Scenarios,
		Scenario{"Socket/StreamBothWays", socketStream},
		Scenario{"Socket/FullQueueAndWakeAtAQuarter", socketFullQueue},
		Scenario{"Socket/EndOfFileAndEPIPE", socketEnd},
		Scenario{"Socket/BlockedWriterGetsEPIPE", socketBlockedWriterEPIPE},
		Scenario{"Socket/WokenWriterWaitsAgain", socketWokenWriterWaitsAgain},
		Scenario{"Socket/SocketPairCall", socketPairCall},
		Scenario{"Socket/SharedEndpoint", socketShared},
	)
}

// Linux's figures the scenarios check (see package tasks's socket.go).
const (
	sndbuf       = 212992
	truesize100  = 768                                      // a 100-byte skb: kmalloc-512 head + struct sk_buff
	queued100    = (sndbuf + truesize100 - 1) / truesize100 // 278: queued while the charge is below sndbuf
	wakeAt100    = sndbuf / 4 / truesize100                 // 69: skbs left when the writer is woken
	sockA, sockB = 0, 1                                     // the scenarios' endpoints' descriptors
)

// SocketErrors are calls on a socket pair (endpoints at descriptors 0 and
// 1 of one process) that fail or do nothing without blocking.
var SocketErrors = []struct {
	Name string
	Call Call
	Args func(k Kernel) []uint64
	Want int64
}{
	{"lseek on a socket", Lseek, func(k Kernel) []uint64 { return []uint64{sockA, 0, SeekSet} }, eSPIPE},
	{"read a closed descriptor", Read, func(k Kernel) []uint64 { return []uint64{5, k.Data(), 1} }, eBADF},
	{"write a closed descriptor", Write, func(k Kernel) []uint64 { return []uint64{5, k.Data(), 1} }, eBADF},
	{"write from the kernel's half", Write, func(k Kernel) []uint64 { a, n := k.Bad(InKernel); return []uint64{sockA, a, n} }, eFAULT},
	{"write from below the tasks' slot", Write, func(k Kernel) []uint64 { a, n := k.Bad(BelowUser); return []uint64{sockA, a, n} }, eFAULT},
	{"write running past the slot", Write, func(k Kernel) []uint64 { a, n := k.Bad(PastEnd); return []uint64{sockA, a, n} }, eFAULT},
	{"zero-byte read of an empty socket", Read, func(k Kernel) []uint64 { return []uint64{sockA, 0, 0} }, 0},
	{"zero-byte write", Write, func(k Kernel) []uint64 { return []uint64{sockA, 0, 0} }, 0},
}

func socketError(t *testing.T, k Kernel, i int) {
	tc := SocketErrors[i]
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewSocketPair(p, sockA, p, sockB))
	k.NewTask(p, entryIP)
	assert.Equal(t, tc.Want, call(t, k, 0, tc.Call, tc.Args(k)...), "no block")
	w, r := k.PipeBytes(1)
	assert.Equal(t, [2]uint64{0, 0}, [2]uint64{w, r}, "nothing queued")
}

// Bytes come out in order, each way, across writes: a read takes what is
// queued up to its size, not one write's worth.
func socketStream(t *testing.T, k Kernel) {
	p, q := k.NewProcess(0x1000, nfds), k.NewProcess(0x3000, nfds)
	require.Equal(t, 0, k.NewSocketPair(p, sockA, q, sockB))
	k.NewTask(p, 0x1000)
	k.NewTask(q, 0x2000)
	mp, mq, base := k.Mem(p), k.Mem(q), k.Data()
	copy(mp, "abcdefg")
	require.Equal(t, int64(3), call(t, k, 0, Write, sockA, base, 3))
	require.Equal(t, int64(4), call(t, k, 0, Write, sockA, base+3, 4))
	call(t, k, 1, Read, sockA, base+0x200, 3) // nothing for a: it blocks, q starts
	require.Equal(t, int64(5), call(t, k, 1, Read, sockB, base+0x10, 5), "across the two writes")
	require.Equal(t, int64(2), call(t, k, 1, Read, sockB, base+0x20, 10), "what is left")
	assert.Equal(t, "abcde", string(mq[0x10:0x15]))
	assert.Equal(t, "fg", string(mq[0x20:0x22]))
	copy(mq[0x100:], "XYZ")
	require.Equal(t, int64(3), call(t, k, 1, Write, sockB, base+0x100, 3), "the other way")
	require.Equal(t, int64(3), call(t, k, 0, SchedYield), "a's read completes")
	assert.Equal(t, "XYZ", string(mp[0x200:0x203]))
	w, r := k.PipeBytes(1)
	assert.Equal(t, [2]uint64{7, 7}, [2]uint64{w, r}, "a to b")
	w, r = k.PipeBytes(0)
	assert.Equal(t, [2]uint64{3, 3}, [2]uint64{w, r}, "b to a")
}

// A writer queues 100-byte messages while the charge is below sk_sndbuf
// (278 of them: the last passes it), then waits; reads free skbs, but the
// writer is woken only when the charge has fallen to a quarter of
// sk_sndbuf (69 skbs left), as unix_write_space does.
func socketFullQueue(t *testing.T, k Kernel) {
	require.GreaterOrEqual(t, k.SocketRingSize(), queued100*100, "the ring must not bind first")
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewSocketPair(p, sockA, p, sockB))
	k.NewTask(p, 0x1000) // the writer
	k.NewTask(p, 0x2000) // the reader
	mem, base := k.Mem(p), k.Data()
	for i := range mem[:100] {
		mem[i] = byte(i)
	}
	for i := 0; i < queued100; i++ {
		require.Equal(t, int64(100), call(t, k, 0, Write, sockA, base, 100), "message %d", i)
	}
	call(t, k, 1, Write, sockA, base, 100) // the charge has reached sk_sndbuf: the writer waits
	assert.Equal(t, Task{Proc: p, State: Blocked, Wait: WaitWrite, Pipe: 1, IP: 0x1000 + 2*(queued100+1)}, k.Task(0))
	dst := base + 0x1000
	left := queued100 - wakeAt100 - 1
	require.Equal(t, int64(100*left), call(t, k, 1, Read, sockB, dst, uint64(100*left)))
	assert.Equal(t, Blocked, k.Task(0).State, "%d skbs still queued: above a quarter of sk_sndbuf", queued100-left)
	require.Equal(t, int64(50), call(t, k, 1, Read, sockB, dst, 50), "half a message")
	assert.Equal(t, Blocked, k.Task(0).State, "the half-read skb is still charged")
	require.Equal(t, int64(50), call(t, k, 1, Read, sockB, dst, 50))
	assert.Equal(t, Runnable, k.Task(0).State, "%d skbs left: woken", wakeAt100)
	assert.Equal(t, mem[50:100], mem[0x1000:0x1000+50], "the bytes in order")
	require.Equal(t, int64(100), call(t, k, 0, SchedYield), "the writer's retried write goes ahead")
	w, r := k.PipeBytes(1)
	assert.Equal(t, [2]uint64{100 * (queued100 + 1), uint64(100 * (left + 1))}, [2]uint64{w, r})
}

// A read of an empty socket whose peer closed is the end of file; a write
// to it fails with EPIPE, even of 0 bytes (sockets check before the
// length, pipes after).
func socketEnd(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewSocketPair(p, sockA, p, sockB))
	k.NewTask(p, 0x1000)
	k.NewTask(p, 0x2000)
	buf := k.Data()
	copy(k.Mem(p), "q")
	require.Equal(t, int64(1), call(t, k, 0, Write, sockA, buf, 1))
	call(t, k, 1, Read, sockA, buf+8, 1) // empty: a's reader waits
	require.Equal(t, int64(1), call(t, k, 1, Read, sockB, buf+9, 1))
	require.Zero(t, call(t, k, 1, Close, sockB), "b closes with nothing unread (else Linux gives a ECONNRESET first)")
	require.Zero(t, call(t, k, 0, SchedYield), "end of file for the waiting reader")
	require.Zero(t, call(t, k, 0, Read, sockA, buf+8, 1), "and for the next read")
	require.Equal(t, byte('q'), k.Mem(p)[9])
	assert.Equal(t, int64(ePIPE), call(t, k, 0, Write, sockA, buf, 1), "no peer")
	assert.Equal(t, int64(ePIPE), call(t, k, 0, Write, sockA, buf, 0), "no peer, 0 bytes")
	assert.Equal(t, int64(eBADF), call(t, k, 0, Read, sockB, buf, 1), "closed")
}

// A writer waiting on a full queue gets EPIPE when the peer closes.
func socketBlockedWriterEPIPE(t *testing.T, k Kernel) {
	p, q := k.NewProcess(0x1000, nfds), k.NewProcess(0x3000, nfds)
	require.Equal(t, 0, k.NewSocketPair(p, sockA, q, sockB))
	k.NewTask(p, 0x1000)
	k.NewTask(q, 0x2000)
	for i := 0; i < queued100; i++ {
		require.Equal(t, int64(100), call(t, k, 0, Write, sockA, k.Data(), 100))
	}
	call(t, k, 1, Write, sockA, k.Data(), 100) // full: the writer waits
	require.Zero(t, call(t, k, 1, Close, sockB))
	assert.Equal(t, int64(ePIPE), call(t, k, 0, SchedYield), "the retried write finds no peer")
}

// socketpair(2): the two lowest free descriptors, written as two ints;
// Linux's errors for what it refuses.
func socketPairCall(t *testing.T, k Kernel) {
	p := k.NewProcess(0, 4)
	k.NewTask(p, 0x1000)
	require.True(t, k.OpenFile(p, fileFD, 0))
	sv := k.Data() + 0x40
	mem := k.Mem(p)
	pair := func(domain, typ, proto, sv uint64) int64 { return call(t, k, 0, SocketPair, domain, typ, proto, sv) }
	assert.Equal(t, int64(eNFILE), pair(linuxabi.AF_UNIX, linuxabi.SOCK_STREAM, 0, sv), "no rings given")
	k.SocketRings(1)
	assert.Equal(t, int64(eAFNO), pair(2, linuxabi.SOCK_STREAM, 0, sv), "AF_INET")
	assert.Equal(t, int64(eINVAL), pair(linuxabi.AF_UNIX, linuxabi.SOCK_STREAM|0x100, 0, sv), "an unknown flag")
	assert.Equal(t, int64(eINVAL), pair(linuxabi.AF_UNIX, linuxabi.SOCK_STREAM|linuxabi.SOCK_NONBLOCK, 0, sv), "SOCK_NONBLOCK: not modelled")
	assert.Equal(t, int64(eSOCKT), pair(linuxabi.AF_UNIX, 7, 0, sv), "an unknown type")
	assert.Equal(t, int64(ePROTO), pair(linuxabi.AF_UNIX, linuxabi.SOCK_STREAM, 6, sv), "a protocol")
	bad, _ := k.Bad(InKernel)
	assert.Equal(t, int64(eFAULT), pair(linuxabi.AF_UNIX, linuxabi.SOCK_STREAM, 0, bad))
	require.Zero(t, pair(linuxabi.AF_UNIX, linuxabi.SOCK_STREAM|linuxabi.SOCK_CLOEXEC, linuxabi.AF_UNIX, sv))
	assert.Equal(t, []uint32{0, 1}, []uint32{binary.LittleEndian.Uint32(mem[0x40:]), binary.LittleEndian.Uint32(mem[0x44:])}, "the lowest free descriptors")
	copy(mem, "hi")
	require.Equal(t, int64(2), call(t, k, 0, Write, 1, k.Data(), 2))
	require.Equal(t, int64(2), call(t, k, 0, Read, 0, k.Data()+8, 8))
	assert.Equal(t, "hi", string(mem[8:10]))
	assert.Equal(t, int64(eMFILE), pair(linuxabi.AF_UNIX, linuxabi.SOCK_STREAM, 0, sv), "one descriptor left")
	require.Zero(t, call(t, k, 0, Close, fileFD))
	assert.Equal(t, int64(eNFILE), pair(linuxabi.AF_UNIX, linuxabi.SOCK_STREAM, 0, sv), "the rings are used")
}

// An endpoint shared by two processes (as after fork) ends its peer's
// stream only when both have closed it.
func socketShared(t *testing.T, k Kernel) {
	p, q, r := k.NewProcess(0x1000, nfds), k.NewProcess(0x2000, nfds), k.NewProcess(0x3000, nfds)
	require.Equal(t, 0, k.NewSocketPair(p, sockA, q, sockB))
	require.True(t, k.ShareFD(q, r, sockB))
	k.NewTask(p, 0x1000)
	k.NewTask(q, 0x2000)
	k.NewTask(r, 0x3000)
	call(t, k, 1, Read, sockA, k.Data()+0x10, 1) // empty: p waits
	call(t, k, 2, Exit, 0)                       // q's exit closes its b
	copy(k.Mem(r), "z")
	require.Equal(t, int64(1), call(t, k, 2, Write, sockB, k.Data(), 1), "r's b still writes")
	require.Equal(t, int64(1), call(t, k, 0, Exit, 0), "p's read gets r's byte")
	assert.Equal(t, byte('z'), k.Mem(p)[0x10])
}

// Two writers wait on a full queue and are woken together; the first
// fills the ring (a 60000-byte write: two skbs, the second cut to the
// ring's room, and a short count where Linux would wait for the rest),
// so the second's retried write waits again.
func socketWokenWriterWaitsAgain(t *testing.T, k Kernel) {
	require.Equal(t, 65536, k.SocketRingSize(), "the figures below are for a 64 KiB ring")
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewSocketPair(p, sockA, p, sockB))
	for i := 0; i < 3; i++ {
		k.NewTask(p, uint64(0x1000*(i+1)))
	}
	base := k.Data()
	for i := 0; i < queued100; i++ {
		require.Equal(t, int64(100), call(t, k, 0, Write, sockA, base, 100))
	}
	call(t, k, 1, Write, sockA, base, 60000) // full: task 0 waits
	call(t, k, 2, Write, sockA, base, 100)   // and task 1
	left := queued100 - wakeAt100
	require.Equal(t, int64(100*left), call(t, k, 2, Read, sockB, base+0x8000, uint64(100*left)), "down to a quarter: both woken")
	assert.Equal(t, Runnable, k.Task(1).State)
	ringRoom := int64(65536 - 100*wakeAt100)
	require.Equal(t, ringRoom, call(t, k, 0, SchedYield), "task 0's write: what the ring takes")
	call(t, k, 2, SchedYield) // task 1's retried write finds the ring full: it waits again
	assert.Equal(t, Task{Proc: p, State: Blocked, Wait: WaitWrite, Pipe: 1, IP: 0x2000 + 2}, k.Task(1))
}
