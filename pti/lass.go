package pti

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/goos"
)

// The lass mode (experiment.LASS): off's one table, with CR4.LASS set
// while ring 3 runs (linear-address-space separation, SDM Vol. 3A, chapter 4;
// CPUID.(EAX=07H,ECX=1):EAX[6]). With LASS a user-mode access to an
// address with bit 63 set is #GP (#SS for a stack access) before any page
// walk, and a supervisor-mode instruction fetch from an address with bit
// 63 clear is #GP too (a supervisor data access to the lower half only
// with CR4.SMAP set and RFLAGS.AC clear: runs clear SMAP).
//
// ptilab's Go kernel runs identity-mapped in the lower half, so ring 0
// may execute only upper-half code while LASS is set: the entry area's
// trampolines, exception and NMI entries, toUser, and copies of the
// built-in handlers in a page of their own (LASSAreas). So (the first of
// the two ways docs/how-it-works.md's "LASS" weighs): toUser sets LASS
// last (entryData.UserCR4; enterUser cannot, its next fetch being in the
// lower half); the run's
// system-call table points at the copies (lassTable); the exit call and
// the exception path clear LASS (LASS_OFF) before they jump to runExit in
// the lower half. A system call whose handler is Go code (the tasks
// kernel's, lseek's) cannot run under lass: its configuration is
// unsupported. Moving the Go kernel to the upper half (option (b)) would
// lift that, at the cost of relinking the runtime above its Linux
// layout; what LASS protects here is therefore the upper half only (the
// entry area), not the Go kernel's lower-half mappings, which the page
// tables' U/S bit alone guards, as under off.

// EntryLASSText and LASSPages: a lass run's handler page, after the FRED
// pages (its frame follows theirs), mapped in the lass mode's table only.
const (
	EntryLASSText = EntryFREDText + FREDPages*amd64.PageSize
	LASSPages     = 1
)

// LASSAreas are the pages the lass mode's table maps beyond off's.
var LASSAreas = []Area{
	{Name: "LASS handlers", VA: EntryLASSText, Pages: LASSPages, Flags: flagsEntryText,
		Holds: "upper-half copies of the built-in handlers (getppid, work, sample, exit, touch, secret, ENOSYS), which ring 0 may execute while CR4.LASS is set"},
}

// lassRoutines are the handlers Setup copies into the lass handler page:
// getppid's and work's as OnNoSwitch copies them, and the lass copies of
// the others (entry_amd64.s: lassX, with sysX's bodies; lassExitRun
// clears LASS before runExit).
type lassRoutines struct {
	NsGetppid, NsWork                             uint64
	LassSample, LassExitRun, LassNoSys, LassTouch uint64
	LassSecret, LassSelfNMI                       uint64
}

// placeLASS copies the lass handlers, linked at the fields of link, into
// their page and maps each kernel handler to its copy (env.lassCopy).
func placeLASS(link *lassRoutines) error {
	base := env.entry + (EntryLASSText - EntryBase)
	if _, err := place(link, &env.lass, goos.Frames(base, LASSPages), EntryLASSText, "LASS handler page"); err != nil {
		return err
	}
	k, l := &env.kern, &env.lass
	env.lassCopy = map[uint64]uint64{
		k.SysGetppid: l.NsGetppid, k.SysWork: l.NsWork, k.SysSample: l.LassSample,
		k.SysExitRun: l.LassExitRun, k.SysNoSys: l.LassNoSys, k.SysTouch: l.LassTouch,
		k.SysSecret: l.LassSecret, k.SysSelfNMI: l.LassSelfNMI,
	}
	return nil
}

// lassHandlerError is lassTable's error: system call N's handler has no
// upper-half copy. It is an ErrUnsupported (errors.Is), with its own
// words: the CPU has LASS, ptilab's layout is what refuses.
type lassHandlerError int

func (e lassHandlerError) Error() string {
	return fmt.Sprintf("system call %d's handler is Go code in the lower half, where LASS forbids ring-0 instruction fetches", int(e))
}

func (lassHandlerError) Is(target error) bool { return target == ErrUnsupported }

// lassTable points d's system-call table at the upper-half copies of its
// handlers for a lass run, and returns what puts the table back. A
// handler with no copy (Go code set by SetSyscall: the tasks kernel's,
// lseek's) cannot run while LASS is set: the error is a lassHandlerError
// and the table is left as it was.
func lassTable(d *entryData) (restore func(), err error) {
	saved := d.Table
	for nr, h := range saved {
		c, ok := env.lassCopy[h]
		if !ok {
			d.Table = saved
			return nil, lassHandlerError(nr)
		}
		d.Table[nr] = c
	}
	return func() { d.Table = saved }, nil
}
