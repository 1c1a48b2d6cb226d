package tasks

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tasks/core"
	"github.com/ptilab/ptilab/testkit/taskscenario"
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
	setSwitchMitigations(false, false)
	t.Cleanup(func() { setCR3, exitRun = oldCR3, oldExit; setSwitchMitigations(false, false); Reset(true) })
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
	var r int64
	m.ended = taskscenario.Ending[runEnd](func() { r = Syscall(&m.regs, nr, a[0], a[1], a[2], a[3], a[4], a[5]) })
	if m.ended != nil {
		return -1, 0
	}
	m.regs.AX = uint64(r)
	return int(int32(kernel.Cur)), r // -1: none
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

// ringSize is the capacity of the tests' pipes: core's.
const ringSize = core.RingSize

// testRings keeps the tests' pipe rings alive: the kernel holds their
// addresses only.
var testRings [][]byte

func ring() []byte {
	r := make([]byte, ringSize)
	testRings = append(testRings, r)
	return r
}

const (
	memBase = 0x7f8000010000 // pti.UserData
	bufA    = memBase
	bufB    = memBase + 0x100
)

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

func TestNoFrameNoSwitch(t *testing.T) {
	m := newMachine(t)
	Reset(false)
	p := NewProcess(0, nfds)
	m.task(p, 0x1000)
	m.task(p, 0x2000)
	m.call(linuxabi.SYS_sched_yield)
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
	shared := ring() // the pipes' bytes do not matter here
	for i := 0; i < maxPipes; i++ {
		require.Equal(t, i, NewPipe(i, 0, i, 1, shared))
	}
	assert.Equal(t, -1, NewPipe(maxPipes, 0, maxPipes, 1, shared), "no pipe left")
	assert.Equal(t, -1, NewPipe(maxPipes, 2, maxPipes, 2, shared), "one descriptor for both ends")
	assert.Equal(t, -1, NewPipe(maxPipes, maxFDSlots/maxProcs, maxPipes, 2, shared), "out of range")
	assert.Equal(t, -1, NewPipe(0, 0, 1, 2, shared), "taken")
	assert.Equal(t, -1, NewPipe(maxPipes, 4, maxPipes, 5, nil), "no ring")
	assert.Equal(t, -1, NewPipe(maxPipes, 4, maxPipes, 5, shared[:4096]), "a ring of another size")

	Reset(true)
	assert.Equal(t, -1, NewTask(0, 0, 0, [6]uint64{}), "no such process")
	require.Equal(t, 0, NewProcess(0, maxFDSlots))
	assert.Equal(t, -1, NewProcess(0, 1), "no descriptor slot left")
	assert.Equal(t, 1, NewProcess(0, 0), "a process without descriptors")
}

func TestLastExitWithoutFrame(t *testing.T) {
	m := newMachine(t)
	Reset(false)
	m.task(NewProcess(0, nfds), 0x1000)
	m.call(linuxabi.SYS_exit, 5)
	require.NotNil(t, m.ended)
	assert.Equal(t, runEnd{pti.ReasonExit, 5}, *m.ended, "the last exit ends the run even without a pt_regs frame")
}

func TestStateNames(t *testing.T) {
	assert.Equal(t, "blocked", State(core.TaskBlocked).String())
	assert.Equal(t, "read", Wait(core.WaitRead).String())
	assert.Equal(t, "write", Wait(core.WaitWrite).String())
	assert.Equal(t, "write", Wait(core.WaitSockWrite).String())
}

// TestScenarios runs the scenarios both tasks kernels share.
func TestScenarios(t *testing.T) {
	taskscenario.Run(t, func(t *testing.T) taskscenario.Kernel {
		return &kernel64{machine: newMachine(t), mem: userMem(t, memBase, 0x40000)}
	})
}

// kernel64 is this package under taskscenario's scenarios: every process
// sees the one mapping at memBase, as the host has one address space.
type kernel64 struct {
	*machine
	mem []byte
}

func (k *kernel64) Width() int    { return 64 }
func (k *kernel64) RingSize() int { return ringSize }

func (k *kernel64) NewProcess(cr3 uint64, n int) int {
	p := NewProcess(cr3, n)
	require.GreaterOrEqual(k.t, p, 0)
	return p
}

func (k *kernel64) NewPipe(rproc, rfd, wproc, wfd int) int {
	return NewPipe(rproc, rfd, wproc, wfd, ring())
}

