//go:build 386 && kernel32host

package main

import (
	"fmt"
	"unsafe"

	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/tasks/core"
)

// The host seam: with the kernel32host build tag, which i386pae/mkblob
// never sets, this file replaces machine.go and the assembly, so that the
// tasks kernel's Go code (tasks.go and package tasks/core), unchanged, runs in an ordinary
// GOARCH=386 test process (the host tests, tasks_test.go). What the blob
// reaches by address, this file maps to host memory, as the 32-bit
// world's page tables would: the state at layout.State, the pipes' rings
// at layout.PipeBase (in every process's kernel side) and, in the user
// window, the loaded process's code, data and stack pages only. An
// address outside them is a page fault in the kernel: a panic (fault)
// that fails the test. setCR3 switches the user window between the
// processes' memories (keyed by their KernelCR3) and records each load;
// rdtsc counts; endRun panics with a runEnd the test recovers.

// space is a process's user memory: its data pages (layout.UserData to
// its DataEnd) and its stack pages (below layout.UserStackTop).
type space struct{ data, stack []byte }

// machine is the host's stand-in for the 32-bit world.
var machine struct {
	k      layout.KState
	code   []byte            // the user code pages, shared, read-only
	spaces map[uint32]*space // by KernelCR3
	rings  map[uint32][]byte // by pipe number
	cr3    uint32            // the loaded CR3
	cr3s   []uint32          // every setCR3, in order
	tsc    uint64
	frame  *layout.PtRegs // the running task's frame, at taskFrameVA (the top of the task stack)
	nmis   uint32         // CPUData.NMIs
}

// runEnd is how a run ended: endRun's arguments.
type runEnd struct{ reason, status uint32 }

// fault is a kernel access outside the mapped memory.
type fault struct {
	va, n uint32
	write bool
}

func (f fault) Error() string {
	return fmt.Sprintf("kernel32: page fault: %d bytes at %#x (write %v)", f.n, f.va, f.write)
}

// bytesAt returns the n bytes at va that the loaded address space maps,
// writable ones when write is set, or panics with a fault.
func bytesAt(va, n uint32, write bool) []byte {
	in := func(base uint32, m []byte) bool {
		return va >= base && uint64(va)+uint64(n) <= uint64(base)+uint64(len(m))
	}
	state := unsafe.Slice((*byte)(unsafe.Pointer(&machine.k)), unsafe.Sizeof(machine.k))
	sp := machine.spaces[machine.cr3]
	switch {
	case in(layout.State, state):
		return state[va-layout.State:][:n]
	case machine.frame != nil && in(taskFrameVA, frameBytes()):
		return frameBytes()[va-taskFrameVA:][:n]
	case va >= layout.PipeBase && va-layout.PipeBase < layout.MaxPipes*layout.PipeSize:
		p := (va - layout.PipeBase) / layout.PipeSize
		if r := machine.rings[p]; r != nil && in(layout.PipeBase+p*layout.PipeSize, r) {
			return r[va-layout.PipeBase-p*layout.PipeSize:][:n]
		}
	case sp != nil && in(layout.UserData, sp.data):
		return sp.data[va-layout.UserData:][:n]
	case sp != nil && in(layout.UserStackTop-uint32(len(sp.stack)), sp.stack):
		return sp.stack[va-(layout.UserStackTop-uint32(len(sp.stack))):][:n]
	case !write && in(layout.UserCode, machine.code):
		return machine.code[va-layout.UserCode:][:n]
	}
	panic(fault{va, n, write})
}

// frameBytes returns the frame at taskFrameVA as bytes.
func frameBytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(machine.frame)), unsafe.Sizeof(*machine.frame))
}

// ptr converts a kernel or user address to a pointer into host memory.
func ptr(va uint32) unsafe.Pointer { return unsafe.Pointer(&bytesAt(va, 1, true)[0]) }

func setCR3(v uint32) {
	machine.cr3 = v
	machine.cr3s = append(machine.cr3s, v)
}

func rdtsc() (lo, hi uint32) {
	machine.tsc++
	return uint32(machine.tsc), uint32(machine.tsc >> 32)
}

// copyBytes copies n bytes from src to dst, both mapped (dst writable),
// as REP MOVS does: nothing is touched when n is 0. It is package core's
// copy (core.HostCopy) in the host tests.
func copyBytes(dst, src, n uint32) {
	if n == 0 {
		return
	}
	copy(bytesAt(dst, n, true), bytesAt(src, n, false))
}

func init() {
	core.HostCopy = func(dst, src, n uintptr) { copyBytes(uint32(dst), uint32(src), uint32(n)) }
}

func endRun(reason, status uint32) { panic(runEnd{reason, status}) }

// sample records a sample as the blob's does, of the host's counters:
// APERF the TSC, MPERF twice it, MSR_SMI_COUNT the samples so far, the
// NMI count machine.nmis (the per-CPU NMIs'), a performance counter
// its MSR number low and the samples so far high; each
// only where KState.SampleSrc names it, and none past MaxSamples.
func sample() {
	k := &machine.k
	if k.SampleN >= layout.MaxSamples {
		return
	}
	s := &k.Samples[k.SampleN]
	k.SampleN++
	if k.SampleSrc&layout.SampleAPERF != 0 {
		machine.tsc++
		s.APERF = [2]uint32{uint32(machine.tsc), uint32(machine.tsc >> 32)}
		s.MPERF = [2]uint32{uint32(2 * machine.tsc), uint32(2 * machine.tsc >> 32)}
	}
	if k.SampleSrc&layout.SampleSMI != 0 {
		s.SMI = [2]uint32{k.SampleN - 1, 0}
	}
	if k.SampleSrc&layout.SampleNMI != 0 {
		s.NMI = [2]uint32{machine.nmis, 0}
	}
	if k.SampleSrc&layout.SamplePMU != 0 {
		for i, msr := range k.SampleMSR {
			if msr != 0 {
				s.PMC[i] = [2]uint32{msr, k.SampleN - 1}
			}
		}
	}
}

// main is the command's: the host build is only tested.
func main() {}
