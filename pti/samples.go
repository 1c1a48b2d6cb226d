package pti

import (
	"unsafe"

	"github.com/ptilab/ptilab/cpustate"
)

// MaxSamples is the most samples a run records: one before each repeat of
// a timing loop and one after its last (the 64-bit programs store at most
// 7680 counts).
const MaxSamples = 8192

// samples is the sample call's buffer, in the kernel image (mapped on the
// kernel side of every task's address space).
var samples [MaxSamples]cpustate.Sample

// SetSampling makes the sample call read the counters src names from the
// next run on (0: none; the calls still count).
func SetSampling(src cpustate.SampleSources) { sampleSrc = src }

var sampleSrc cpustate.SampleSources

// SetSamplePMCs names the performance counters the sample call reads with
// cpustate.SamplePMU from the next run on.
func SetSamplePMCs(m cpustate.SamplePMCMSRs) { pmcMSRs = m }

var pmcMSRs cpustate.SamplePMCMSRs

// resetSamples empties the buffer for a run (Start).
func resetSamples(d *entryData) {
	d.SampleSrc = uint64(sampleSrc)
	d.SampleBuf = uint64(uintptr(unsafe.Pointer(&samples[0])))
	d.SampleCap = MaxSamples
	d.SampleN = 0
	for i, msr := range pmcMSRs {
		d.SampleMSR[i] = uint64(msr)
	}
}

// Samples returns the samples the last run recorded, in order: the
// counters SetSampling did not name read 0. The slice is the buffer's: the
// next run overwrites it.
func Samples() []cpustate.Sample {
	d := data()
	s := samples[:min(d.SampleN, MaxSamples)]
	for i := range s {
		if sampleSrc&cpustate.SampleAPERF == 0 {
			s[i].APERF, s[i].MPERF = 0, 0
		}
		if sampleSrc&cpustate.SampleSMI == 0 {
			s[i].SMI = 0
		}
		if sampleSrc&cpustate.SampleNMI == 0 {
			s[i].NMI = 0
		}
		if sampleSrc&cpustate.SamplePMU == 0 {
			s[i].PMC = [cpustate.SamplePMCs]uint64{}
		}
	}
	return s
}