func (k *kernel64) ShareFD(from, to, fd int) bool { return ShareFD(from, to, fd) }

// SocketRingSize is a run's: the full-queue scenario needs room for what
// sk_sndbuf lets queue.
func (k *kernel64) SocketRingSize() int { return PipeCapacity }

func (k *kernel64) NewSocketPair(aproc, afd, bproc, bfd int) int {
	return NewSocketPair(aproc, afd, bproc, bfd, sockRing(), sockRing())
}

// SocketRings gives socketpair(2) two rings per pair.
func (k *kernel64) SocketRings(pairs int) {
	var rs []uint64
	for i := 0; i < 2*pairs; i++ {
		rs = append(rs, uint64(uintptr(unsafe.Pointer(&sockRing()[0]))))
	}
	SetSocketRings(rs)
}

func sockRing() []byte {
	r := make([]byte, PipeCapacity)
	testRings = append(testRings, r)
	return r
}

// OpenFile opens the lowest free descriptor from firstFD: the scenarios'
// fd must be that one.
func (k *kernel64) OpenFile(proc, fd int, size int64) bool { return OpenFile(proc, size) == fd }

func (k *kernel64) NewTask(proc int, ip uint64) int { return k.task(proc, ip) }

func (k *kernel64) Call(c taskscenario.Call, args ...uint64) (int, int64) {
	nr := map[taskscenario.Call]uint64{
		taskscenario.Read: linuxabi.SYS_read, taskscenario.Write: linuxabi.SYS_write, taskscenario.Close: linuxabi.SYS_close,
		taskscenario.Lseek: linuxabi.SYS_lseek, taskscenario.SchedYield: linuxabi.SYS_sched_yield, taskscenario.Exit: linuxabi.SYS_exit,
		taskscenario.SocketPair: linuxabi.SYS_socketpair, taskscenario.Unknown: 999,
	}[c]
	return k.call(nr, args...)
}

func (k *kernel64) Ended() *taskscenario.End {
	if k.ended == nil {
		return nil
	}
	reason := map[uint64]taskscenario.Reason{pti.ReasonExit: taskscenario.EndExit, pti.ReasonDeadlock: taskscenario.EndDeadlock}[k.ended.reason]
	require.NotZero(k.t, reason, "run end reason %d", k.ended.reason)
	return &taskscenario.End{Reason: reason, Status: int64(k.ended.status)}
}

func (k *kernel64) Task(i int) taskscenario.Task {
	ts := make([]Task, Count())
	require.Less(k.t, i, Tasks(ts))
	t := ts[i]
	state := map[State]taskscenario.State{core.TaskRunnable: taskscenario.Runnable, core.TaskRunning: taskscenario.Running,
		core.TaskBlocked: taskscenario.Blocked, core.TaskExited: taskscenario.Exited}[t.State]
	wait := map[Wait]taskscenario.Wait{core.WaitNone: taskscenario.WaitNone, core.WaitRead: taskscenario.WaitRead,
		core.WaitWrite: taskscenario.WaitWrite, core.WaitSockWrite: taskscenario.WaitWrite}[t.Wait]
	return taskscenario.Task{Proc: t.Proc, State: state, Wait: wait, Pipe: t.Pipe, IP: t.RIP, Status: t.Status}
}

func (k *kernel64) Tasks() int          { return Count() }
func (k *kernel64) Data() uint64        { return memBase }
func (k *kernel64) Mem(proc int) []byte { return k.mem }

func (k *kernel64) Bad(b taskscenario.Buffer) (addr, n uint64) {
	switch b {
	case taskscenario.InKernel:
		return 0xffff800000000000, 1
	case taskscenario.BelowUser:
		return 0x1000, 1
	}
	return 0x7ffffffffff0, 0x20 // PML4 slot 255 ends at 0x800000000000
}

func (k *kernel64) PipeBytes(p int) (written, read uint64) { return PipeBytes(p) }
func (k *kernel64) Switches() uint64                       { return Switches }

func (k *kernel64) CR3s() []uint64 {
	require.Equal(k.t, uint64(len(k.cr3s)), CR3Loads, "CR3Loads counts the loads")
	return k.cr3s
}

