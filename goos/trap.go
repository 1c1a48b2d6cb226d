package goos

// Assembly of trap_amd64.s.

// entry is the image's PE/COFF entry point (the linker's -E): see
// trap_amd64.s. It never returns to the firmware by RET; the run ends
// through endRun.
//
// defined in trap_amd64.s
func entry()

// syscallEntry is the SYSCALL target (LSTAR) while the runtime runs in
// ring 0. Register contract: SYSCALL's (RCX = return RIP, R11 = RFLAGS,
// RAX = number, arguments in RDI, RSI, RDX, R10, R8, R9); it preserves
// every register but RAX (the result), RCX and R11, as Linux does.
//
// defined in trap_amd64.s
func syscallEntry()

// resume restores the thread at curThread from its record and IRETQs to
// it. It does not return.
//
// defined in trap_amd64.s
func resume()

// excCommon is the common exception path (see trap_amd64.s); exc0 to
// exc31 are the per-vector stubs the IDT points at.
//
// defined in trap_amd64.s
func excCommon()

// excStubs writes the addresses of the 32 exception stubs into t.
//
// defined in trap_amd64.s
//
//go:noescape
func excStubs(t *[32]uint64)

// syscallEntryPC returns the address of syscallEntry, for LSTAR.
//
// defined in trap_amd64.s
func syscallEntryPC() uint64

// faultPanicPC returns the address of faultPanic's ABI0 entry: the
// exception handler resumes a faulting goroutine there.
//
// defined in trap_amd64.s
func faultPanicPC() uint64

// scratchSP holds the interrupted RSP for a moment in syscallEntry, while
// no register is free (interrupts are masked and there is one CPU).
var scratchSP uint64

// rawSyscall makes system call nr with one argument from Go code and
// returns RAX: a SYSCALL to the kernel's own handler.
//
// defined in trap_amd64.s
func rawSyscall(nr, a1 uint64) uint64
