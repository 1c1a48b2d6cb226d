package taskscenario

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scenarios is the table both kernels run.
var Scenarios = []Scenario{
	{"Lseek", lseek},
	{"PingPong/processes", func(t *testing.T, k Kernel) { pingPong(t, k, false) }},
	{"PingPong/threads", func(t *testing.T, k Kernel) { pingPong(t, k, true) }},
	{"WakeOrderAndFullPipe", wakeOrderAndFullPipe},
	{"ReadersWakeInOrder", readersWakeInOrder},
	{"EndOfPipe", endOfPipe},
	{"ShareFDThreadsAndExitStatus", shareFDThreadsAndExitStatus},
	{"ExitStatusOfTheRun", exitStatusOfTheRun},
	{"WokenTaskChecksBeforeSwitch", wokenTaskChecksBeforeSwitch},
	{"ZeroByteWriteWithoutReaders", zeroByteWriteWithoutReaders},
	{"FaultingReadLeavesThePipe", faultingReadLeavesThePipe},
	{"FileDescriptors", fileDescriptors},
}

// PipeErrors are calls that fail (or do nothing) without blocking, each
// from a task of a process whose pipe 0 has its read end at descriptor 0
// and its write end at 1; Run runs each as its own scenario, pipeError.
var PipeErrors = []struct {
	Name string
	Call Call
	Args func(k Kernel) []uint64
	Want int64
}{
	{"read from the write end", Read, func(k Kernel) []uint64 { return []uint64{1, k.Data(), 1} }, eBADF},
	{"write to the read end", Write, func(k Kernel) []uint64 { return []uint64{0, k.Data(), 1} }, eBADF},
	{"read a closed descriptor", Read, func(k Kernel) []uint64 { return []uint64{5, k.Data(), 1} }, eBADF},
	{"descriptor out of range", Write, func(k Kernel) []uint64 { return []uint64{1<<40 | 1<<31, k.Data(), 1} }, eBADF},
	{"buffer in the kernel's half", Write, func(k Kernel) []uint64 { return badWrite(k, InKernel) }, eFAULT},
	{"buffer below the tasks' slot", Write, func(k Kernel) []uint64 { return badWrite(k, BelowUser) }, eFAULT},
	{"buffer running past the slot", Write, func(k Kernel) []uint64 { return badWrite(k, PastEnd) }, eFAULT},
	{"zero-byte write", Write, func(k Kernel) []uint64 { return []uint64{1, 0, 0} }, 0},
	{"zero-byte read", Read, func(k Kernel) []uint64 { return []uint64{0, 0, 0} }, 0},
	{"close twice", Close, func(k Kernel) []uint64 { return []uint64{9} }, eBADF},
	{"an unknown call", Unknown, func(k Kernel) []uint64 { return nil }, eNOSYS},
}

func badWrite(k Kernel, b Buffer) []uint64 {
	addr, n := k.Bad(b)
	return []uint64{1, addr, n}
}

// pipeError runs PipeErrors[i].
func pipeError(t *testing.T, k Kernel, i int) {
	tc := PipeErrors[i]
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewPipe(p, 0, p, 1))
	k.NewTask(p, entryIP)
	assert.Equal(t, tc.Want, call(t, k, 0, tc.Call, tc.Args(k)...), "no block")
}

func lseek(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	k.NewTask(p, entryIP)
	require.True(t, k.OpenFile(p, fileFD, 1000))
	seek := func(off int64, whence uint64) int64 {
		return call(t, k, 0, Lseek, fileFD, neg(off), whence)
	}
	assert.Equal(t, int64(100), seek(100, SeekSet))
	assert.Equal(t, int64(150), seek(50, SeekCur))
	assert.Equal(t, int64(140), seek(-10, SeekCur))
	assert.Equal(t, int64(1000), seek(0, SeekEnd))
	assert.Equal(t, int64(1200), seek(200, SeekEnd), "past the end is allowed")
	assert.Equal(t, int64(0), seek(0, SeekSet))
	assert.Equal(t, int64(eINVAL), seek(-1, SeekSet), "a negative position")
	assert.Equal(t, int64(eINVAL), seek(0, 3), "an unknown whence")
	assert.Equal(t, int64(0), seek(0, SeekCur), "a failed call leaves the position")
	// A quarter of the ABI's range, twice, passes the largest position
	// (off_t: 2^63-1 on x86-64, 2^31-1 on i386).
	quarter := int64(1) << (k.Width() - 2)
	assert.Equal(t, quarter, seek(quarter, SeekSet))
	assert.Equal(t, int64(eINVAL), seek(quarter, SeekCur), "the position would overflow")
	assert.Equal(t, quarter, seek(0, SeekCur))
	assert.Equal(t, int64(eBADF), call(t, k, 0, Lseek, 2, 0, 0), "stderr is not open here")
	assert.Equal(t, int64(eBADF), call(t, k, 0, Lseek, fileFD+1, 0, 0), "not open")
	assert.Equal(t, int64(eNOSYS), call(t, k, 0, Unknown))
	require.GreaterOrEqual(t, k.NewPipe(p, 0, p, 1), 0)
	assert.Equal(t, int64(eSPIPE), call(t, k, 0, Lseek, 0, 0, 0), "a pipe has no position")
}

