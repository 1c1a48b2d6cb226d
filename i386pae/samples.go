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
	}
	return out
}
