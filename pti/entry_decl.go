package pti

import (
	"unsafe"

	"github.com/ptilab/ptilab/experiment"
)

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
	// ToUserFRED starts the task by ERETU, for the FRED entry (fred.go);
	// the FRED linux trampolines' exits (FRED_LINUX_EXIT), one per mode.
	ToUserFRED                                           uint64
	FredLinuxExitOff, FredLinuxExitOn, FredLinuxExitPCID uint64
	// The asi modes' SYSCALL trampolines (asi.go): off's entry, and a
	// way back that writes the nonsensitive CR3 only after an ASI fault
	// (TO_USER_ASI, TO_USER_ASI_PCID).
	SysMinimalASI, SysMinimalASIPCID, SysLinuxASI, SysLinuxASIPCID uint64
	// AsiActions runs the asi actions of the way back (entryData.ASIActions).
	AsiActions uint64
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
	// SysSelfNMI is the test images' getppid (selfnmi_on.go).
	SysSelfNMI uint64
}

// routines writes the link addresses of entry_amd64.s's routines into e
// and k and those of user_amd64.s's ring-3 programs into p, each into the
// field of its name (through go_asm.h's offsets).
//
// defined in entry_amd64.s
//
//go:noescape
func routines(e *entryRoutines, k *kernelRoutines, p *programTable)

// trampolineKey picks a trampoline: an entry, a flavour and an isolation
// mode.
type trampolineKey struct {
	Entry   experiment.Entry
	Flavour experiment.Flavour
	Mode    experiment.Mode
}

// trampoline is where a trampoline is: the offset of its field in
// entryRoutines (copied into the entry text), in deferRoutines when
// deferred (copied into the deferred entry text), or in fredRoutines for
// the FRED entry (each at the start of its FRED page).
type trampoline struct {
	deferred, fred bool
	off            uintptr
}

// at returns where t runs, once Setup has copied it: for the FRED entry,
// its page, which IA32_FRED_CONFIG names.
func (t trampoline) at() uint64 {
	base := unsafe.Pointer(&env.text)
	switch {
	case t.deferred:
		base = unsafe.Pointer(&env.deferText)
	case t.fred:
		base = unsafe.Pointer(&env.fredText)
	}
	return *(*uint64)(unsafe.Add(base, t.off))
}

// entryText and deferText are the trampoline of field off of
// entryRoutines and of deferRoutines.
func entryText(off uintptr) trampoline { return trampoline{off: off} }
func deferText(off uintptr) trampoline { return trampoline{deferred: true, off: off} }

