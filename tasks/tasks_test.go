package tasks

import (
	"fmt"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/internal/linuxabi"
	"github.com/ptilab/ptilab/pti"
)

// The host tests drive the kernel as the trampoline does: the running
// task's pt_regs frame, a system call through Syscall, its result stored
// in the frame's RAX. CR3 writes are recorded and the end of a run is a
// panic the test recovers.

// runEnd is how a run ended: exitRun's arguments.
type runEnd struct{ reason, status uint64 }

// machine is one host-side run.
type machine struct {
	t     *testing.T
	regs  PtRegs   // the frame on the kernel stack: the running task's registers
	cr3s  []uint64 // CR3 values the context switch loaded
	ended *runEnd
}

func newMachine(t *testing.T) *machine {
	m := &machine{t: t}
	Reset(true)
	oldCR3, oldExit := setCR3, exitRun
	setCR3 = func(v uint64) { m.cr3s = append(m.cr3s, v) }
	exitRun = func(reason, status uint64) { panic(runEnd{reason, status}) }
	t.Cleanup(func() { setCR3, exitRun = oldCR3, oldExit; Reset(true) })
	return m
}

// task makes a task of proc and, for task 0, loads its registers into the
// frame, as pti.Start does.
func (m *machine) task(proc int, rip uint64, args ...uint64) int {
	var a [6]uint64
	copy(a[:], args)
	i := NewTask(proc, rip, 0x7f8000100000-uint64(ntasks)*512, a)
	require.GreaterOrEqual(m.t, i, 0)
	if i == 0 {
		m.regs = tasks[0].regs
	}
	return i
}

// call makes system call nr from the running task, and returns the task
// now running and its RAX. After the run ended, it returns -1.
func (m *machine) call(nr uint64, args ...uint64) (running int, ax int64) {
	require.Nil(m.t, m.ended, "the run has ended")
	var a [6]uint64
	copy(a[:], args)
	m.regs.OrigAX, m.regs.DI, m.regs.SI, m.regs.DX, m.regs.R10, m.regs.R8, m.regs.R9 = nr, a[0], a[1], a[2], a[3], a[4], a[5]
	m.regs.AX = uint64(-linuxabi.ENOSYS & (1<<64 - 1))
	m.regs.IP += 2 // past the SYSCALL
	m.regs.CX = m.regs.IP
	defer func() {
		if e := recover(); e != nil {
			end, ok := e.(runEnd)
			if !ok {
				panic(e)
			}
			m.ended, running = &end, -1
		}
	}()
	r := Syscall(&m.regs, nr, a[0], a[1], a[2], a[3], a[4], a[5])
	m.regs.AX = uint64(r)
	return int(cur), r
}

// userMem maps n bytes at va, in the tasks' slot of the address space.
func userMem(t *testing.T, va uintptr, n int) []byte {
	const mapFixedNoReplace = 0x100000
	p, _, errno := syscall.Syscall6(syscall.SYS_MMAP, va, uintptr(n), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|mapFixedNoReplace, ^uintptr(0), 0)
	require.Zero(t, errno, "mmap at %#x", va)
	require.Equal(t, va, p)
	t.Cleanup(func() { syscall.Syscall(syscall.SYS_MUNMAP, va, uintptr(n), 0) })
	return unsafe.Slice((*byte)(pointer(uint64(p))), n) // a fixed mapping outside Go's heap
}

// nfds is the descriptors of the tests' processes.
const nfds = 16

// ringSize is the capacity of the tests' pipes.
const ringSize = 4096

// rings keeps the tests' pipe rings alive: the kernel holds their
// addresses only.
var rings [][]byte

func ring() []byte {
	r := make([]byte, ringSize)
	rings = append(rings, r)
	return r
}

const (
	memBase = 0x7f8000010000 // pti.UserData
	bufA    = memBase
	bufB    = memBase + 0x100
)

