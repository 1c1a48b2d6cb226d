package core

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/linuxabi"
)

// The core on the host: its queues, its scheduler's decisions and its
// rings, with host memory for the rings and the user's buffers; with Go's
// copy (mem_amd64.go) and, under GOARCH=386 (go test -exec test/run386),
// the blob's (mem_386.s). The two kernels' shared scenarios
// (testkit/taskscenario) test it through their system calls.

// addr returns the address of b's first byte.
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// newKernel returns a reset kernel with n tasks, task 0 running.
func newKernel(t *testing.T, n int) *Kernel {
	k := new(Kernel)
	k.Reset()
	for i := 0; i < n; i++ {
		k.AddTask(uint32(i))
	}
	require.Equal(t, uint32(n), k.Live)
	return k
}

// runQueue lists the run queue.
func (k *Kernel) runQueue() []uint32 {
	var q []uint32
	for i := k.Run.Head; i != NoTask; i = k.Tasks[i].Next {
		q = append(q, i)
	}
	return q
}

func TestQueuesAndNext(t *testing.T) {
	k := newKernel(t, 4)
	assert.Equal(t, uint32(0), k.Cur)
	assert.Equal(t, uint32(TaskRunning), k.Tasks[0].State)
	assert.Equal(t, []uint32{1, 2, 3}, k.runQueue(), "the others queued in order")

	// Task 0 reads an empty pipe: it waits; 1, 2 and 3 run in turn.
	k.OpenPipe(0)
	ring, buf := make([]byte, RingSize), make([]byte, 16)
	assert.Zero(t, k.Read(0, addr(ring), addr(buf), 16, 16))
	assert.False(t, k.Running())
	assert.Equal(t, uint32(TaskBlocked), k.Tasks[0].State)
	assert.Equal(t, Queue{0, 0}, k.Pipes[0].ReadQ)
	i := k.Next()
	assert.Equal(t, uint32(1), i)
	assert.False(t, k.Resume(i), "a task that yielded has no call to retry")
	assert.Equal(t, uint32(1), k.Cur)

	// Task 1 blocks too, behind 0; a write wakes both, in the order they
	// blocked, after those already queued.
	assert.Zero(t, k.Read(0, addr(ring), addr(buf), 16, 16))
	assert.Equal(t, []uint32{2, 3}, k.runQueue())
	assert.Equal(t, Queue{0, 1}, k.Pipes[0].ReadQ)
	k.Resume(k.Next()) // task 2
	assert.Equal(t, int32(1), k.PipeWrite(0, addr(ring), addr([]byte("x")), 1, 1))
	assert.Equal(t, []uint32{3, 0, 1}, k.runQueue())
	assert.Equal(t, Queue{NoTask, NoTask}, k.Pipes[0].ReadQ)

	// Task 2 yields; 3 runs; 0 retries its read and takes the byte; 1,
	// woken for the same byte, waits again (Next skips it).
	k.Yield()
	assert.Equal(t, uint32(3), k.Next())
	k.Resume(3)
	k.Yield()
	i = k.Next()
	require.Equal(t, uint32(0), i)
	require.True(t, k.Resume(i), "task 0 retries its read")
	assert.Equal(t, int32(1), k.Read(0, addr(ring), addr(buf), 16, 16))
	assert.Equal(t, byte('x'), buf[0])
	k.Yield()
	assert.Equal(t, uint32(2), k.Next(), "task 1 waits again: the pipe is empty")
	assert.Equal(t, uint32(TaskBlocked), k.Tasks[1].State)
	assert.Equal(t, Queue{1, 1}, k.Pipes[0].ReadQ)
}

