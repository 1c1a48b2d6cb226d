// Package taskscenario is one table of scenarios for ptilab's two tasks
// kernels, the 64-bit one (package tasks) and the 32-bit one
// (i386pae/kernel32's tasks.go, run on the host through its kernel32host
// seam): pipes, wake order, blocking and retry, deadlock detection, the
// end of a pipe (EOF, EPIPE), shared descriptors, lseek, EFAULT on bad
// user buffers, exit and the run's status. Each kernel's host test
// implements Kernel, as its trampoline drives it, and runs Scenarios, so
// that both are held to the same semantics: Linux's, where Linux has the
// call (man-pages section 2, fs/pipe.c).
//
// It is for tests only: it imports testify.
package taskscenario

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/linuxabi"
)

// Call is a system call of the tasks kernels, which each Kernel maps to
// its ABI's number (linuxabi's x86-64 or i386 one).
type Call int

const (
	Read Call = iota
	Write
	Close
	Lseek
	SchedYield
	Exit
	// SocketPair is socketpair(2): args domain, type, protocol, sv.
	SocketPair
	// Unknown is a number neither kernel answers: -ENOSYS.
	Unknown
)

// lseek's whence (include/uapi/linux/fs.h).
const (
	SeekSet = 0
	SeekCur = 1
	SeekEnd = 2
)

// State is a task's state.
type State int

const (
	Runnable State = iota + 1
	Running
	Blocked
	Exited
)

// Wait is what a blocked task waits for.
type Wait int

const (
	WaitNone Wait = iota
	WaitRead
	WaitWrite
)

// Task is what a kernel reports of a task.
type Task struct {
	Proc   int
	State  State
	Wait   Wait   // for a blocked task only
	Pipe   int    // for a blocked task only: the pipe (or socket channel) it waits on
	IP     uint64 // where it resumes: its entry plus 2 per system call it made
	Status int64  // an exited task's exit status
}

// Reason is why a run ended.
type Reason int

const (
	EndExit     Reason = iota + 1 // the last task exited
	EndDeadlock                   // tasks remain and every one is blocked
)

// End is how a run ended.
type End struct {
	Reason Reason
	Status int64 // with EndExit: the first nonzero exit status
}

// Buffer names a user buffer the kernel must refuse with EFAULT.
type Buffer int

const (
	InKernel  Buffer = iota // in the kernel's part of the address space
	BelowUser               // below the tasks' part
	PastEnd                 // starting in the task's memory and running past its end
)

// Kernel is a tasks kernel driven on the host as its trampoline drives
// it: the running task's pt_regs frame, a system call, its result in the
// frame. A Kernel starts empty; a scenario makes its processes, pipes and
// tasks and then makes calls from the running task.
type Kernel interface {
	// Width is the ABI's word size in bits: 64 or 32.
	Width() int
	// RingSize is the capacity of the kernel's pipes, in bytes.
	RingSize() int
	// NewProcess makes a process with descriptors 0 to nfds-1, all
	// closed, whose kernel side is CR3 value cr3, and returns its number.
	NewProcess(cr3 uint64, nfds int) int
	// NewPipe makes a pipe whose read end is descriptor rfd of rproc and
	// write end wfd of wproc, and returns its number, or -1.
	NewPipe(rproc, rfd, wproc, wfd int) int
	// SocketRingSize is the capacity of each direction of the kernel's
	// socket pairs, in bytes.
	SocketRingSize() int
	// NewSocketPair makes an AF_UNIX stream socket pair whose one
	// endpoint is descriptor afd of aproc and the other bfd of bproc, and
	// returns the channel (the pipes' numbering) that a reads; b reads the
	// next one. -1 when it cannot.
	NewSocketPair(aproc, afd, bproc, bfd int) int
	// SocketRings gives socketpair(2) rings for pairs more pairs.
	SocketRings(pairs int)
	// ShareFD makes descriptor fd of process from also descriptor fd of
	// process to, as fork does; false when it cannot.
	ShareFD(from, to, fd int) bool
	// OpenFile opens a file of size bytes on descriptor fd of proc.
	OpenFile(proc, fd int, size int64) bool
	// NewTask makes a task of proc that starts at ip and returns its
	// number; task 0 is the running one.
	NewTask(proc int, ip uint64) int
	// Call makes system call c from the running task with args (as
	// words of the ABI: the upper half is cut on 32 bits) and returns
	// the task now running and the result it resumes with, sign
	// extended; running is -1 once the run has ended.
	Call(c Call, args ...uint64) (running int, r int64)
	// Ended returns how the run ended, nil while it goes on.
	Ended() *End
	// Task describes task i.
	Task(i int) Task
	// Tasks returns the number of tasks made.
	Tasks() int
	// Data returns the address of the first byte of every process's data
	// pages, and Mem process proc's data pages (at least 2*RingSize()+4
	// KiB), as the kernel sees them when that process is loaded.
	Data() uint64
	Mem(proc int) []byte
	// Bad returns a user buffer of kind b: its address and length (at
	// most 0x20 bytes).
	Bad(b Buffer) (addr, n uint64)
	// PipeBytes returns the bytes written into and read from pipe p.
	PipeBytes(p int) (written, read uint64)
	// Switches returns the switches from one task to another so far, and
	// CR3s the CR3 values the context switch loaded, in order.
	Switches() uint64
	CR3s() []uint64
}