func TestLseek(t *testing.T) {
	m := newMachine(t)
	p := NewProcess(0, nfds)
	m.task(p, 0x1000)
	fd := OpenFile(p, 1000)
	require.Equal(t, firstFD, fd)
	lseek := func(off int64, whence uint64) int64 {
		_, r := m.call(SysLseek, uint64(fd), uint64(off), whence)
		return r
	}
	assert.Equal(t, int64(100), lseek(100, SEEK_SET))
	assert.Equal(t, int64(150), lseek(50, SEEK_CUR))
	assert.Equal(t, int64(140), lseek(-10, SEEK_CUR))
	assert.Equal(t, int64(1000), lseek(0, SEEK_END))
	assert.Equal(t, int64(1200), lseek(200, SEEK_END), "past the end is allowed")
	assert.Equal(t, int64(0), lseek(0, SEEK_SET))
	assert.Equal(t, int64(-linuxabi.EINVAL), lseek(-1, SEEK_SET), "a negative position")
	assert.Equal(t, int64(-linuxabi.EINVAL), lseek(0, 3), "an unknown whence")
	assert.Equal(t, int64(0), lseek(0, SEEK_CUR), "a failed call leaves the position")
	assert.Equal(t, int64(1<<62), lseek(1<<62, SEEK_SET))
	assert.Equal(t, int64(-linuxabi.EINVAL), lseek(1<<62, SEEK_CUR), "the position would overflow")
	assert.Equal(t, int64(1<<62), lseek(0, SEEK_CUR))
	_, r := m.call(SysLseek, 2, 0, 0)
	assert.Equal(t, int64(-linuxabi.EBADF), r, "stderr is not open here")
	_, r = m.call(SysLseek, uint64(fd+1), 0, 0)
	assert.Equal(t, int64(-linuxabi.EBADF), r, "not open")
	_, r = m.call(999)
	assert.Equal(t, int64(-linuxabi.ENOSYS), r)
	require.True(t, NewPipe(p, 0, p, 1, ring()) >= 0)
	_, r = m.call(SysLseek, 0, 0, 0)
	assert.Equal(t, int64(-linuxabi.ESPIPE), r, "a pipe has no position")
}

func TestOpenFileExhausted(t *testing.T) {
	newMachine(t)
	p, q := NewProcess(0, nfds), NewProcess(0, nfds)
	for fd := firstFD; fd < nfds; fd++ {
		assert.Equal(t, fd, OpenFile(p, 0))
	}
	assert.Equal(t, -1, OpenFile(p, 0), "no descriptor left")
	for i := nfds - firstFD; i < maxFiles; i++ {
		assert.Equal(t, firstFD+i-(nfds-firstFD), OpenFile(q, 0))
	}
	assert.Equal(t, -1, OpenFile(q, 0), "no file left")
}

// pingPong sets up two tasks joined by two pipes, as the ping-pong
// benchmark does: task 0 writes to fd 1 and reads fd 2, task 1 reads fd 0
// and writes fd 3. With threads both are in one process.
func pingPong(t *testing.T, m *machine, threads bool) (p0, p1 int) {
	p0 = NewProcess(0x1000, nfds)
	p1 = p0
	if !threads {
		p1 = NewProcess(0x3000, nfds)
	}
	require.GreaterOrEqual(t, NewPipe(p1, 0, p0, 1, ring()), 0)
	require.GreaterOrEqual(t, NewPipe(p0, 2, p1, 3, ring()), 0)
	m.task(p0, 0x10000)
	m.task(p1, 0x20000)
	return p0, p1
}

func TestPingPong(t *testing.T) {
	mem := userMem(t, memBase, 4096)
	for _, threads := range []bool{false, true} {
		t.Run(fmt.Sprint("threads=", threads), func(t *testing.T) {
			m := newMachine(t)
			pingPong(t, m, threads)
			const rounds = 5
			for i := 0; i < rounds; i++ {
				mem[0] = byte('a' + i)
				running, r := m.call(SysWrite, 1, bufA, 1)
				require.Equal(t, 0, running, "the write does not block")
				require.Equal(t, int64(1), r)
				running, r = m.call(SysRead, 2, bufA+1, 1)
				if i == 0 {
					require.Equal(t, 1, running, "ping blocks, pong starts")
				} else {
					require.Equal(t, 1, running, "ping blocks, pong's read completes")
					require.Equal(t, int64(1), r, "pong's retried read")
				}
				if i == 0 {
					// pong starts at its entry: it makes its first read.
					running, r = m.call(SysRead, 0, bufB, 1)
					require.Equal(t, 1, running, "data is there: no block")
					require.Equal(t, int64(1), r)
				}
				require.Equal(t, byte('a'+i), mem[0x100])
				running, r = m.call(SysWrite, 3, bufB, 1)
				require.Equal(t, 1, running)
				require.Equal(t, int64(1), r)
				running, r = m.call(SysRead, 0, bufB, 1) // blocks: ping's read completes
				require.Equal(t, 0, running)
				require.Equal(t, int64(1), r)
				require.Equal(t, byte('a'+i), mem[1])
			}
			running, r := m.call(SysClose, 1)
			require.Equal(t, 0, running)
			require.Zero(t, r)
			running, _ = m.call(SysExit, 0)
			require.Equal(t, 1, running, "pong's read sees the end")
			assert.Zero(t, int64(m.regs.AX))
			_, _ = m.call(SysExit, 0)
			require.NotNil(t, m.ended)
			assert.Equal(t, runEnd{pti.ReasonExit, 0}, *m.ended)

			w, rd := PipeBytes(0)
			assert.Equal(t, uint64(rounds), w)
			assert.Equal(t, uint64(rounds), rd)
			// Two switches per round trip, one at the close and one at
			// the exit; process mode loads CR3 at every one.
			assert.Equal(t, uint64(2*rounds+1), Switches)
			if threads {
				assert.Zero(t, CR3Loads)
				assert.Empty(t, m.cr3s)
			} else {
				assert.Equal(t, Switches, CR3Loads)
				assert.Equal(t, []uint64{0x3000, 0x1000, 0x3000}, m.cr3s[:3])
			}
		})
	}
}

