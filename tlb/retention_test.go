package tlb

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/amd64"
)

// TestRetentionProbes: the PCID probe loads the user PCID (flushing it),
// then the kernel PCID and the user PCID again, both with NOFLUSH; the
// global probe leaves its table for another and comes back, without
// PCIDs.
func TestRetentionProbes(t *testing.T) {
	p := PCIDProbe(0x5000|1, 0x5000|1|1<<11)
	assert.Equal(t, RetentionProbe{Probe: ProbePCID, First: 0x5801, Away: 0x5001 | amd64.CR3_NOFLUSH, Back: 0x5801 | amd64.CR3_NOFLUSH}, p)
	g := GlobalProbe(0x5000, 0x9000)
	assert.Equal(t, RetentionProbe{Probe: ProbeGlobal, First: 0x5000, Away: 0x9000, Back: 0x5000}, g)
}