// pingPong sets up two tasks joined by two pipes, as the ping-pong
// benchmark does: task 0 writes to fd 1 and reads fd 2, task 1 reads fd 0
// and writes fd 3. With threads both are in one process.
func pingPong(t *testing.T, k Kernel, threads bool) {
	p0 := k.NewProcess(0x1000, nfds)
	p1 := p0
	if !threads {
		p1 = k.NewProcess(0x3000, nfds)
	}
	require.GreaterOrEqual(t, k.NewPipe(p1, 0, p0, 1), 0)
	require.GreaterOrEqual(t, k.NewPipe(p0, 2, p1, 3), 0)
	k.NewTask(p0, 0x10000)
	k.NewTask(p1, 0x20000)
	bufA, bufB := k.Data(), k.Data()+0x100
	ping, pong := k.Mem(p0), k.Mem(p1)
	const rounds = 5
	for i := 0; i < rounds; i++ {
		ping[0] = byte('a' + i)
		require.Equal(t, int64(1), call(t, k, 0, Write, 1, bufA, 1), "the write does not block")
		r := call(t, k, 1, Read, 2, bufA+1, 1)
		if i == 0 {
			// ping blocks, pong starts at its entry: it makes its first
			// read, and data is there: no block.
			require.Equal(t, int64(1), call(t, k, 1, Read, 0, bufB, 1))
		} else {
			require.Equal(t, int64(1), r, "ping blocks, pong's retried read completes")
		}
		require.Equal(t, byte('a'+i), pong[0x100])
		require.Equal(t, int64(1), call(t, k, 1, Write, 3, bufB, 1))
		require.Equal(t, int64(1), call(t, k, 0, Read, 0, bufB, 1), "pong blocks: ping's read completes")
		require.Equal(t, byte('a'+i), ping[1])
	}
	require.Zero(t, call(t, k, 0, Close, 1))
	assert.Zero(t, call(t, k, 1, Exit, 0), "pong's read sees the end")
	running, _ := k.Call(Exit, 0)
	require.Equal(t, -1, running)
	require.NotNil(t, k.Ended())
	assert.Equal(t, End{EndExit, 0}, *k.Ended())

	w, rd := k.PipeBytes(0)
	assert.Equal(t, uint64(rounds), w)
	assert.Equal(t, uint64(rounds), rd)
	// Two switches per round trip, one at the close and one at the exit;
	// process mode loads CR3 at every one.
	assert.Equal(t, uint64(2*rounds+1), k.Switches())
	if threads {
		assert.Empty(t, k.CR3s())
	} else {
		assert.Len(t, k.CR3s(), int(k.Switches()))
		assert.Equal(t, []uint64{0x3000, 0x1000, 0x3000}, k.CR3s()[:3])
	}
}

func wakeOrderAndFullPipe(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewPipe(p, 0, p, 1))
	k.NewTask(p, 0x1000)
	k.NewTask(p, 0x2000)
	k.NewTask(p, 0x3000)
	ring := k.RingSize()
	mem, base := k.Mem(p), k.Data()
	dst := ring + 0x800 // where the reads land
	for i := range mem[:dst+ring] {
		mem[i] = byte(i)
		if i >= dst {
			mem[i] = 0xee
		}
	}
	// Task 0 fills the pipe, then blocks on one more write.
	require.Equal(t, int64(ring), call(t, k, 0, Write, 1, base, uint64(ring)))
	call(t, k, 1, Write, 1, base, 10)
	call(t, k, 2, Write, 1, base, 1) // a second writer blocks
	require.Equal(t, 3, k.Tasks())
	assert.Equal(t, Task{Proc: p, State: Blocked, Wait: WaitWrite, Pipe: 0, IP: 0x1000 + 4}, k.Task(0))
	assert.Equal(t, WaitWrite, k.Task(1).Wait)
	assert.Equal(t, Running, k.Task(2).State)

	// Reading 5 bytes wakes both writers in task order; task 0 needs 10
	// bytes of room and blocks again, task 1 writes its byte.
	require.Equal(t, int64(5), call(t, k, 2, Read, 0, base+uint64(dst), 5))
	assert.Equal(t, mem[:5], mem[dst:dst+5], "the bytes come out in order")
	require.Equal(t, int64(1), call(t, k, 1, SchedYield), "task 0 retried and blocked again; task 1 wrote")
	assert.Equal(t, Blocked, k.Task(0).State)
	require.Zero(t, call(t, k, 2, SchedYield), "sched_yield returns 0")
	require.Equal(t, int64(ring-4), call(t, k, 2, Read, 0, base+uint64(dst), uint64(ring)), "what is there")
	assert.Equal(t, mem[5:ring], mem[dst:dst+ring-5], "the ring's end")
	assert.Equal(t, mem[0], mem[dst+ring-5], "task 1's byte, past the wrap")
	call(t, k, 1, SchedYield)
	require.Equal(t, int64(10), call(t, k, 0, SchedYield), "task 0's write fits now")
	w, rd := k.PipeBytes(0)
	assert.Equal(t, uint64(ring+11), w)
	assert.Equal(t, uint64(ring+1), rd)
}

