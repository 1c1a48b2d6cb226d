// Package cpustate reads what a run's figures depend on besides the code
// measured: the core clock (APERF/MPERF, the P-state the firmware left and
// the one ptilab requests), the SMIs that steal time from a repeat, and
// the firmware's CPU state at entry (the cpu-state record). It runs in Go
// outside kernel mode; every MSR it reads or writes goes through the
// #GP-safe accessors, so an MSR the CPU (or the emulator) lacks reads as
// unsupported instead of faulting. Through the CPU interface the same
// code runs against the hardware and, in tests, against a fake bank of
// real CPUs' CPUID leaves and MSR values. The exception is the timing
// sample (sample.go): Sample, the counters read before and after every
// measured repeat, is read by RDMSR of MSRs already known to exist
// (ReadSample in Go, pti's and the 32-bit kernel's sample calls in
// assembly), and Delta and Ratio work on it.
//
// References: Intel SDM Vol. 3B, 15.2 (APERF/MPERF, P-states), 15.4 (HWP),
// 34 (SMM); Vol. 4, Tables 2-2 and the model tables; Linux
// tools/power/x86/turbostat/turbostat.c.
package cpustate

import "github.com/ptilab/ptilab/amd64"

// CPU is the processor as this package reads it: CPUID, #GP-safe MSR
// reads and writes, and the TSC.
type CPU interface {
	CPUID(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)
	// ReadMSR returns the MSR and false when reading it raised #GP.
	ReadMSR(msr uint32) (uint64, bool)
	// WriteMSR reports false when the write raised #GP.
	WriteMSR(msr uint32, val uint64) bool
	TSC() uint64
}

// Hardware is the CPU the code runs on (package amd64; the kernel's #GP
// fix-up makes the MSR accesses safe).
type Hardware struct{}

func (Hardware) CPUID(leaf, subleaf uint32) (uint32, uint32, uint32, uint32) {
	return amd64.CPUID(leaf, subleaf)
}
func (Hardware) ReadMSR(msr uint32) (uint64, bool)    { return amd64.ReadMSRSafe(msr) }
func (Hardware) WriteMSR(msr uint32, val uint64) bool { return amd64.WriteMSRSafe(msr, val) }
func (Hardware) TSC() uint64                          { return amd64.RDTSC() }

// MSR is an MSR's value as read, or OK false when the read raised #GP
// (or was not attempted: the CPUID bit that announces it is clear).
type MSR struct {
	Value uint64
	OK    bool
}

func read(c CPU, msr uint32) MSR {
	v, ok := c.ReadMSR(msr)
	return MSR{v, ok}
}

// maxLeaf is CPUID.0H:EAX, and whether the vendor is Intel.
func maxLeaf(c CPU) (uint32, bool) {
	a, b, cx, d := c.CPUID(0, 0)
	// "GenuineIntel" in EBX, EDX, ECX.
	return a, b == 0x756e6547 && d == 0x49656e69 && cx == 0x6c65746e
}

// leaf returns CPUID leaf (subleaf 0) when max reaches it, else zeros.
func leaf(c CPU, max, l uint32) (a, b, cx, d uint32) {
	if max < l {
		return 0, 0, 0, 0
	}
	return c.CPUID(l, 0)
}

// signature returns the display family, model and stepping in
// CPUID.01H:EAX (SDM Vol. 2A, CPUID, Figure 3-6; Linux
// arch/x86/lib/cpu.c), zeros where max does not reach leaf 1.
func signature(c CPU, max uint32) (family, model, stepping uint32) {
	sig, _, _, _ := leaf(c, max, 1)
	family = (sig >> 8) & 0xf
	if family == 0xf {
		family += (sig >> 20) & 0xff
	}
	model = (sig >> 4) & 0xf
	if family >= 6 {
		model += ((sig >> 16) & 0xf) << 4
	}
	return family, model, sig & 0xf
}