func TestExitAndDeadlock(t *testing.T) {
	k := newKernel(t, 2)
	assert.False(t, k.Exit(0))
	k.Resume(k.Next())
	k.OpenPipe(0)
	assert.Zero(t, k.Read(0, 0, 0, 0, 1), "task 1 waits on a pipe nobody writes to")
	assert.Equal(t, uint32(NoTask), k.Next(), "a deadlock: a task is live, none runnable")
	assert.Equal(t, uint32(1), k.Live)

	k = newKernel(t, 2)
	assert.False(t, k.Exit(3))
	k.Resume(k.Next())
	assert.True(t, k.Exit(5), "the last task")
	assert.Equal(t, uint32(3), k.Status, "the first nonzero status")
	assert.Equal(t, uint32(5), k.Tasks[1].Status)
	assert.Equal(t, uint32(NoTask), k.Next())
	assert.Zero(t, k.Live)
}

func TestPipeRing(t *testing.T) {
	k := newKernel(t, 1)
	k.OpenPipe(0)
	ring := make([]byte, RingSize)
	src, dst := make([]byte, RingSize), make([]byte, RingSize)
	for i := range src {
		src[i] = byte(i * 7)
	}
	assert.Zero(t, k.PipeWrite(0, addr(ring), addr(src), RingSize, 0), "0 bytes")
	assert.Equal(t, int32(RingSize-10), k.PipeWrite(0, addr(ring), addr(src), RingSize, RingSize-10))
	assert.Equal(t, int32(RingSize-20), k.Read(0, addr(ring), addr(dst), RingSize, RingSize-20))
	// 40 bytes across the ring's end: 10 at its end, 30 at its start.
	assert.Equal(t, int32(40), k.PipeWrite(0, addr(ring), addr(src[100:]), RingSize, 40))
	assert.Equal(t, src[110:140], ring[:30], "the write wrapped")
	assert.Equal(t, int32(50), k.Read(0, addr(ring), addr(dst), RingSize, 100))
	assert.Equal(t, src[RingSize-20:RingSize-10], dst[:10])
	assert.Equal(t, src[100:140], dst[10:50], "the read wrapped")
	assert.Equal(t, [2]uint32{RingSize + 30, RingSize + 30}, [2]uint32{k.Pipes[0].WPos, k.Pipes[0].RPos})

	// Room: a copy past the user's memory is EFAULT, and nothing moves.
	assert.Equal(t, int32(-linuxabi.EFAULT), k.PipeWrite(0, addr(ring), addr(src), 3, 4))
	assert.Equal(t, int32(3), k.PipeWrite(0, addr(ring), addr(src), 3, 3))
	assert.Equal(t, int32(-linuxabi.EFAULT), k.Read(0, addr(ring), addr(dst), 2, 3))
	assert.Equal(t, int32(3), k.Read(0, addr(ring), addr(dst), 3, 3))

	// The end of the pipe: EOF for the reader once the writer is gone,
	// EPIPE for a writer without readers.
	k.CloseWrite(0)
	assert.Zero(t, k.Read(0, addr(ring), addr(dst), RingSize, 1))
	assert.True(t, k.Running(), "end of file: no wait")
	k.CloseRead(0)
	assert.Equal(t, int32(-linuxabi.EPIPE), k.PipeWrite(0, addr(ring), addr(src), RingSize, 1))
}

func TestPipeBuf(t *testing.T) {
	k := newKernel(t, 2)
	k.OpenPipe(0)
	ring, src := make([]byte, RingSize), make([]byte, RingSize)
	require.Equal(t, int32(RingSize-PipeBuf+2), k.PipeWrite(0, addr(ring), addr(src), RingSize, RingSize-PipeBuf+2))
	// PipeBuf bytes do not fit whole: the writer waits, needing them all.
	assert.Zero(t, k.PipeWrite(0, addr(ring), addr(src), RingSize, PipeBuf))
	assert.Equal(t, uint32(PipeBuf), k.Tasks[0].Need)
	assert.Equal(t, uint32(WaitWrite), k.Tasks[0].Wait)
	k.Resume(k.Next())
	// A read of one byte wakes it, but the room is not enough yet.
	assert.Equal(t, int32(1), k.Read(0, addr(ring), addr(src), RingSize, 1))
	k.Yield()
	assert.Equal(t, uint32(1), k.Next(), "task 0 waits again")
	k.Resume(1)
	assert.Equal(t, int32(1), k.Read(0, addr(ring), addr(src), RingSize, 1))
	k.Yield()
	assert.Equal(t, uint32(0), k.Next(), "now PipeBuf bytes fit")
	// A longer write goes ahead with one byte of room, and writes what
	// fits.
	k.Resume(0)
	assert.Equal(t, int32(PipeBuf), k.PipeWrite(0, addr(ring), addr(src), RingSize, PipeBuf))
	assert.Equal(t, int32(1), k.Read(0, addr(ring), addr(src), RingSize, 1))
	assert.Equal(t, int32(1), k.PipeWrite(0, addr(ring), addr(src), RingSize, PipeBuf+1))
}

