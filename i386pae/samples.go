package i386pae

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// sampleSrc are the counters the 32-bit kernel's sample call reads
// (SetSampling).
var sampleSrc amd64.SampleSources

// SetSampling makes the sample call (layout.SysSample) of the runs from
// now on read the counters src names (0: none; the calls still count).
// The CPU must have them: the 32-bit kernel reads them with RDMSR.
func SetSampling(src amd64.SampleSources) { sampleSrc = src }

// SetSamplePMCs names the performance counters the sample call reads
// with amd64.SamplePMU from the next run on (by amd64.Sample.PMC slot, 0
// for a slot not read): counters the 64-bit side programmed and started
// (package pmu), which count on across the switch to the 32-bit world.
func SetSamplePMCs(m amd64.SamplePMCMSRs) { pmcMSRs = m }

var pmcMSRs amd64.SamplePMCMSRs

// SampleBy is layout.ParamSample's value for sample calls made by the
// entry e (layout.EntrySysenter or EntryInt80: Switch.CallEntry).
func SampleBy(e uint32) uint32 { return layout.SampleSysenter + e - layout.EntrySysenter }

// Samples returns the samples the last run's sample calls recorded, in
// order, as amd64.Samples (the counters SetSampling did not name read 0).
func Samples() []amd64.Sample {
	k := kstate()
	out := make([]amd64.Sample, min(k.SampleN, layout.MaxSamples))
	word := func(w [2]uint32) uint64 { return uint64(w[0]) | uint64(w[1])<<32 }
	for i := range out {
		s := &k.Samples[i]
		if sampleSrc&amd64.SampleAPERF != 0 {
			out[i].APERF, out[i].MPERF = word(s.APERF), word(s.MPERF)
		}
		if sampleSrc&amd64.SampleSMI != 0 {
			out[i].SMI = word(s.SMI)
		}
		if sampleSrc&amd64.SampleNMI != 0 {
			out[i].NMI = word(s.NMI)
		}
		if sampleSrc&amd64.SamplePMU != 0 {
			for j, w := range s.PMC {
				out[i].PMC[j] = word(w)
			}
		}
	}
	return out
}
