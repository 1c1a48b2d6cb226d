package i386pae

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/i386pae/layout"
)

// Program is a ring-3 program of the 32-bit world.
type Program uint8

const (
	// Syscalls times system calls (Params N, R, Nr, Arg, Entry).
	Syscalls Program = iota
	// Probe reads Params.Addr.
	Probe
	// Ping is the timing side of the ping-pong (tasks kernel): its
	// parameters in its data page (layout.ParamN, ParamR, ParamEntry,
	// ParamNoRDTSCP, ParamPingOut, ParamPingIn, ParamToken).
	Ping
	// Pong replies to ping: layout.ParamEntry, ParamPongIn, ParamPongOut,
	// ParamPongToken in its data page.
	Pong
	// MsgStart gives sched-messaging's start signal: EBX the ready pipe's
	// read descriptor, ECX the wake pipe's write descriptor, EDX the
	// tasks, ESI a buffer of that many bytes, EDI where to store the start
	// TSC. The messaging programs make their calls as ParamEntry says.
	MsgStart
	// MsgSender is a sched-messaging sender: EBX its group's first
	// receiver's write descriptor (the others follow), ECX the receivers,
	// EDX the loops, ESI the message, EDI its size, EBP the ready
	// descriptor | the wake descriptor << 16.
	MsgSender
	// MsgReceiver is a sched-messaging receiver: EBX its read descriptor,
	// ECX the messages, EDX their size, ESI a buffer, EDI where to store
	// the count and the sum (two 8-byte words), EBP as MsgSender's.
	MsgReceiver
)

// programs are the blob offsets of the programs, by the name mkblob gives
// each routine of user_386.s (kernel32_sym.go).
var programs = map[Program]uint32{
	Syscalls: offUserSyscalls, Probe: offUserProbe, Ping: offUserPing, Pong: offUserPong,
	MsgStart: offUserMsgStart, MsgSender: offUserMsgSender, MsgReceiver: offUserMsgReceiver,
}

// programEntry returns the address of a program in every process.
func programEntry(p Program) (uint32, bool) {
	off, ok := programs[p]
	return userVA(off), ok
}

// Params are a run's parameters, written to the task's data page.
type Params struct {
	N, R     uint32 // calls per repeat, repeats (at most layout.MaxRepeats)
	Nr, Arg  uint32 // the system call and its argument (EBX)
	Empty    bool   // time the loop without the system calls
	NoRDTSCP bool   // end stamps with LFENCE;RDTSC;LFENCE
	// Sample makes the sample call before each repeat and after the last
	// (layout.ParamSample; Samples returns what it read).
	Sample bool
	Addr   uint32 // Probe: the address to read
	// File runs the task under the tasks kernel (linux trampolines: see
	// NewTasks), its process with descriptor 3 open on a kernel file of
	// File bytes, for lseek; 0: without the tasks kernel.
	File uint32
}

// Run runs program p in ring 3 of the 32-bit world under s (from Plan)
// with params, in the main process, and returns how it ended. Setup must
// have run.
func Run(s Switch, p Program, params Params) (Result, error) {
	if !world.ready {
		return Result{}, errors.New("i386pae: Setup has not run")
	}
	if params.R > layout.MaxRepeats {
		return Result{}, fmt.Errorf("i386pae: %d repeats: at most %d", params.R, layout.MaxRepeats)
	}
	eip, ok := programEntry(p)
	if !ok || p != Syscalls && p != Probe {
		return Result{}, fmt.Errorf("i386pae: program %d does not run alone", p)
	}
	data := world.main.DataPages()[:4096]
	clear(data)
	put := func(off int, v uint32) { binary.LittleEndian.PutUint32(data[off:], v) }
	entry := s.entry
	if params.Empty {
		entry = layout.EntryNone
	}
	put(layout.ParamN, params.N)
	put(layout.ParamR, params.R)
	put(layout.ParamNr, params.Nr)
	put(layout.ParamArg, params.Arg)
	put(layout.ParamEntry, entry)
	if params.NoRDTSCP {
		put(layout.ParamNoRDTSCP, 1)
	}
	if params.Sample {
		put(layout.ParamSample, SampleBy(s.entry)) // the calls' entry, in the empty loop too
	}
	put(layout.ParamAddr, params.Addr)

	var r Result
	var err error
	if params.File != 0 {
		r, err = runWithFile(s, p, params.File)
	} else {
		r, err = start(s, world.main, eip, layout.UserStackTop, [6]uint32{}, false)
	}
	if err != nil {
		return r, err
	}
	r.Value = binary.LittleEndian.Uint32(data[layout.ParamValue:])
	if p == Syscalls && r.Reason == layout.ReasonExit {
		r.Cycles = make([]uint64, params.R)
		for i := range r.Cycles {
			r.Cycles[i] = binary.LittleEndian.Uint64(data[layout.ParamResults+8*i:])
		}
	}
	return r, nil
}
