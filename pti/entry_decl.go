package pti

// Assembly of entry_amd64.s. The trampolines (sysMinimal*, sysLinux*),
// toUser and excEntries are copied into the entry area and run there; see
// that file for each one's register contract.

// enterUser runs the prepared task in ring 3 and returns when it has
// exited or a CPU exception ended it; entryData says which. Interrupts
// must be masked (they always are: see goos).
//
// defined in entry_amd64.s
func enterUser()

// routines writes the addresses of the assembly routines, in the order of
// the routine* constants, into t.
//
// defined in entry_amd64.s
//
//go:noescape
func routines(t *[routineCount]uint64)

// Indexes of routines' results.
const (
	routineMinimalOff = iota
	routineMinimalOn
	routineMinimalPCID
	routineLinuxOff
	routineLinuxOn
	routineLinuxPCID
	routineToUser
	routineExcEntries
	routineGetppid
	routineWork
	routineExitRun
	routineNoSys
	routineRunExit
	routineCount
)

// ExitRun ends the run from a Go system-call handler (package tasks) with
// reason and status, as the exit handler and the exception path do: it
// jumps to runExit, which restores Go's context and returns from
// enterUser; the kernel stack the handler ran on is abandoned. Call it
// only in a system call of a run.
//
// defined in entry_amd64.s
func ExitRun(reason, status uint64)