func TestWakeOrderAndFullPipe(t *testing.T) {
	mem := userMem(t, memBase, 16384)
	m := newMachine(t)
	p := NewProcess(0, nfds)
	require.Equal(t, 0, NewPipe(p, 0, p, 1, ring()))
	m.task(p, 0x1000)
	m.task(p, 0x2000)
	m.task(p, 0x3000)
	for i := range mem {
		mem[i] = byte(i)
		if i >= 0x1800 {
			mem[i] = 0xee // where the reads land
		}
	}
	// Task 0 fills the pipe, then blocks on one more byte.
	running, r := m.call(SysWrite, 1, memBase, ringSize)
	require.Equal(t, 0, running)
	require.Equal(t, int64(ringSize), r)
	running, _ = m.call(SysWrite, 1, memBase, 10)
	require.Equal(t, 1, running, "a full pipe blocks the writer; the queue's head runs")
	running, _ = m.call(SysWrite, 1, memBase, 1)
	require.Equal(t, 2, running, "a second writer blocks")
	var ts [4]Task
	require.Equal(t, 3, Tasks(ts[:]))
	assert.Equal(t, Task{Task: 0, State: taskBlocked, Wait: waitWrite, Pipe: 0, RIP: 0x1000 + 4}, ts[0])
	assert.Equal(t, waitWrite, ts[1].Wait)
	assert.Equal(t, taskRunning, ts[2].State)

	// Reading 5 bytes wakes both writers in task order; task 0 needs 10
	// bytes of room and blocks again, task 1 writes its byte.
	running, r = m.call(SysRead, 0, memBase+0x1800, 5)
	require.Equal(t, 2, running)
	require.Equal(t, int64(5), r)
	assert.Equal(t, mem[:5], mem[0x1800:0x1805], "the bytes come out in order")
	running, r = m.call(SysSchedYield)
	require.Equal(t, 1, running, "task 0 retried and blocked again; task 1 wrote")
	require.Equal(t, int64(1), r)
	require.Equal(t, 2, Tasks(ts[:2]))
	assert.Equal(t, taskBlocked, ts[0].State)
	running, r = m.call(SysSchedYield)
	require.Equal(t, 2, running)
	require.Zero(t, r, "sched_yield returns 0")
	running, r = m.call(SysRead, 0, memBase+0x1800, ringSize)
	require.Equal(t, 2, running)
	require.Equal(t, int64(ringSize-4), r, "what is there")
	assert.Equal(t, mem[5:ringSize], mem[0x1800:0x1800+ringSize-5], "the ring's end")
	assert.Equal(t, mem[0], mem[0x1800+ringSize-5], "task 1's byte, past the wrap")
	running, r = m.call(SysSchedYield)
	require.Equal(t, 1, running)
	running, r = m.call(SysSchedYield)
	require.Equal(t, 0, running, "task 0's write fits now")
	require.Equal(t, int64(10), r)
	w, rd := PipeBytes(0)
	assert.Equal(t, uint64(ringSize+11), w)
	assert.Equal(t, uint64(ringSize+1), rd)
}

