//go:build 386 && kernel32host

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/tasks/core"
	"github.com/ptilab/ptilab/testkit/taskscenario"
)

// The host tests drive the 32-bit tasks kernel as the linux trampolines
// and dispatch (entry_386.s) do: the running task's pt_regs frame, a
// system call through syscall32, its result stored in the frame's EAX.
// machine_host.go stands in for the 32-bit world's memory and
// instructions. Run them with
//
//	GOARCH=386 go test -tags kernel32host ./i386pae/kernel32/
//
// (make test does, through test/run386).

// dataPages is the data pages of the tests' processes: room for two
// pipe rings and more, as taskscenario asks.
const dataPages = 40

// kernel32 is the 32-bit tasks kernel under test.
type kernel32 struct {
	t     *testing.T
	frame layout.PtRegs // the running task's registers: the frame on the task stack
	ended *runEnd
}

// newKernel32 starts an empty run: the state as i386pae.NewTasks leaves
// it, no process memory, no CR3 loaded.
func newKernel32(t *testing.T) *kernel32 {
	machine.k.Reset()
	machine.code = make([]byte, layout.UserCodePages*4096)
	machine.spaces = map[uint32]*space{}
	machine.rings = map[uint32][]byte{}
	machine.cr3, machine.cr3s, machine.tsc = 0, nil, 0
	k := &kernel32{t: t}
	machine.frame = &k.frame // the trampolines' frame on the task stack
	return k
}

func (k *kernel32) Width() int    { return 32 }
func (k *kernel32) RingSize() int { return layout.PipeSize }

// NewProcess makes a process with dataPages data pages and its stack
// pages, at CR3 value cr3 (i386pae.Tasks.RunTasks sets KernelCR3 from the
// process's address space).
func (k *kernel32) NewProcess(cr3 uint64, nfds int) int {
	p := machine.k.AddProcess(nfds, layout.UserData+dataPages*4096)
	require.GreaterOrEqual(k.t, p, 0)
	require.Nil(k.t, machine.spaces[uint32(cr3)], "a CR3 per process")
	machine.k.Procs[p].KernelCR3 = uint32(cr3)
	machine.spaces[uint32(cr3)] = &space{data: make([]byte, dataPages*4096), stack: make([]byte, layout.UserStackPages*4096)}
	return p
}

func (k *kernel32) NewPipe(rproc, rfd, wproc, wfd int) int {
	n := machine.k.AddPipe(rproc, rfd, wproc, wfd)
	if n >= 0 && machine.rings[uint32(n)] == nil {
		machine.rings[uint32(n)] = make([]byte, layout.PipeSize)
	}
	return n
}

func (k *kernel32) SocketRingSize() int { return layout.PipeSize }

func (k *kernel32) NewSocketPair(aproc, afd, bproc, bfd int) int {
	c := machine.k.AddSocketPair(aproc, afd, bproc, bfd)
	if c >= 0 {
		k.ring(uint32(c))
		k.ring(uint32(c) + 1)
	}
	return c
}

// SocketRings maps rings for pairs more pairs after those mapped, for
// socketpair(2), as i386pae.Tasks's RunTasks sets MappedRings.
func (k *kernel32) SocketRings(pairs int) {
	for i := 0; i < 2*pairs; i++ {
		k.ring(machine.k.MappedRings)
		machine.k.MappedRings++
	}
}

func (k *kernel32) ring(n uint32) {
	if machine.rings[n] == nil {
		machine.rings[n] = make([]byte, layout.PipeSize)
	}
}

func (k *kernel32) ShareFD(from, to, fd int) bool { return machine.k.ShareFD(from, to, fd) }

func (k *kernel32) OpenFile(proc, fd int, size int64) bool {
	return machine.k.AddFile(proc, fd, uint32(size)) >= 0
}

// NewTask makes a task; task 0 runs first, in its process's address
// space, with its registers in the frame (i386pae's start).
func (k *kernel32) NewTask(proc int, ip uint64) int {
	i := machine.k.AddTask(proc, uint32(ip), layout.UserStackTop-uint32(machine.k.NTasks)*256, [6]uint32{})
	require.GreaterOrEqual(k.t, i, 0)
	if i == 0 {
		machine.cr3 = machine.k.Procs[proc].KernelCR3
		k.frame = machine.k.Tasks[0].Regs
	}
	return i
}

