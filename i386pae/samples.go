package i386pae

import (
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// sampleSrc are the counters the 32-bit kernel's sample call reads
// (SetSampling).
var sampleSrc cpustate.SampleSources

// SetSampling makes the sample call (layout.SysSample) of the runs from
// now on read the counters src names (0: none; the calls still count).
// The CPU must have them: the 32-bit kernel reads them with RDMSR.
func SetSampling(src cpustate.SampleSources) { sampleSrc = src }

// SetSamplePMCs names the performance counters the sample call reads
// with cpustate.SamplePMU from the next run on (by cpustate.Sample.PMC slot, 0
// for a slot not read): counters the 64-bit side programmed and started
// (package pmu), which count on across the switch to the 32-bit world.
func SetSamplePMCs(m cpustate.SamplePMCMSRs) { pmcMSRs = m }

var pmcMSRs cpustate.SamplePMCMSRs

// SampleBy is layout.ParamSample's value for sample calls made by the
// entry e (layout.EntrySysenter or EntryInt80: Switch.CallEntry).
func SampleBy(e uint32) uint32 { return layout.SampleSysenter + e - layout.EntrySysenter }

// Samples returns the samples the last run's sample calls recorded, in
// order, as cpustate.Samples (the counters SetSampling did not name read 0).
func Samples() []cpustate.Sample {
	k := kstate()
	out := make([]cpustate.Sample, min(k.SampleN, layout.MaxSamples))
	word := func(w [2]uint32) uint64 { return uint64(w[0]) | uint64(w[1])<<32 }
	for i := range out {
		s := &k.Samples[i]
		if sampleSrc&cpustate.SampleAPERF != 0 {
			out[i].APERF, out[i].MPERF = word(s.APERF), word(s.MPERF)
		}
		if sampleSrc&cpustate.SampleSMI != 0 {
			out[i].SMI = word(s.SMI)
		}
		if sampleSrc&cpustate.SampleNMI != 0 {
			out[i].NMI = word(s.NMI)
		}
		if sampleSrc&cpustate.SamplePMU != 0 {
			for j, w := range s.PMC {
				out[i].PMC[j] = word(w)
			}
		}
	}
	return out
}
