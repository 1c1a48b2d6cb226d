package tlb

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/testkit/hosttables"
)

// The page tables of the host tests, in Go memory (testkit/hosttables).

type hostMem = hosttables.Memory[amd64.Table]

// kernelTable returns table memory in Go memory and, on it, a fake Go
// kernel's table: an identity map of [2 MiB, 8 MiB) in 2 MiB pages,
// supervisor-only, nothing in SweepKernelPML4Slot.
func kernelTable(t *testing.T) (*hostMem, amd64.PageTable[*hostMem]) {
	pt, mem := hosttables.NewPageTable(t, 64<<20, -1, amd64.New[*hostMem])
	require.True(t, pt.Map(2<<20, 2<<20, 6<<20, amd64.PageSize2M, amd64.PTE_W))
	return mem, pt
}