// Call makes system call c from the running task: SYSENTER (2 bytes) with
// the number in EAX and the arguments in EBX, ECX, EDX; the trampoline
// builds the frame with EAX -ENOSYS, dispatch calls syscall32, and the
// result goes into the frame's EAX. After the run ended it returns -1.
func (k *kernel32) Call(c taskscenario.Call, args ...uint64) (running int, r int64) {
	require.Nil(k.t, k.ended, "the run has ended")
	nr := map[taskscenario.Call]uint32{
		taskscenario.Read: linuxabi.SYS_ia32_read, taskscenario.Write: linuxabi.SYS_ia32_write, taskscenario.Close: linuxabi.SYS_ia32_close,
		taskscenario.Lseek: linuxabi.SYS_ia32_lseek, taskscenario.SchedYield: linuxabi.SYS_ia32_sched_yield, taskscenario.Exit: linuxabi.SYS_ia32_exit,
		taskscenario.SocketPair: linuxabi.SYS_ia32_socketpair, taskscenario.Unknown: 999, sampleCall: layout.SysSample,
	}[c]
	var a [4]uint32
	for i, v := range args {
		a[i] = uint32(v) // the i386 ABI's words: the upper half is cut
	}
	f := &k.frame
	f.OrigAX, f.BX, f.CX, f.DX, f.SI = nr, a[0], a[1], a[2], a[3]
	f.AX = neg(linuxabi.ENOSYS)
	f.IP += 2
	var ax uint32
	k.ended = taskscenario.Ending[runEnd](func() { ax = syscall32(f) })
	if k.ended != nil {
		return -1, 0
	}
	f.AX = ax
	return int(machine.k.Core.Cur), int64(int32(ax))
}

func (k *kernel32) Ended() *taskscenario.End {
	if k.ended == nil {
		return nil
	}
	reason := map[uint32]taskscenario.Reason{layout.ReasonExit: taskscenario.EndExit, layout.ReasonDeadlock: taskscenario.EndDeadlock}[k.ended.reason]
	require.NotZero(k.t, reason, "run end reason %d", k.ended.reason)
	return &taskscenario.End{Reason: reason, Status: int64(int32(k.ended.status))}
}

func (k *kernel32) Task(i int) taskscenario.Task {
	require.Less(k.t, uint32(i), machine.k.NTasks)
	t, c := &machine.k.Tasks[i], &machine.k.Core.Tasks[i]
	state := map[uint32]taskscenario.State{core.TaskRunnable: taskscenario.Runnable, core.TaskRunning: taskscenario.Running,
		core.TaskBlocked: taskscenario.Blocked, core.TaskExited: taskscenario.Exited}[c.State]
	d := taskscenario.Task{Proc: int(t.Proc), State: state, IP: uint64(t.Regs.IP), Status: int64(int32(c.Status))}
	if c.State == core.TaskBlocked {
		d.Wait = map[uint32]taskscenario.Wait{core.WaitRead: taskscenario.WaitRead, core.WaitWrite: taskscenario.WaitWrite, core.WaitSockWrite: taskscenario.WaitWrite}[c.Wait]
		d.Pipe = int(c.Obj)
	}
	return d
}

func (k *kernel32) Tasks() int   { return int(machine.k.NTasks) }
func (k *kernel32) Data() uint64 { return layout.UserData }

func (k *kernel32) Mem(proc int) []byte {
	return machine.spaces[machine.k.Procs[proc].KernelCR3].data
}

func (k *kernel32) Bad(b taskscenario.Buffer) (addr, n uint64) {
	switch b {
	case taskscenario.InKernel:
		return layout.State, 1
	case taskscenario.BelowUser:
		return 0x1000, 1
	}
	return layout.UserData + dataPages*4096 - 0x10, 0x20 // past the data pages' end
}

func (k *kernel32) PipeBytes(p int) (written, read uint64) {
	return uint64(machine.k.Core.Pipes[p].WPos), uint64(machine.k.Core.Pipes[p].RPos)
}

func (k *kernel32) Switches() uint64 { return uint64(machine.k.Switches) }

func (k *kernel32) CR3s() []uint64 {
	require.Equal(k.t, len(machine.cr3s), int(machine.k.CR3Loads), "CR3Loads counts the loads")
	var out []uint64
	for _, v := range machine.cr3s {
		out = append(out, uint64(v))
	}
	return out
}

// TestScenarios runs the scenarios both tasks kernels share.
func TestScenarios(t *testing.T) {
	taskscenario.Run(t, func(t *testing.T) taskscenario.Kernel { return newKernel32(t) })
}

