package cpustate

import "github.com/ptilab/ptilab/amd64"

// Sample is what is read in ring 0 before and after every measured
// repeat (pti's sample call, the worlds' loops): the core-clock counters
// and the counters of the events that disturb a measurement. A counter the
// CPU lacks reads 0 throughout. The fields are 8 bytes each, in this order,
// for the assembly that fills them (go_asm.h: sample_APERF ...).
type Sample struct {
	APERF uint64 // IA32_APERF
	MPERF uint64 // IA32_MPERF
	SMI   uint64 // MSR_SMI_COUNT[31:0]
	// NMI counts the NMIs taken (amd64.NMICount in Go and in the 64-bit world;
	// the 32-bit world's per-CPU count, monotonic within its run): only
	// its deltas mean anything.
	NMI uint64
	// PMC are performance-monitoring counters as read (raw, not masked to
	// their width): the MSRs SamplePMCMSRs names, 0 where it names none.
	// By convention (package bench) 0-2 are the fixed-function counters
	// IA32_FIXED_CTR0-2 and 3.. programmable IA32_PMCx.
	PMC [SamplePMCs]uint64
}

// SamplePMCs is the most performance-monitoring counters a Sample holds:
// the three fixed-function counters and SampleGP programmable ones.
const SamplePMCs = 3 + SampleGP

// SampleGP is the most programmable counters a Sample holds.
const SampleGP = 4

// SamplePMCMSRs are the MSRs (IA32_FIXED_CTRx at 309H+, IA32_PMCx at
// C1H+; SDM Vol. 4, Table 2-2) that SamplePMU reads into Sample.PMC, 0
// for a slot not read.
type SamplePMCMSRs [SamplePMCs]uint32

// Disturbed reports whether d, the change of the counters over a repeat
// (Delta), shows an event that disturbed it: an SMI or an NMI.
func (d Sample) Disturbed() bool { return d.SMI != 0 || d.NMI != 0 }

// SampleSources says which of a Sample's counters are read: the
// SampleAPERF and SampleSMI bits, set where a #GP-safe read of the MSR
// succeeded, and SampleNMI, which every CPU has (ptilab's own handlers
// count NMIs).
type SampleSources uint64

const (
	SampleAPERF SampleSources = 1 << 0 // APERF and MPERF are read
	SampleSMI   SampleSources = 1 << 1 // MSR_SMI_COUNT is read
	SampleNMI   SampleSources = 1 << 2 // the NMI count is read
	SamplePMU   SampleSources = 1 << 3 // the performance counters of a SamplePMCMSRs are read
)

// ReadSample reads the counters src names into s (the others stay 0),
// with SamplePMU the MSRs pmcs names into s.PMC. The MSRs must be known
// to exist (SampleSources from safe reads, counters a pmu.Session
// started): it uses amd64.RDMSR. The NMI count is amd64.NMICount's.
func ReadSample(src SampleSources, pmcs *SamplePMCMSRs, s *Sample) {
	if src&SampleAPERF != 0 {
		s.APERF = amd64.RDMSR(amd64.MSR_IA32_APERF)
		s.MPERF = amd64.RDMSR(amd64.MSR_IA32_MPERF)
	}
	if src&SampleSMI != 0 {
		s.SMI = amd64.RDMSR(amd64.MSR_SMI_COUNT) & 0xffffffff
	}
	if src&SampleNMI != 0 {
		s.NMI = amd64.NMICount()
	}
	if src&SamplePMU != 0 && pmcs != nil {
		for i, msr := range pmcs {
			if msr != 0 {
				s.PMC[i] = amd64.RDMSR(msr)
			}
		}
	}
}