func TestSkbTruesize(t *testing.T) {
	for n, want := range map[uint32]uint32{
		1:    512 + 256,        // the smallest kmalloc class
		192:  512 + 256,        // 192+320 fits 512
		193:  1024 + 256,       // 256+320 does not
		3776: 4096 + 256,       // SKBMaxHead: the head fills a page
		3777: 512 + 256 + 3777, // all in a page fragment
		8192: 512 + 256 + 8192,
	} {
		assert.Equal(t, want, skbTruesize(n), "%d bytes", n)
	}
}

func TestSocketAccounting(t *testing.T) {
	k := newKernel(t, 2)
	k.OpenPair(0)
	ring, src := make([]byte, RingSize), make([]byte, RingSize)
	// Task 0 writes 100-byte messages into channel 1 until the charge
	// reaches sk_sndbuf: a skb each, 768 bytes of truesize.
	n := 0
	for ; k.Socks[1].WMem < linuxabi.UnixSndbuf; n++ {
		require.Equal(t, int32(100), k.SockWrite(1, addr(ring), addr(src), RingSize, 100))
	}
	assert.Equal(t, (linuxabi.UnixSndbuf+767)/768, n)
	assert.Equal(t, uint32(n), k.Socks[1].N)
	assert.Zero(t, k.SockWrite(1, addr(ring), addr(src), RingSize, 100), "the next waits")
	assert.Equal(t, uint32(WaitSockWrite), k.Tasks[0].Wait)
	assert.Equal(t, Queue{0, 0}, k.Pipes[1].WriteQ)
	k.Resume(k.Next())
	// Reads free whole skbs only; the writer is woken when the charge is
	// down to a quarter of sk_sndbuf.
	assert.Equal(t, int32(150), k.Read(1, addr(ring), addr(src), RingSize, 150))
	assert.Equal(t, uint32(n-1), k.Socks[1].N, "one skb and half of the next")
	assert.Equal(t, uint32(50), k.Socks[1].Used)
	for k.Socks[1].WMem<<2 > linuxabi.UnixSndbuf {
		assert.Equal(t, Queue{0, 0}, k.Pipes[1].WriteQ, "not yet")
		require.Equal(t, int32(50), k.Read(1, addr(ring), addr(src), RingSize, 50))
	}
	assert.Equal(t, Queue{NoTask, NoTask}, k.Pipes[1].WriteQ, "woken")
	assert.Equal(t, []uint32{0}, k.runQueue())

	// A write of more than SKBMaxData bytes makes more skbs; a bad buffer
	// after the first gives the short count.
	k = newKernel(t, 1)
	k.OpenPair(0)
	assert.Equal(t, int32(linuxabi.SKBMaxData), k.SockWrite(0, addr(ring), addr(src), linuxabi.SKBMaxData, 2*linuxabi.SKBMaxData))
	assert.Equal(t, int32(-linuxabi.EFAULT), k.SockWrite(0, addr(ring), addr(src), 0, 1))
	// Closing an endpoint ends both its streams.
	k.CloseSocket(1) // reads 1, writes 0
	assert.Equal(t, int32(-linuxabi.EPIPE), k.SockWrite(1, addr(ring), addr(src), RingSize, 1))
	assert.Equal(t, int32(linuxabi.SKBMaxData), k.Read(0, addr(ring), addr(src), RingSize, RingSize))
	assert.Zero(t, k.Read(0, addr(ring), addr(src), RingSize, 1), "end of file")
	assert.True(t, k.Running())
}
