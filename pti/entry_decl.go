package pti

import "unsafe"

// Assembly of entry_amd64.s. The trampolines (sysMinimal*, sysLinux*),
// toUser and excCommon are copied into the entry area and run there; see
// that file for each one's register contract.

// enterUser runs the prepared task in ring 3 and returns when it has
// exited or a CPU exception ended it; entryData says which. Interrupts
// must be masked (they always are: see goos).
//
// defined in entry_amd64.s
func enterUser()

// entryRoutines are the routines of entry_amd64.s that Setup copies into
// the entry area's text pages and that run there: one field per routine,
// named as its symbol with the first letter upper-case. Each holds an
// address: where the routine is linked (env.link) or where it was copied
// (env.text). A test on the built image checks that routines sets every
// field to the symbol of its name.
type entryRoutines struct {
	// The minimal SYSCALL trampolines (SYS_MINIMAL), one per mode.
	SysMinimalOff, SysMinimalOn, SysMinimalPCID uint64
	// The Linux-shaped SYSCALL trampolines (SYS_LINUX), one per mode.
	SysLinuxOff, SysLinuxOn, SysLinuxPCID uint64
	// ToUser starts the task (from enterUser, on the entry stack).
	ToUser uint64
	// ExcCommon is the exception entries' common path (the stubs that
	// jump to it are Setup's: amd64.ExceptionStub).
	ExcCommon uint64
	// EntryNMI is the NMI handler: it counts and resumes.
	EntryNMI uint64
	// The mitigated SYSCALL trampolines (SYS_MITIGATED), one per mode.
	SysMitigatedOff, SysMitigatedOn, SysMitigatedPCID uint64
}

// kernelRoutines are the routines of entry_amd64.s that run where they are
// linked (kernel text, mapped only in the kernel side), named as
// entryRoutines' are.
type kernelRoutines struct {
	// The built-in system calls (the table's entries: see ResetSyscalls).
	SysGetppid, SysWork, SysSample, SysExitRun, SysNoSys uint64
	// RunExit ends a run (entryData.ExitRun).
	RunExit uint64
	// SysSecret is the oracle's secret call (SysSecret, oracle.go).
	SysSecret uint64
	// SysTouch is the TLB sweep's kernel-side system call (sweep.go).
	SysTouch uint64
}

// routines writes the link addresses of entry_amd64.s's routines into e
// and k and those of user_amd64.s's ring-3 programs into p, each into the
// field of its name (through go_asm.h's offsets).
//
// defined in entry_amd64.s
//
//go:noescape
func routines(e *entryRoutines, k *kernelRoutines, p *programTable)

// A routine is an entry routine: the offset of its field in
// entryRoutines.
type routine uintptr

// at returns the field of routine r in t.
func (t *entryRoutines) at(r routine) *uint64 { return (*uint64)(unsafe.Add(unsafe.Pointer(t), r)) }

// trampolineKey picks a SYSCALL trampoline.
type trampolineKey struct {
	Flavour Flavour
	Mode    Mode
}

// trampolines are the SYSCALL trampolines of each flavour and mode, by
// name. A configuration without one is not supported (Supported says so):
// a new mode or flavour needs its row here before it can run.
var trampolines = map[trampolineKey]routine{
	{Minimal, Off}:      routine(unsafe.Offsetof(entryRoutines{}.SysMinimalOff)),
	{Minimal, On}:       routine(unsafe.Offsetof(entryRoutines{}.SysMinimalOn)),
	{Minimal, OnPCID}:   routine(unsafe.Offsetof(entryRoutines{}.SysMinimalPCID)),
	{Linux, Off}:        routine(unsafe.Offsetof(entryRoutines{}.SysLinuxOff)),
	{Linux, On}:         routine(unsafe.Offsetof(entryRoutines{}.SysLinuxOn)),
	{Linux, OnPCID}:     routine(unsafe.Offsetof(entryRoutines{}.SysLinuxPCID)),
	{Mitigated, Off}:    routine(unsafe.Offsetof(entryRoutines{}.SysMitigatedOff)),
	{Mitigated, On}:     routine(unsafe.Offsetof(entryRoutines{}.SysMitigatedOn)),
	{Mitigated, OnPCID}: routine(unsafe.Offsetof(entryRoutines{}.SysMitigatedPCID)),
}

// ExitRun ends the run from a Go system-call handler (package tasks) with
// reason and status, as the exit handler and the exception path do: it
// jumps to runExit, which restores Go's context and returns from
// enterUser; the kernel stack the handler ran on is abandoned. Call it
// only in a system call of a run.
//
// defined in entry_amd64.s
func ExitRun(reason, status uint64)