// trampolines are the trampolines of each entry, flavour and mode: the
// instantiations of the model's rows (experiment.Mode.In(W64),
// Mode.Has(flavour), the entry's Flavours and Deferred), which a test
// checks against the rows. A deferred
// mode and its PCID variant share a trampoline (only the dispatcher
// differs: entryData.Dispatch).
var trampolines = map[trampolineKey]trampoline{
	{experiment.Syscall, experiment.Minimal, experiment.Off}:    entryText(unsafe.Offsetof(entryRoutines{}.SysMinimalOff)),
	{experiment.Syscall, experiment.Minimal, experiment.On}:     entryText(unsafe.Offsetof(entryRoutines{}.SysMinimalOn)),
	{experiment.Syscall, experiment.Minimal, experiment.OnPCID}: entryText(unsafe.Offsetof(entryRoutines{}.SysMinimalPCID)),

	{experiment.Syscall, experiment.Linux, experiment.Off}:    entryText(unsafe.Offsetof(entryRoutines{}.SysLinuxOff)),
	{experiment.Syscall, experiment.Linux, experiment.On}:     entryText(unsafe.Offsetof(entryRoutines{}.SysLinuxOn)),
	{experiment.Syscall, experiment.Linux, experiment.OnPCID}: entryText(unsafe.Offsetof(entryRoutines{}.SysLinuxPCID)),

	{experiment.Syscall, experiment.Mitigated, experiment.Off}:    entryText(unsafe.Offsetof(entryRoutines{}.SysMitigatedOff)),
	{experiment.Syscall, experiment.Mitigated, experiment.On}:     entryText(unsafe.Offsetof(entryRoutines{}.SysMitigatedOn)),
	{experiment.Syscall, experiment.Mitigated, experiment.OnPCID}: entryText(unsafe.Offsetof(entryRoutines{}.SysMitigatedPCID)),

	{experiment.Syscall, experiment.Minimal, experiment.OnDefer}:        deferText(unsafe.Offsetof(deferRoutines{}.SysMinimalDefer)),
	{experiment.Syscall, experiment.Minimal, experiment.OnDeferPCID}:    deferText(unsafe.Offsetof(deferRoutines{}.SysMinimalDefer)),
	{experiment.Syscall, experiment.Linux, experiment.OnDefer}:          deferText(unsafe.Offsetof(deferRoutines{}.SysLinuxDefer)),
	{experiment.Syscall, experiment.Linux, experiment.OnDeferPCID}:      deferText(unsafe.Offsetof(deferRoutines{}.SysLinuxDefer)),
	{experiment.Syscall, experiment.Minimal, experiment.OnNoSwitch}:     deferText(unsafe.Offsetof(deferRoutines{}.SysMinimalNoSwitch)),
	{experiment.Syscall, experiment.Minimal, experiment.OnNoSwitchPCID}: deferText(unsafe.Offsetof(deferRoutines{}.SysMinimalNoSwitch)),
	{experiment.Syscall, experiment.Linux, experiment.OnNoSwitch}:       deferText(unsafe.Offsetof(deferRoutines{}.SysLinuxNoSwitch)),
	{experiment.Syscall, experiment.Linux, experiment.OnNoSwitchPCID}:   deferText(unsafe.Offsetof(deferRoutines{}.SysLinuxNoSwitch)),

	{experiment.FRED, experiment.Minimal, experiment.Off}:    fredText(unsafe.Offsetof(fredRoutines{}.FredMinimalOff)),
	{experiment.FRED, experiment.Minimal, experiment.On}:     fredText(unsafe.Offsetof(fredRoutines{}.FredMinimalOn)),
	{experiment.FRED, experiment.Minimal, experiment.OnPCID}: fredText(unsafe.Offsetof(fredRoutines{}.FredMinimalPCID)),
	{experiment.FRED, experiment.Linux, experiment.Off}:      fredText(unsafe.Offsetof(fredRoutines{}.FredLinuxOff)),
	{experiment.FRED, experiment.Linux, experiment.On}:       fredText(unsafe.Offsetof(fredRoutines{}.FredLinuxOn)),
	{experiment.FRED, experiment.Linux, experiment.OnPCID}:   fredText(unsafe.Offsetof(fredRoutines{}.FredLinuxPCID)),

	{experiment.Syscall, experiment.Minimal, experiment.ASI}:     entryText(unsafe.Offsetof(entryRoutines{}.SysMinimalASI)),
	{experiment.Syscall, experiment.Minimal, experiment.ASIPCID}: entryText(unsafe.Offsetof(entryRoutines{}.SysMinimalASIPCID)),
	{experiment.Syscall, experiment.Linux, experiment.ASI}:       entryText(unsafe.Offsetof(entryRoutines{}.SysLinuxASI)),
	{experiment.Syscall, experiment.Linux, experiment.ASIPCID}:   entryText(unsafe.Offsetof(entryRoutines{}.SysLinuxASIPCID)),

	// lass runs off's trampolines: only CR4 and the handlers differ
	// (lass.go).
	{experiment.Syscall, experiment.Minimal, experiment.LASS}: entryText(unsafe.Offsetof(entryRoutines{}.SysMinimalOff)),
	{experiment.Syscall, experiment.Linux, experiment.LASS}:   entryText(unsafe.Offsetof(entryRoutines{}.SysLinuxOff)),
	{experiment.FRED, experiment.Minimal, experiment.LASS}:    fredText(unsafe.Offsetof(fredRoutines{}.FredMinimalOff)),
	{experiment.FRED, experiment.Linux, experiment.LASS}:      fredText(unsafe.Offsetof(fredRoutines{}.FredLinuxOff)),
}

// ExitRun ends the run from a Go system-call handler (package tasks) with
// reason and status, as the exit handler and the exception path do: it
// jumps to runExit, which restores Go's context and returns from
// enterUser; the kernel stack the handler ran on is abandoned. Call it
// only in a system call of a run.
//
// defined in entry_amd64.s
func ExitRun(reason, status uint64)
