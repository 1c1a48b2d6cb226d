// Package tasks is the kernel that ptilab's ring-3 benchmark tasks call: its
// system calls, with Linux's numbers and semantics where Linux has them,
// and the kernel objects they work on.
//
// Its handlers run in kernel mode, as goos's do: on the kernel stack under
// goos's kernelG (the run sets the FS base to goos's kernel TLS), so they
// must not allocate or store heap pointers; a test on the built image
// checks this for the whole package. They are reached from pti's
// trampolines through Entry, which saves the task's registers and calls
// Syscall.
package tasks

// Linux x86-64 system-call numbers this kernel answers.
const (
	SysLseek = 8
)

// Errno values (include/uapi/asm-generic/errno-base.h).
const (
	EBADF  = 9
	EINVAL = 22
	ENOSYS = 38
)

// Syscall handles system call nr of the running task with arguments a0-a5
// (RDI, RSI, RDX, R10, R8, R9) and returns the result or a negative errno.
func Syscall(nr, a0, a1, a2, a3, a4, a5 uint64) int64 {
	switch nr {
	case SysLseek:
		return lseek(a0, int64(a1), a2)
	}
	return -ENOSYS
}

// Entry returns the address of entry, the handler pti's system-call table
// points at for the calls this package answers.
//
// defined in entry_amd64.s
func Entry() uint64

// entry is a pti system-call handler (see pti/entry_amd64.s for the
// contract: called on the kernel stack with the arguments in RDI, RSI, RDX,
// R10, R8, R9 and the number in RAX; keeps every register but RAX). It
// saves the registers, calls Syscall through its ABI0 wrapper (which takes
// kernelG from -8(FS)) and restores them.
//
// defined in entry_amd64.s
func entry()
