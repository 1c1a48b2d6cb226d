package cpustate

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/amd64"
)

// A repeat is disturbed when an SMI or an NMI arrived during it: the
// deltas of MSR_SMI_COUNT and of the NMI count; the clock counters
// moving is not a disturbance.
func TestSampleDisturbed(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    Sample
		want bool
	}{
		{"nothing", Sample{}, false},
		{"clock only", Sample{APERF: 1_600_000, MPERF: 3_500_000}, false},
		{"an SMI", Sample{APERF: 1, MPERF: 2, SMI: 1}, true},
		{"an NMI", Sample{APERF: 1, MPERF: 2, NMI: 1}, true},
		{"both", Sample{SMI: 2, NMI: 3}, true},
	} {
		assert.Equal(t, tt.want, tt.d.Disturbed(), tt.name)
	}
}

// ReadSample reads the NMI count when asked, and nothing it was not asked
// for (no RDMSR here: the MSR sources stay off on the host).
func TestReadSampleNMI(t *testing.T) {
	var s Sample
	ReadSample(0, nil, &s)
	assert.Equal(t, Sample{}, s, "no source")
	before := amd64.NMICount()
	amd64.AddNMIs(2)
	ReadSample(SampleNMI, nil, &s)
	assert.Equal(t, Sample{NMI: before + 2}, s)
	ReadSample(SampleNMI|SamplePMU, &SamplePMCMSRs{}, &s)
	assert.Equal(t, Sample{NMI: before + 2}, s, "no counter named: no RDMSR")
}