func TestPipeErrors(t *testing.T) {
	userMem(t, memBase, 4096)
	tests := []struct {
		name string
		nr   uint64
		args []uint64
		want int64
	}{
		{"read from the write end", SysRead, []uint64{1, bufA, 1}, -linuxabi.EBADF},
		{"write to the read end", SysWrite, []uint64{0, bufA, 1}, -linuxabi.EBADF},
		{"read a closed descriptor", SysRead, []uint64{5, bufA, 1}, -linuxabi.EBADF},
		{"descriptor out of range", SysWrite, []uint64{1 << 40, bufA, 1}, -linuxabi.EBADF},
		{"buffer in the kernel's half", SysWrite, []uint64{1, 0xffff800000000000, 1}, -linuxabi.EFAULT},
		{"buffer below the tasks' slot", SysWrite, []uint64{1, 0x1000, 1}, -linuxabi.EFAULT},
		{"buffer running past the slot", SysWrite, []uint64{1, 0x7ffffffffff0, 0x20}, -linuxabi.EFAULT},
		{"zero-byte write", SysWrite, []uint64{1, 0, 0}, 0},
		{"zero-byte read", SysRead, []uint64{0, 0, 0}, 0},
		{"close twice", SysClose, []uint64{9}, -linuxabi.EBADF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			p := NewProcess(0, nfds)
			require.Equal(t, 0, NewPipe(p, 0, p, 1, ring()))
			m.task(p, 0x1000)
			running, r := m.call(tc.nr, tc.args...)
			assert.Equal(t, 0, running, "no block")
			assert.Equal(t, tc.want, r)
		})
	}
}

func TestEndOfPipe(t *testing.T) {
	userMem(t, memBase, 4096)
	m := newMachine(t)
	p := NewProcess(0, nfds)
	require.Equal(t, 0, NewPipe(p, 0, p, 1, ring()))
	m.task(p, 0x1000)
	m.task(p, 0x2000)
	running, _ := m.call(SysRead, 0, bufA, 1)
	require.Equal(t, 1, running, "empty: the reader blocks")
	running, r := m.call(SysClose, 1)
	require.Equal(t, 1, running)
	require.Zero(t, r)
	running, r = m.call(SysSchedYield)
	require.Equal(t, 0, running)
	require.Zero(t, r, "end of file once the last writer closed")
	running, r = m.call(SysWrite, 1, bufA, 1)
	require.Equal(t, 0, running)
	require.Equal(t, int64(-linuxabi.EBADF), r, "the descriptor is closed")
	require.Equal(t, 1, NewPipe(p, 2, p, 3, ring()))
	running, r = m.call(SysClose, 2)
	require.Zero(t, r)
	running, r = m.call(SysWrite, 3, bufA, 1)
	require.Equal(t, int64(-linuxabi.EPIPE), r, "no reader left")
}

func TestShareFDThreadsAndExitStatus(t *testing.T) {
	userMem(t, memBase, 4096)
	m := newMachine(t)
	p, q := NewProcess(0x1000, nfds), NewProcess(0x2000, nfds)
	require.Equal(t, 0, NewPipe(q, 0, p, 1, ring()))
	require.True(t, ShareFD(p, q, 1), "the write end in both, as after fork")
	require.False(t, ShareFD(p, q, 1), "taken")
	m.task(p, 0x1000)
	m.task(q, 0x2000)
	running, _ := m.call(SysClose, 1)
	require.Equal(t, 0, running)
	running, _ = m.call(SysExit, 7)
	require.Equal(t, 1, running)
	running, _ = m.call(SysRead, 0, bufA, 1)
	require.Equal(t, -1, running, "q still holds a write end: a read would wait forever")
	require.NotNil(t, m.ended)
	assert.Equal(t, uint64(pti.ReasonDeadlock), m.ended.reason)
	var ts [2]Task
	require.Equal(t, 2, Tasks(ts[:]))
	assert.Equal(t, Task{Task: 0, Proc: p, State: taskExited, RIP: 0x1000 + 4, Status: 7}, ts[0])
	assert.Equal(t, Task{Task: 1, Proc: q, State: taskBlocked, Wait: waitRead, Pipe: 0, RIP: 0x2000 + 2}, ts[1])
	assert.Equal(t, "blocked", ts[1].State.String())
	assert.Equal(t, "read", ts[1].Wait.String())
}

func TestExitStatusOfTheRun(t *testing.T) {
	m := newMachine(t)
	p := NewProcess(0, nfds)
	m.task(p, 0x1000)
	m.task(p, 0x2000)
	m.task(p, 0x3000)
	m.call(SysExit, 0)
	m.call(SysExit, 3)
	m.call(SysExit, 4)
	require.NotNil(t, m.ended)
	assert.Equal(t, runEnd{pti.ReasonExit, 3}, *m.ended, "the first nonzero status")
}

func TestNoFrameNoSwitch(t *testing.T) {
	m := newMachine(t)
	Reset(false)
	p := NewProcess(0, nfds)
	m.task(p, 0x1000)
	m.task(p, 0x2000)
	m.call(SysSchedYield)
	require.NotNil(t, m.ended)
	assert.Equal(t, uint64(pti.ReasonNoSwitch), m.ended.reason)
}

