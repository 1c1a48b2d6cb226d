package tlb

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/amd64"
)

// TestFlushOps: the table's operations in order, with their operands on
// the kernel's table and target page; on a CPU without PCID, INVPCID and
// global pages, the operations that need them say why they cannot run.
func TestFlushOps(t *testing.T) {
	saved := amd64.Features
	t.Cleanup(func() { amd64.Features = saved })
	fc := FlushCost{Root: 0x1000000, Target: 0x2000, Live: 0x3000}
	names := func(ops []FlushOp) (n []string, missing []string) {
		for _, op := range ops {
			n = append(n, op.Name)
			missing = append(missing, op.Missing)
		}
		return n, missing
	}

	amd64.Features.PCID, amd64.Features.INVPCID, amd64.Features.PGE = true, true, true
	ops := fc.Ops()
	n, missing := names(ops)
	assert.Equal(t, []string{"mov cr3", "mov cr3 pcid noflush", "mov cr3 pcid", "invlpg", "invlpg live",
		"invpcid 0", "invpcid 1", "invpcid 2", "invpcid 3", "cr4.pge toggle"}, n)
	assert.Equal(t, make([]string, 10), missing, "all supported")
	assert.Equal(t, FlushOp{Name: "mov cr3 pcid noflush", Title: "MOV to CR3, PCID 0, NOFLUSH", Op: FlushCR3,
		A: 0x1000000 | amd64.CR3_NOFLUSH, PCIDE: true}, ops[1])
	assert.Equal(t, FlushOp{Name: "invlpg", Title: "INVLPG of a page the TLB does not hold", Op: FlushINVLPG, A: 0x2000}, ops[3])
	assert.Equal(t, FlushOp{Name: "invlpg live", Title: "load + INVLPG of a just-used page", Op: FlushINVLPGLive, A: 0x3000}, ops[4],
		"its own page: the INVLPG row's stays untouched")
	assert.Equal(t, FlushOp{Name: "invpcid 2", Title: "INVPCID type 2 (all, global too)", Op: FlushINVPCID, A: 2, PCIDE: true}, ops[7])

	amd64.Features.PCID, amd64.Features.INVPCID, amd64.Features.PGE = false, false, false
	_, missing = names(fc.Ops())
	assert.Equal(t, []string{"", noPCID, noPCID, "", "", noINVPCID, noINVPCID, noINVPCID, noINVPCID, noPGE}, missing)
}