// Readers blocked on an empty pipe wake in the order they blocked; the
// first takes the byte, the second finds the pipe empty again and goes
// back to waiting without running.
func readersWakeInOrder(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewPipe(p, 0, p, 1))
	for i := 0; i < 3; i++ {
		k.NewTask(p, uint64(0x1000*(i+1)))
	}
	base, mem := k.Data(), k.Mem(p)
	call(t, k, 1, Read, 0, base+0x10, 1) // empty: task 0 blocks
	call(t, k, 2, Read, 0, base+0x11, 1) // task 1 blocks behind it
	mem[0] = 'x'
	require.Equal(t, int64(1), call(t, k, 2, Write, 1, base, 1), "the write wakes both readers")
	assert.Equal(t, Runnable, k.Task(0).State)
	assert.Equal(t, Runnable, k.Task(1).State)
	require.Equal(t, int64(1), call(t, k, 0, SchedYield), "task 0's read is retried first and gets the byte")
	assert.Equal(t, byte('x'), mem[0x10])
	call(t, k, 2, SchedYield) // task 1 finds nothing: it waits again, task 2 runs
	assert.Equal(t, Task{Proc: p, State: Blocked, Wait: WaitRead, Pipe: 0, IP: 0x2000 + 2}, k.Task(1))
	mem[1] = 'y'
	require.Equal(t, int64(1), call(t, k, 2, Write, 1, base+1, 1), "the write wakes task 1")
	require.Zero(t, call(t, k, 0, Exit, 0), "task 0, queued first, returns from its sched_yield")
	require.Equal(t, int64(1), call(t, k, 1, Exit, 0), "task 1's read completes")
	assert.Equal(t, byte('y'), mem[0x11])
	w, rd := k.PipeBytes(0)
	assert.Equal(t, [2]uint64{2, 2}, [2]uint64{w, rd})
}

func endOfPipe(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewPipe(p, 0, p, 1))
	k.NewTask(p, 0x1000)
	k.NewTask(p, 0x2000)
	buf := k.Data()
	call(t, k, 1, Read, 0, buf, 1) // empty: the reader blocks
	require.Zero(t, call(t, k, 1, Close, 1))
	require.Zero(t, call(t, k, 0, SchedYield), "end of file once the last writer closed")
	require.Equal(t, int64(eBADF), call(t, k, 0, Write, 1, buf, 1), "the descriptor is closed")
	require.Equal(t, 1, k.NewPipe(p, 2, p, 3))
	require.Zero(t, call(t, k, 0, Close, 2))
	require.Equal(t, int64(ePIPE), call(t, k, 0, Write, 3, buf, 1), "no reader left")
}

func shareFDThreadsAndExitStatus(t *testing.T, k Kernel) {
	p, q := k.NewProcess(0x1000, nfds), k.NewProcess(0x2000, nfds)
	require.Equal(t, 0, k.NewPipe(q, 0, p, 1))
	require.True(t, k.ShareFD(p, q, 1), "the write end in both, as after fork")
	require.False(t, k.ShareFD(p, q, 1), "taken")
	k.NewTask(p, 0x1000)
	k.NewTask(q, 0x2000)
	call(t, k, 0, Close, 1)
	call(t, k, 1, Exit, 7)
	running, _ := k.Call(Read, 0, k.Data(), 1)
	require.Equal(t, -1, running, "q still holds a write end: a read would wait forever")
	require.NotNil(t, k.Ended())
	assert.Equal(t, EndDeadlock, k.Ended().Reason)
	require.Equal(t, 2, k.Tasks())
	assert.Equal(t, Task{Proc: p, State: Exited, IP: 0x1000 + 4, Status: 7}, k.Task(0))
	assert.Equal(t, Task{Proc: q, State: Blocked, Wait: WaitRead, Pipe: 0, IP: 0x2000 + 2}, k.Task(1))
}

