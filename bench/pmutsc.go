package bench

import (
	"github.com/ptilab/ptilab/pmu"
)

// A test image's stand-in for the PMU (the build tag ptilab_pmu_tsc,
// pmuTSCStandIn): where the PMU cannot count (Bochs's models list a
// version in CPUID.0AH but refuse the first WRMSR), startPMU names
// IA32_TIME_STAMP_COUNTER to both worlds' sample calls in fixed counter
// 0's slot, as "instructions". Under Bochs the TSC counts instructions,
// and RDMSR 10H reads it, so every figure then carries an
// instructions-retired count read exactly as the PMU's would be (by the
// 64-bit sysSample, kernel32's sample, and Go between runs), and the
// cross-check runs end to end: test/bochs_test.go TestBochsPMUCheckTSC
// expects "ok" on every exact path of both worlds. (QEMU 7.2's TCG, whose
// TSC counts instructions under -icount too, answers RDMSR 10H with a
// value that does not move: seen here, every delta 0.) The product never
// builds it.

// msrIA32TSC is IA32_TIME_STAMP_COUNTER (SDM Vol. 4, Table 2-2: 10H).
const msrIA32TSC = 0x10

// tscStandIn is the PMU state of the stand-in: fixed counter 0's slot
// read from IA32_TSC (64 bits), nothing programmed.
func tscStandIn() pmuState {
	sess, _ := pmu.NewSession(pmu.Caps{Version: 2, FixedMask: 1, FixedCount: 1, FixedWidth: 64}, nil)
	st := pmuState{on: true, standIn: true, sess: sess}
	st.names[0], st.msrs[0] = pmuFixedNames[0], msrIA32TSC
	return st
}

// pmuStandInNote is the log line's note of the stand-in.
const pmuStandInNote = "test image (ptilab_pmu_tsc): IA32_TSC read as instructions, which the TSC counts under Bochs"