// Scenario is one scenario: Run drives a fresh Kernel and checks it.
type Scenario struct {
	Name string
	Run  func(t *testing.T, k Kernel)
}

// Run runs every scenario and every PipeErrors case, each on a Kernel
// from newKernel.
func Run(t *testing.T, newKernel func(t *testing.T) Kernel) {
	for _, s := range Scenarios {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, newKernel(t)) })
	}
	for i, tc := range PipeErrors {
		t.Run("PipeErrors/"+tc.Name, func(t *testing.T) { pipeError(t, newKernel(t), i) })
	}
	for i, tc := range SocketErrors {
		t.Run("SocketErrors/"+tc.Name, func(t *testing.T) { socketError(t, newKernel(t), i) })
	}
}

// Errno values the scenarios expect, negated as the calls return them.
const (
	eBADF   = -linuxabi.EBADF
	eFAULT  = -linuxabi.EFAULT
	eINVAL  = -linuxabi.EINVAL
	eSPIPE  = -linuxabi.ESPIPE
	ePIPE   = -linuxabi.EPIPE
	eNOSYS  = -linuxabi.ENOSYS
	eMFILE  = -linuxabi.EMFILE
	eNFILE  = -linuxabi.ENFILE
	eAFNO   = -linuxabi.EAFNOSUPPORT
	eSOCKT  = -linuxabi.ESOCKTNOSUPPORT
	ePROTO  = -linuxabi.EPROTONOSUPPORT
	nfds    = 16 // the descriptors of the scenarios' processes
	fileFD  = 3  // the descriptor the scenarios open files at
	entryIP = 0x1000
)

// call makes a call that must not end the run and checks that task want
// runs after it; it returns the result.
func call(t *testing.T, k Kernel, want int, c Call, args ...uint64) int64 {
	t.Helper()
	running, r := k.Call(c, args...)
	require.Equal(t, want, running, "the task running after call %d%v", c, args)
	return r
}

// Ending runs call, a system call through a kernel's host seam, whose
// stand-in for the end of the run panics with an E (the end's reason and
// status), and returns that E when the call ended the run, nil when it
// returned. Any other panic goes on.
func Ending[E any](call func()) (end *E) {
	defer func() {
		if e := recover(); e != nil {
			v, ok := e.(E)
			if !ok {
				panic(e)
			}
			end = &v
		}
	}()
	call()
	return nil
}

// neg is a negative offset as an argument word.
func neg(v int64) uint64 { return uint64(v) }