func exitStatusOfTheRun(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	k.NewTask(p, 0x1000)
	k.NewTask(p, 0x2000)
	k.NewTask(p, 0x3000)
	call(t, k, 1, Exit, 0)
	call(t, k, 2, Exit, 3)
	k.Call(Exit, 4)
	require.NotNil(t, k.Ended())
	assert.Equal(t, End{EndExit, 3}, *k.Ended(), "the first nonzero status")
}

// A woken writer whose room was not freed goes back to waiting before its
// address space is loaded: no CR3 load, no switch.
func wokenTaskChecksBeforeSwitch(t *testing.T, k Kernel) {
	pr, pw := k.NewProcess(0x1000, nfds), k.NewProcess(0x2000, nfds)
	require.Equal(t, 0, k.NewPipe(pr, 0, pw, 1))
	k.NewTask(pr, 0x1000)
	k.NewTask(pw, 0x2000)
	ring, base := k.RingSize(), k.Data()
	call(t, k, 1, SchedYield)
	require.Equal(t, int64(ring-50), call(t, k, 1, Write, 1, base, uint64(ring-50)))
	call(t, k, 0, Write, 1, base, 100) // no room for 100 bytes: the reader runs
	loads, switches := len(k.CR3s()), k.Switches()
	require.Equal(t, int64(10), call(t, k, 0, Read, 0, base+0x1000, 10))
	call(t, k, 0, SchedYield) // the writer was woken but 60 bytes are not enough
	assert.Equal(t, loads, len(k.CR3s()), "no CR3 load for it")
	assert.Equal(t, switches, k.Switches())
	require.Equal(t, int64(100), call(t, k, 0, Read, 0, base+0x1000, 100))
	assert.Equal(t, int64(100), call(t, k, 1, SchedYield), "160 bytes of room: the write goes ahead")
	assert.Equal(t, loads+1, len(k.CR3s()))
}

func zeroByteWriteWithoutReaders(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewPipe(p, 0, p, 1))
	k.NewTask(p, 0x1000)
	require.Zero(t, call(t, k, 0, Close, 0))
	assert.Zero(t, call(t, k, 0, Write, 1, 0, 0), "as Linux: a write of nothing succeeds before the readers are checked")
	assert.Equal(t, int64(ePIPE), call(t, k, 0, Write, 1, k.Data(), 1))
}

// A read into a bad buffer fails with EFAULT and leaves the bytes in the
// pipe. The kernels check the bytes a read would copy: with 0x20 bytes in
// the pipe, all of each bad buffer's.
func faultingReadLeavesThePipe(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	require.Equal(t, 0, k.NewPipe(p, 0, p, 1))
	k.NewTask(p, 0x1000)
	mem, base := k.Mem(p), k.Data()
	copy(mem, "ab")
	require.Equal(t, int64(0x20), call(t, k, 0, Write, 1, base, 0x20))
	for _, b := range []Buffer{InKernel, BelowUser, PastEnd} {
		addr, n := k.Bad(b)
		require.LessOrEqual(t, n, uint64(0x20))
		assert.Equal(t, int64(eFAULT), call(t, k, 0, Read, 0, addr, n), "buffer %d", b)
	}
	_, rd := k.PipeBytes(0)
	assert.Zero(t, rd, "nothing was taken")
	require.Equal(t, int64(0x20), call(t, k, 0, Read, 0, base+0x100, 0x20))
	assert.Equal(t, "ab", string(mem[0x100:0x102]))
}

// Files have a position and no contents here: read and write fail with
// EBADF, close works once.
func fileDescriptors(t *testing.T, k Kernel) {
	p := k.NewProcess(0, nfds)
	k.NewTask(p, 0x1000)
	require.True(t, k.OpenFile(p, fileFD, 10))
	buf := k.Data()
	for _, c := range []Call{Read, Write} {
		assert.Equal(t, int64(eBADF), call(t, k, 0, c, fileFD, buf, 1), fmt.Sprint("call ", c))
	}
	assert.Equal(t, int64(10), call(t, k, 0, Lseek, fileFD, 0, SeekEnd))
	assert.Zero(t, call(t, k, 0, Close, fileFD))
	assert.Equal(t, int64(eBADF), call(t, k, 0, Close, fileFD))
	assert.Equal(t, int64(eBADF), call(t, k, 0, Lseek, fileFD, 0, SeekSet))
}
