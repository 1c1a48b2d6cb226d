// Package timed is the timed loops of `ptilab linux`: a system call made
// n times between two reads of the time-stamp counter, by an entry the
// build's architecture has (SYSCALL in the amd64 build; INT 0x80 and
// SYSENTER through the vDSO's __kernel_vsyscall in the 386 build: the
// 64-bit kernel's compat entries), and the same loop without the call.
//
// The reads are fenced as the image's (amd64.TSCBegin, TSCEndL): LFENCE;
// RDTSC before the loop, LFENCE; RDTSC; LFENCE after it, so that the
// loop's instructions complete inside the timed region (SDM Vol. 2B,
// RDTSC; Vol. 3B, 18.17). LFENCE orders RDTSC only where it is
// dispatch-serializing: on Intel always, on AMD from family 10H where the
// kernel sets DE_CFG[1] (Linux, arch/x86/kernel/cpu/amd.c; the timing
// record says which). The first read is not followed by an LFENCE, as the
// image's is not: the loop may start before it retires, by a few cycles
// over n calls.
//
// The package imports the standard library only and builds for
// linux/amd64 and linux/386; cmd/ptilab-linux32 is its 386 program.
package timed

import "errors"

// An Entry is a way into the kernel that Syscalls times.
type Entry uintptr

// The entries. Empty is no call at all: the loop's own cost.
const (
	Empty Entry = iota
	// Native is the architecture's own instruction: SYSCALL (amd64),
	// INT 0x80 (386).
	Native
	// Vsyscall is a CALL of the vDSO's __kernel_vsyscall, SYSENTER on
	// Intel (386 only: Linux, arch/x86/entry/vdso/vdso32/system_call.S).
	Vsyscall
)

// ErrNoEntry is Syscalls' error for an entry this build has not.
var ErrNoEntry = errors.New("no such entry in this build")

// Syscalls makes system call nr with arguments a0, a1, a2 n times (n >= 1)
// by entry e and returns the TSC cycles of the loop, from LFENCE; RDTSC
// before the first call to LFENCE; RDTSC; LFENCE after the last, and the
// last call's return value (a negative errno on failure, as the kernel
// returns it; nr itself for Empty). fn is __kernel_vsyscall's address for
// Vsyscall (auxv AT_SYSINFO), else unused.
func Syscalls(e Entry, fn, nr, a0, a1, a2, n uintptr) (cycles uint64, ret uintptr, err error) {
	if e > maxEntry || n == 0 || e == Vsyscall && fn == 0 {
		return 0, 0, ErrNoEntry
	}
	cycles, ret = loop(nr, a0, a1, a2, n, uintptr(e), fn)
	return cycles, ret, nil
}

// loop is Syscalls' loop: how is the Entry; Empty's loop loads the same
// registers and counts the same way, without the call.
//
// amd64 (loop_amd64.s): SYSCALL with RAX = nr and RDI, RSI, RDX = a0, a1,
// a2, reloaded before every call (the instruction clobbers RCX and R11,
// the kernel returns in RAX; Linux, arch/x86/entry/entry_64.S); the count
// in R13, the first TSC read in BX.
//
// 386 (loop_386.s): EAX = nr and EBX, ECX, EDX = a0, a1, a2, reloaded
// before every call, then INT $0x80 or CALL fn (both give back every
// register but EAX: arch/x86/entry/entry_64_compat.S); the count in DI,
// fn in SI, the first TSC read in the frame.
//
// defined in loop_amd64.s and loop_386.s
func loop(nr, a0, a1, a2, n, how, fn uintptr) (cycles uint64, ret uintptr)

// Result is cmd/ptilab-linux32's output, one JSON object: per repeat the
// TSC cycles of n calls and of the empty loop of n iterations; the
// program's view of its parent's pid, which the last call's value must
// equal; the build's GOARCH; or why nothing was timed.
type Result struct {
	Arch  string   `json:"arch"`            // the program's GOARCH ("386")
	PPid  int      `json:"ppid"`            // os.Getppid's answer
	Ret   int64    `json:"ret"`             // the last timed getppid's
	Calls []uint64 `json:"calls,omitempty"` // cycles per repeat, warm-up included
	Empty []uint64 `json:"empty,omitempty"` // the empty loop's, likewise
	Error string   `json:"error,omitempty"` // why the entry could not be timed
}
