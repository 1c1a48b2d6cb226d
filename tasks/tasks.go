// Package tasks is the kernel that ptilab's ring-3 benchmark tasks call:
// its system calls, with Linux's numbers and semantics where Linux has
// them, the kernel objects they work on (pipes, AF_UNIX stream socket
// pairs, files), and the tasks themselves: processes, threads, a run
// queue and the context switch. The pipe and socket rings, the wait
// queues and the scheduler's decisions are package tasks/core's, which
// the 32-bit world's kernel (i386pae/kernel32) runs too.
//
// Its handlers run in kernel mode, as goos's do: on the kernel stack under
// goos's kernelG (the run sets the FS base to goos's kernel TLS), so they
// must not allocate or store heap pointers; a test on the built image
// checks this for the whole package. They are reached from pti's
// trampolines through Entry, which saves the kernel's registers and calls
// Syscall with the task's pt_regs frame.
package tasks

import (
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/tasks/core"
)

// Calls lists the system calls Syscall answers, for pti's table: Linux
// x86-64 numbers (linuxabi's, from arch/x86/entry/syscalls/syscall_64.tbl).
var Calls = [...]int{linuxabi.SYS_read, linuxabi.SYS_write, linuxabi.SYS_close, linuxabi.SYS_lseek,
	linuxabi.SYS_sched_yield, linuxabi.SYS_exit, linuxabi.SYS_socketpair}

// Syscall handles system call nr of the running task with arguments a0-a5
// (RDI, RSI, RDX, R10, R8, R9) and returns the result or a negative errno.
// regs is the task's pt_regs frame on the kernel stack; when the call
// blocks, yields or exits, Syscall switches tasks: it saves the frame,
// fills it with the next task's registers and returns that task's RAX. It
// does not return when no task is left that can run: the run ends
// (pti.ExitRun).
func Syscall(regs *PtRegs, nr, a0, a1, a2, a3, a4, a5 uint64) int64 {
	r := dispatch(nr, a0, a1, a2, a3, a4, a5)
	if kernel.Cur == core.NoTask || kernel.Running() {
		return r
	}
	return schedule(regs, r)
}

// dispatch runs system call nr for the running task.
func dispatch(nr, a0, a1, a2, a3, a4, a5 uint64) int64 {
	switch nr {
	case linuxabi.SYS_read:
		obj := object(a0)
		if obj < 0 || obj >= fileObjBase || obj%2 != 0 {
			if obj >= sockObjBase { // here, off the pipes' path
				c := uint32(obj - sockObjBase)
				return int64(kernel.Read(c, uintptr(rings[c]), uintptr(a1), userRoom(a1), uintptr(a2)))
			}
			return -linuxabi.EBADF // files here have no contents to read
		}
		p := uint32(obj / 2)
		return int64(kernel.Read(p, uintptr(rings[p]), uintptr(a1), userRoom(a1), uintptr(a2)))
	case linuxabi.SYS_write:
		obj := object(a0)
		if obj < 0 || obj >= fileObjBase || obj%2 != 1 {
			if obj >= sockObjBase { // here, off the pipes' path
				c := uint32(obj-sockObjBase) ^ 1
				return int64(kernel.SockWrite(c, uintptr(rings[c]), uintptr(a1), userRoom(a1), uintptr(a2)))
			}
			return -linuxabi.EBADF
		}
		p := uint32(obj / 2)
		return int64(kernel.PipeWrite(p, uintptr(rings[p]), uintptr(a1), userRoom(a1), uintptr(a2)))
	case linuxabi.SYS_close:
		if kernel.Cur == core.NoTask {
			return -linuxabi.EBADF
		}
		return closeFD(int(tasks[kernel.Cur].proc), int(a0))
	case linuxabi.SYS_lseek:
		return lseek(a0, int64(a1), a2)
	case linuxabi.SYS_sched_yield:
		if kernel.Cur != core.NoTask {
			kernel.Yield()
		}
		return 0
	case linuxabi.SYS_socketpair:
		return socketpair(a0, a1, a2, a3)
	case linuxabi.SYS_exit:
		if kernel.Cur != core.NoTask {
			exit(int64(int32(a0))) // the status is an int
		}
		return 0
	}
	return -linuxabi.ENOSYS
}

// Entry returns the address of entry, the handler pti's system-call table
// points at for the calls this package answers.
//
// defined in entry_amd64.s
func Entry() uint64

// entry is a pti system-call handler (see pti/entry_amd64.s for the
// contract: called on the kernel stack with the arguments in RDI, RSI, RDX,
// R10, R8, R9 and the number in RAX; keeps every register but RAX). With
// the Linux-shaped trampoline the task's pt_regs frame lies just above its
// return address. It saves the registers, calls Syscall through its ABI0
// wrapper (which takes kernelG from -8(FS)) and restores them.
//
// defined in entry_amd64.s
func entry()

// EntryR11 returns the address of entryR11, the handler pti's system-call
// table points at instead of entry for the calls this package answers
// when the trampoline passes its pt_regs frame's address in R11
// (pti.RegsInR11: the deferred modes' linux trampolines, whose frame is on
// the trampoline stack while the handler runs on the kernel stack).
//
// defined in entry_amd64.s
func EntryR11() uint64

// entryR11 is entry with the pt_regs frame's address taken from R11.
//
// defined in entry_amd64.s
func entryR11()

// fillRSB stuffs the return stack buffer (RSB_CLEAR_LOOPS, 32 entries).
// Kernel mode; clobbers only RAX and the flags.
//
// defined in entry_amd64.s
func fillRSB()
