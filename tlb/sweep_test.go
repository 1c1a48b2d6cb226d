package tlb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/testkit/hosttables"
)

// userSlot is a user PML4 slot's base for the tests (pti's UserBase).
const userSlot = 0x00007f8000000000

// TestMapSweepRegion maps a user region without execute-disable and the
// kernel region with it into a table of their own: every one of
// SweepMaxPages pages maps the region's frame, read-only, user or
// supervisor; nothing else is mapped.
func TestMapSweepRegion(t *testing.T) {
	mem, kernel := kernelTable(t)
	root, ok := mem.NewTable()
	require.True(t, ok)
	user := SweepRegion{Base: userSlot + SweepUser2MOffset, PageSize: amd64.PageSize2M, Frame: 0x800000, User: true}
	kern := SweepRegion{Base: SweepKernel4K, PageSize: amd64.PageSize, Frame: 0x501000}
	require.NoError(t, MapSweep(mem, kernel, root, user, false))
	require.NoError(t, MapSweep(mem, kernel, root, kern, true))
	pt := amd64.PageTable[*hostMem]{Root: root, Mem: mem}
	got := hosttables.Walked(pt.Walk)
	require.Len(t, got, 2*SweepMaxPages)
	for i, m := range got {
		r, flags := user, uint64(amd64.PTE_P|amd64.PTE_U)
		if i >= SweepMaxPages {
			r, flags = kern, amd64.PTE_P|amd64.PTE_NX
		}
		va := r.Base + uint64(i%SweepMaxPages)*r.PageSize
		require.Equal(t, amd64.Mapping{VA: va, PA: r.Frame, Size: r.PageSize, Flags: flags}, m, "%#x", va)
	}
	assert.Equal(t, uint64(SweepKernelPML4Slot), uint64(SweepKernel4K)>>39&511)
	assert.Less(t, uint64(SweepUser4KOffset+SweepMaxPages*amd64.PageSize), uint64(SweepUser2MOffset), "the 4 KiB region ends before the 2 MiB one")
	assert.LessOrEqual(t, uint64(SweepUser2MOffset+SweepMaxPages*amd64.PageSize2M), uint64(1)<<39, "both in one PML4 slot")
}

// TestMapSweepErrors: a frame off its page boundary, a page size the
// sweep has not, a kernel region of 2 MiB pages, and a kernel whose PML4
// slot for the kernel region is in use are errors.
func TestMapSweepErrors(t *testing.T) {
	mem, kernel := kernelTable(t)
	root, ok := mem.NewTable()
	require.True(t, ok)
	assert.ErrorContains(t, MapSweep(mem, kernel, root, SweepRegion{Base: userSlot + SweepUser2MOffset, PageSize: amd64.PageSize2M, Frame: 0x501000, User: true}, true), "want a 4 KiB or 2 MiB page on its boundary")
	assert.ErrorContains(t, MapSweep(mem, kernel, root, SweepRegion{Base: userSlot + SweepUser4KOffset, PageSize: amd64.PageSize1G, User: true}, true), "want a 4 KiB or 2 MiB page")
	assert.ErrorContains(t, MapSweep(mem, kernel, root, SweepRegion{Base: SweepKernel4K, PageSize: amd64.PageSize2M}, true), "the kernel sweep region has 4 KiB pages")
	require.True(t, kernel.Map(SweepKernel4K, 0x9000, amd64.PageSize, amd64.PageSize, amd64.PTE_W))
	assert.ErrorContains(t, MapSweep(mem, kernel, root, SweepRegion{Base: SweepKernel4K, PageSize: amd64.PageSize, Frame: 0x501000}, true), "PML4 slot 510 of the kernel's table is in use")
}
