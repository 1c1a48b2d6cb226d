package pti

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

	"github.com/ptilab/ptilab/exitstatus"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
)

// programTable holds an address per ring-3 program of user_amd64.s, in the
// field of its name (its symbol is "user" and the name): where the program
// is linked (routines fills it, through go_asm.h's offsets) or where it
// starts in every process (env.progs). A test on the built image checks
// that routines sets every field to the symbol of its name.
type programTable struct {
	Syscalls, Empty, Probe, Ping, Pong, MsgStart, MsgSender, MsgReceiver uint64
	OracleCal, Oracle                                                    uint64
	Sweep                                                                uint64
	SelfNMI                                                              uint64
}

// Program is a ring-3 program a task runs, named by its field in
// programTable (its value is the field's offset). Programs keep no state
// in the SSE registers across system calls: the Go handlers of package
// tasks use them and the context switch does not save them.
type Program uintptr

// The ring-3 programs and their arguments (RDI, RSI, RDX, R10, R8, R9).
const (
	// Syscalls times system calls: args N, R, results, nr, arg, no-RDTSCP.
	Syscalls = Program(unsafe.Offsetof(programTable{}.Syscalls))
	// Empty times the same loop without them.
	Empty = Program(unsafe.Offsetof(programTable{}.Empty))
	// Probe reads an address: args address, where to store it.
	Probe = Program(unsafe.Offsetof(programTable{}.Probe))
	// Ping is the timing side of the ping-pong: args N, R, results,
	// write fd | read fd<<32, a 3-byte token buffer (byte 2: the mark
	// pong adds), no-RDTSCP. It needs the system calls of package tasks.
	Ping = Program(unsafe.Offsetof(programTable{}.Ping))
	// Pong replies to what it reads with its mark added: args read fd,
	// write fd, a 2-byte buffer (byte 1: the mark).
	Pong = Program(unsafe.Offsetof(programTable{}.Pong))
	// MsgStart gives sched-messaging's start signal: args ready fd, wake
	// fd, tasks, a buffer, where to store the start TSC.
	MsgStart = Program(unsafe.Offsetof(programTable{}.MsgStart))
	// MsgSender is a sched-messaging sender: args first write fd,
	// receivers, loops, message, message size, ready fd | wake fd<<32.
	MsgSender = Program(unsafe.Offsetof(programTable{}.MsgSender))
	// MsgReceiver is a sched-messaging receiver: args read fd, messages,
	// message size, buffer, results (count, sum), ready fd | wake fd<<32.
	MsgReceiver = Program(unsafe.Offsetof(programTable{}.MsgReceiver))
	// OracleCal times a load of a cached and of a flushed line: args the
	// line, samples, where to store them, the no-RDTSCP flag (bit 32).
	OracleCal = Program(unsafe.Offsetof(programTable{}.OracleCal))
	// Oracle is the leak oracle's Meltdown attempt on one byte: args the
	// byte's address, the probe array, attempts, the hit counters, the
	// hit threshold, the secret call's number or 0 with the no-RDTSCP flag
	// in bit 32. Run it with StartRecovering.
	Oracle = Program(unsafe.Offsetof(programTable{}.Oracle))
	// Sweep times system calls each followed by a sweep of pages (the TLB
	// working-set sweep): args N, R, results, nr, a tlb.SweepBlock (the
	// call's RDI, RSI, RDX and the pages to touch), no-RDTSCP. Empty is
	// its empty loop.
	Sweep = Program(unsafe.Offsetof(programTable{}.Sweep))
	// SelfNMI sends its CPU NMIs from ring 3 (test images: MapAPIC):
	// args the ICR low word's user address, N, the ICR high word.
	SelfNMI = Program(unsafe.Offsetof(programTable{}.SelfNMI))
)

// at returns program p's field of t.
func (t *programTable) at(p Program) *uint64 { return (*uint64)(unsafe.Add(unsafe.Pointer(t), p)) }

// String returns the program's name: its field's.
func (p Program) String() string {
	if f, ok := fieldAt(reflect.TypeFor[programTable](), uintptr(p)); ok {
		return f.Name
	}
	return fmt.Sprintf("Program(%d)", uintptr(p))
}

// fieldAt returns the field of struct type t at offset off.
func fieldAt(t reflect.Type, off uintptr) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Offset == off {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// The ring-3 programs' exit statuses, for user_amd64.s (go_asm.h).
const (
	pingWriteFailed = exitstatus.PingWriteFailed
	pingReadFailed  = exitstatus.PingReadFailed
	pingBadReply    = exitstatus.PingBadReply
	pongWriteFailed = exitstatus.PongWriteFailed
	pongReadFailed  = exitstatus.PongReadFailed
	msgReadyFailed  = exitstatus.MsgReadyFailed
	msgWaitFailed   = exitstatus.MsgWaitFailed
	msgWriteFailed  = exitstatus.MsgWriteFailed
	msgReadFailed   = exitstatus.MsgReadFailed
)

// ProgramEntry returns the address of program p in every process's address
// space.
func ProgramEntry(p Program) uint64 { return *env.progs.at(p) }

// PlacePrograms copies the ring-3 programs into the code pages every
// process shares again, offset bytes further than Setup put them (a loop
// offset, experiment.CheckLoopOffset; 0: Setup's places), and
// ProgramEntry gives their new places from then on. The programs are
// position independent (relative jumps only): the same instructions run.
// Each starts 64-byte aligned plus offset, so that a timed loop's jumps
// keep their places in their 32-byte chunks (user_amd64.s, TIMED). Call
// it between runs; it fails, changing nothing, before Setup, on an
// offset that is not a loop offset and on one that leaves the programs
// no room.
func PlacePrograms(offset int) error {
	if !env.ready {
		return errors.New("pti: the programs are placed by Setup first")
	}
	if err := experiment.CheckLoopOffset(offset); err != nil {
		return fmt.Errorf("pti: %w", err)
	}
	var e entryRoutines
	var k kernelRoutines
	var link, at programTable
	routines(&e, &k, &link)
	pages := goos.Frames(env.code, UserCodePages)
	buf := make([]byte, len(pages))
	kept := env.copied
	env.copied = slices.DeleteFunc(slices.Clone(kept), func(c Copied) bool {
		return c.At >= UserCode && c.At < UserCode+UserCodePages*4096
	})
	if _, err := place(&link, &at, buf[offset:], UserCode+uint64(offset), "code pages"); err != nil {
		env.copied = kept
		return err
	}
	copy(pages, buf)
	env.progs = at
	return nil
}