// The 32-bit kernel checks a user buffer against the process's mappings
// (userRoom): the data and stack pages both ways, the code pages only as a
// source; elsewhere, and across the top of the address space, EFAULT.
func TestUserBuffers32(t *testing.T) {
	k := newKernel32(t)
	p := k.NewProcess(0x1000, 16)
	require.Equal(t, 0, k.NewPipe(p, 0, p, 1))
	k.NewTask(p, 0x1000)
	copy(machine.code, "code")
	stack := uint64(layout.UserStackTop - 0x100)
	call := func(c taskscenario.Call, args ...uint64) int64 {
		running, r := k.Call(c, args...)
		require.Equal(t, 0, running)
		return r
	}
	assert.Equal(t, int64(4), call(taskscenario.Write, 1, layout.UserCode, 4), "the kernel reads the code pages")
	assert.Equal(t, -int64(linuxabi.EFAULT), call(taskscenario.Read, 0, layout.UserCode, 4), "but does not write them")
	assert.Equal(t, int64(4), call(taskscenario.Read, 0, stack, 4), "the stack pages")
	assert.Equal(t, "code", string(machine.spaces[0x1000].stack[len(machine.spaces[0x1000].stack)-0x100:][:4]))
	gap := uint64(layout.UserData + dataPages*4096 + 0x1000)
	assert.Equal(t, -int64(linuxabi.EFAULT), call(taskscenario.Write, 1, gap, 1), "between the data and the stack")
	assert.Equal(t, -int64(linuxabi.EFAULT), call(taskscenario.Write, 1, 0xfffffff0, 0x20), "across 4 GiB")
	assert.Equal(t, -int64(linuxabi.EFAULT), call(taskscenario.Write, 1, layout.UserStackTop-2, 4), "past the stack's top")
	w, rd := k.PipeBytes(0)
	assert.Equal(t, [2]uint64{4, 4}, [2]uint64{w, rd})
}

// The last exit stamps the run's end with the TSC, and the run's status is
// the first nonzero one.
func TestEndTSC(t *testing.T) {
	k := newKernel32(t)
	p := k.NewProcess(0x1000, 0)
	k.NewTask(p, 0x1000)
	k.NewTask(p, 0x2000)
	k.Call(taskscenario.Exit, 0)
	assert.Zero(t, machine.k.EndTSC, "a task is left")
	k.Call(taskscenario.Exit, 0xffffffff)
	require.Equal(t, &runEnd{layout.ReasonExit, 0xffffffff}, k.ended)
	assert.Equal(t, [2]uint32{uint32(machine.tsc), 0}, machine.k.EndTSC)
	assert.NotZero(t, machine.k.EndTSC[0])
}

// sampleCall is the sample call, ptilab's own, which the scenarios of
// both tasks kernels do not know.
const sampleCall taskscenario.Call = 1000

// The sample call under the tasks kernel records the counters the 64-bit
// side asked for, answers 0 without switching, and stops at MaxSamples.
func TestSampleCall(t *testing.T) {
	k := newKernel32(t)
	p := k.NewProcess(0x1000, 0)
	k.NewTask(p, 0x1000)
	k.NewTask(p, 0x2000)
	machine.k.SampleSrc = layout.SampleSMI | layout.SampleNMI | layout.SamplePMU
	machine.k.SampleMSR[0] = 0x309 // IA32_FIXED_CTR0; the other slots not read
	machine.nmis = 7
	t.Cleanup(func() { machine.nmis = 0 })
	running, r := k.Call(sampleCall)
	assert.Equal(t, 0, running, "no switch")
	assert.Zero(t, r)
	k.Call(sampleCall)
	assert.Equal(t, uint32(2), machine.k.SampleN)
	assert.Equal(t, [2]uint32{1, 0}, machine.k.Samples[1].SMI)
	assert.Equal(t, [2]uint32{7, 0}, machine.k.Samples[1].NMI, "the per-CPU NMI count")
	assert.Zero(t, machine.k.Samples[1].APERF, "not asked for")
	assert.Equal(t, [2]uint32{0x309, 1}, machine.k.Samples[1].PMC[0], "the counter of SampleMSR[0]")
	assert.Zero(t, machine.k.Samples[1].PMC[1], "a slot without an MSR")
	machine.k.SampleN = layout.MaxSamples
	_, r = k.Call(sampleCall)
	assert.Zero(t, r)
	assert.Equal(t, uint32(layout.MaxSamples), machine.k.SampleN, "full")
}

// The seam maps only what the 32-bit world's tables map: anything else
// is a page fault, which fails the test that made the kernel touch it.
func TestSeamFaults(t *testing.T) {
	k := newKernel32(t)
	p := k.NewProcess(0x1000, 2)
	k.NewTask(p, 0x1000)
	assert.Panics(t, func() { copyBytes(layout.UserCode, layout.UserData, 1) }, "the code pages are read-only")
	assert.Panics(t, func() { copyBytes(layout.UserData, layout.PipeBase, 1) }, "no pipe 0")
	assert.Panics(t, func() { copyBytes(layout.UserData+dataPages*4096-1, layout.UserData, 2) }, "past the data pages")
	assert.NotPanics(t, func() { copyBytes(layout.UserData+dataPages*4096, 0x1000, 0) }, "nothing to copy")
	setCR3(0x2000)
	assert.Panics(t, func() { copyBytes(layout.UserData, layout.UserCode, 1) }, "no process at CR3 0x2000")
	assert.Equal(t, &machine.k, kst())
}
