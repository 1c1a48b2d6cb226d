package main

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/cpustate"
)

// A test image's probe of the ways out (build tag ptilab_msr_probe:
// msrProbeOn). No emulator has the MSRs ptilab gives back at the end:
// QEMU's TCG has neither a PMU nor the P-state MSRs, Bochs's models list
// a PMU but lack its MSRs, and MSR_PLATFORM_INFO. So before the plan's
// deliberate fault and the benchmarks, the test image saves two MSRs that
// both emulators have in the same registry (cpustate.Saved): IA32_TSC_AUX,
// which it then changes (ptilab never reads RDTSCP's ECX), and
// IA32_EFER, left unchanged but given back through an MSR whose WRMSR of
// that value raises #GP (msrProbeNoWrite). The boot tests then see
// each way out write IA32_TSC_AUX back and survive the #GP, from a kernel
// fault's exception handler too (goos's restoreMSRs). The product never
// builds it.

// msrProbeNoWrite is AMD's VM_HSAVE_PA (C0010117H, AMD APM Vol. 2,
// 15.30.4), which Intel's CPUs and Bochs's Intel models lack, and whose
// WRMSR QEMU's TCG refuses with #GP when the value's low 12 bits are not
// 0, as IA32_EFER's are in long mode (LME, LMA). An MSR QEMU's TCG does
// not know raises no #GP there: its WRMSR ignores it.
const msrProbeNoWrite = 0xc0010117

// msrProbeMark is what the probe writes to IA32_TSC_AUX (its low 32
// bits are writable).
const msrProbeMark = 0x5a5a

// msrProbe saves and changes the probe's MSRs (in a test image) and says
// so: the values saved, and IA32_TSC_AUX as read after the change.
func msrProbe(r *bench.Reporter) {
	if !msrProbeOn {
		return
	}
	c := cpustate.Hardware{}
	aux := "not saved: RDMSR raised #GP"
	if cpustate.Saved.Save(c, amd64.MSR_TSC_AUX, "IA32_TSC_AUX") {
		v, _ := cpustate.Saved.Value(amd64.MSR_TSC_AUX)
		c.WriteMSR(amd64.MSR_TSC_AUX, v^msrProbeMark)
		now, _ := c.ReadMSR(amd64.MSR_TSC_AUX)
		aux = fmt.Sprintf("saved %#x, now %#x", v, now)
	}
	efer := "not saved: RDMSR raised #GP"
	if cpustate.Saved.SaveVia(c, amd64.MSR_EFER, msrProbeNoWrite, "IA32_EFER") {
		v, _ := cpustate.Saved.Value(amd64.MSR_EFER)
		efer = fmt.Sprintf("saved %#x, to be written back through %#x", v, msrProbeNoWrite)
	}
	r.Printf("ptilab: MSR probe (test image, ptilab_msr_probe): IA32_TSC_AUX %s; IA32_EFER %s", aux, efer)
}