// The context switch's mitigations: an IBPB and an RSB stuffing at every
// switch to a task of another process (with its CR3 load: the IBPB
// before it, the RSB stuffing after it, as Linux), none at a switch
// between threads, none when off; without them the switch calls setCR3
// itself. fillRSB itself runs on the host (its CALLs and stack
// adjustment balance).
func TestSwitchMitigations(t *testing.T) {
	fillRSB()
	for _, on := range []bool{false, true} {
		m := newMachine(t)
		var ibpbs, fills int
		var order []string
		oldIBPB, oldFill := ibpb, rsbFill
		ibpb = func() { ibpbs++; order = append(order, "ibpb") }
		rsbFill = func() { fills++; order = append(order, "rsb") }
		load := setCR3
		setCR3 = func(v uint64) { load(v); order = append(order, "cr3") }
		t.Cleanup(func() { ibpb, rsbFill = oldIBPB, oldFill })
		setSwitchMitigations(on, on)
		p0, p1 := NewProcess(0x1000, nfds), NewProcess(0x3000, nfds)
		m.task(p0, 0x7f8000001000)
		m.task(p0, 0x7f8000001000) // a thread of process 0
		m.task(p1, 0x7f8000001000)
		// Task 0 yields to task 1 (same process), task 1 to task 2 (another
		// process), task 2 to task 0 (back).
		for want := 1; want <= 3; want++ {
			running, _ := m.call(linuxabi.SYS_sched_yield)
			assert.Equal(t, want%3, running)
		}
		assert.Equal(t, uint64(3), Switches)
		assert.Equal(t, uint64(2), CR3Loads)
		assert.Equal(t, []uint64{0x3000, 0x1000}, m.cr3s, "the CR3 loads go through setCR3 either way")
		if on {
			assert.Equal(t, 2, ibpbs, "one per process change")
			assert.Equal(t, 2, fills, "one per process change")
			assert.Equal(t, uint64(2), IBPBs)
			assert.Equal(t, uint64(2), RSBFills)
			assert.Equal(t, []string{"ibpb", "cr3", "rsb", "ibpb", "cr3", "rsb"}, order, "Linux's order")
		} else {
			assert.Zero(t, ibpbs+fills)
			assert.Zero(t, IBPBs+RSBFills)
		}
	}
}

// No system call blocks after it copied user data: a pipe write copies
// what fits and returns (a short count for one larger than PipeBuf), one
// that fits nowhere blocks before it copies anything, and a read blocks
// only on an empty pipe. So under the asi modes a call that went to the
// sensitive table returns to ring 3, and so to the nonsensitive table,
// before its task can block: every context switch happens on the
// nonsensitive table, between threads as between processes, and loads the
// next process's CR3, which there is its nonsensitive table
// (pti.Process.CR3).
func TestNoBlockAfterCopy(t *testing.T) {
	m := newMachine(t)
	userMem(t, memBase, 0x40000)
	p0, p1 := NewProcess(0x1000, nfds), NewProcess(0x3000, nfds)
	pipe := NewPipe(p1, 3, p0, 4, ring())
	require.GreaterOrEqual(t, pipe, 0)
	m.task(p0, 0x7f8000001000) // the writer
	m.task(p1, 0x7f8000001000) // the reader

	running, n := m.call(linuxabi.SYS_write, 4, bufA, ringSize+100)
	assert.Equal(t, 0, running, "a write larger than the room returns what fits, at once")
	assert.Equal(t, int64(ringSize), n)
	full, _ := PipeBytes(pipe)
	running, _ = m.call(linuxabi.SYS_write, 4, bufA, 100)
	assert.Equal(t, 1, running, "a write into the full pipe blocks: the switch to the reader")
	w, _ := PipeBytes(pipe)
	assert.Equal(t, full, w, "nothing copied before the block")
	assert.Equal(t, []uint64{0x3000}, m.cr3s, "the reader's process's CR3")

	running, n = m.call(linuxabi.SYS_read, 3, bufB, ringSize)
	assert.Equal(t, 1, running, "a read of a pipe with data returns at once")
	assert.Equal(t, int64(ringSize), n)
	_, read := PipeBytes(pipe)
	running, n = m.call(linuxabi.SYS_read, 3, bufB, 100)
	assert.Equal(t, 0, running, "a read of the empty pipe blocks: the writer's write goes on")
	assert.Equal(t, int64(100), n, "the writer's retried write")
	_, r := PipeBytes(pipe)
	assert.Equal(t, read, r, "nothing copied before the block")
	assert.Equal(t, []uint64{0x3000, 0x1000}, m.cr3s)
}