func TestTablesFull(t *testing.T) {
	newMachine(t)
	assert.Equal(t, -1, NewProcess(0, maxFDSlots+1), "more descriptors than there are")
	for i := 0; i < maxProcs; i++ {
		require.Equal(t, i, NewProcess(0, maxFDSlots/maxProcs))
	}
	assert.Equal(t, -1, NewProcess(0, 0), "no process left")
	for i := 0; i < maxTasks; i++ {
		require.Equal(t, i, NewTask(i%maxProcs, 0, 0, [6]uint64{}))
	}
	assert.Equal(t, -1, NewTask(0, 0, 0, [6]uint64{}))
	for i := 0; i < maxPipes; i++ {
		require.Equal(t, i, NewPipe(i, 0, i, 1, ring()))
	}
	assert.Equal(t, -1, NewPipe(maxPipes, 0, maxPipes, 1, ring()), "no pipe left")
	assert.Equal(t, -1, NewPipe(maxPipes, 2, maxPipes, 2, ring()), "one descriptor for both ends")
	assert.Equal(t, -1, NewPipe(maxPipes, maxFDSlots/maxProcs, maxPipes, 2, ring()), "out of range")
	assert.Equal(t, -1, NewPipe(0, 0, 1, 2, ring()), "taken")
	assert.Equal(t, -1, NewPipe(maxPipes, 4, maxPipes, 5, nil), "no ring")

	Reset(true)
	assert.Equal(t, -1, NewTask(0, 0, 0, [6]uint64{}), "no such process")
	require.Equal(t, 0, NewProcess(0, maxFDSlots))
	assert.Equal(t, -1, NewProcess(0, 1), "no descriptor slot left")
	assert.Equal(t, 1, NewProcess(0, 0), "a process without descriptors")
}

// A woken writer whose room was not freed goes back to waiting before its
// address space is loaded: no CR3 load, no switch.
func TestWokenTaskChecksBeforeSwitch(t *testing.T) {
	userMem(t, memBase, 8192)
	m := newMachine(t)
	pr, pw := NewProcess(0x1000, nfds), NewProcess(0x2000, nfds)
	require.Equal(t, 0, NewPipe(pr, 0, pw, 1, ring()))
	m.task(pr, 0x1000)
	m.task(pw, 0x2000)
	running, _ := m.call(SysSchedYield)
	require.Equal(t, 1, running)
	running, r := m.call(SysWrite, 1, memBase, ringSize-50)
	require.Equal(t, 1, running)
	require.Equal(t, int64(ringSize-50), r)
	running, _ = m.call(SysWrite, 1, memBase, 100)
	require.Equal(t, 0, running, "no room for 100 bytes: the reader runs")
	loads, switches := CR3Loads, Switches
	running, r = m.call(SysRead, 0, memBase+0x1000, 10)
	require.Equal(t, int64(10), r)
	running, _ = m.call(SysSchedYield)
	assert.Equal(t, 0, running, "the writer was woken but 60 bytes are not enough")
	assert.Equal(t, loads, CR3Loads, "no CR3 load for it")
	assert.Equal(t, switches, Switches)
	running, r = m.call(SysRead, 0, memBase+0x1000, 100)
	require.Equal(t, int64(100), r)
	running, r = m.call(SysSchedYield)
	assert.Equal(t, 1, running, "160 bytes of room: the write goes ahead")
	assert.Equal(t, int64(100), r)
	assert.Equal(t, loads+1, CR3Loads)
}

func TestZeroByteWriteWithoutReaders(t *testing.T) {
	m := newMachine(t)
	p := NewProcess(0, nfds)
	require.Equal(t, 0, NewPipe(p, 0, p, 1, ring()))
	m.task(p, 0x1000)
	_, r := m.call(SysClose, 0)
	require.Zero(t, r)
	_, r = m.call(SysWrite, 1, 0, 0)
	assert.Zero(t, r, "as Linux: a write of nothing succeeds before the readers are checked")
	_, r = m.call(SysWrite, 1, memBase, 1)
	assert.Equal(t, int64(-linuxabi.EPIPE), r)
}

func TestLastExitWithoutFrame(t *testing.T) {
	m := newMachine(t)
	Reset(false)
	m.task(NewProcess(0, nfds), 0x1000)
	m.call(SysExit, 5)
	require.NotNil(t, m.ended)
	assert.Equal(t, runEnd{pti.ReasonExit, 5}, *m.ended, "the last exit ends the run even without a pt_regs frame")
}
