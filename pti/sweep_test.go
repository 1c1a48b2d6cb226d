package pti

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
)

// sweepRegions are the three sweep regions of a test process, each on a
// frame of its own.
var sweepRegions = []SweepRegion{
	{Base: SweepUser4K, PageSize: amd64.PageSize, Frame: 0x500000, User: true},
	{Base: SweepUser2M, PageSize: amd64.PageSize2M, Frame: 0x800000, User: true},
	{Base: SweepKernel4K, PageSize: amd64.PageSize, Frame: 0x501000},
}

// TestMapSweep walks both sides of a process with the three sweep regions
// mapped, in each mode: every one of a region's SweepMaxPages pages maps
// its one frame, read-only and execute-disable, user pages for the user
// regions and supervisor pages for the kernel's; the user side of an
// isolating mode has the user regions and not the kernel's; the kernel
// side has all three; the rest of each side is as Build made it.
func TestMapSweep(t *testing.T) {
	for _, mode := range []experiment.Mode{experiment.Off, experiment.On} {
		t.Run(mode.String(), func(t *testing.T) {
			mem := newHostMem(t)
			kernel := goKernel(t, mem)
			sp, ok := Build(mem, kernel, testTask, testEntry, mode, false, true)
			require.True(t, ok)
			before := map[uint64][]amd64.Mapping{sp.KernelRoot: walk(mem, sp.KernelRoot), sp.UserRoot: walk(mem, sp.UserRoot)}
			for _, r := range sweepRegions {
				require.NoError(t, mapSweep(mem, kernel, sp, r, true))
				require.NoError(t, mapSweep(mem, kernel, sp, r, true), "mapping again writes the same entries")
			}
			for _, side := range []struct {
				name string
				root uint64
				user bool
			}{{"kernel side", sp.KernelRoot, false}, {"user side", sp.UserRoot, true}} {
				pages := map[uint64]int{}
				var rest []amd64.Mapping
				for _, m := range walk(mem, side.root) {
					var in *SweepRegion
					for i, r := range sweepRegions {
						if m.VA >= r.Base && m.VA < r.Base+SweepMaxPages*r.PageSize {
							in = &sweepRegions[i]
						}
					}
					if in == nil {
						rest = append(rest, m)
						continue
					}
					flags := uint64(amd64.PTE_P | amd64.PTE_NX)
					if in.User {
						flags |= amd64.PTE_U
					}
					assert.Equal(t, amd64.Mapping{VA: m.VA, PA: in.Frame, Size: in.PageSize, Flags: flags}, m, "%s %#x", side.name, m.VA)
					pages[in.Base]++
				}
				assert.Equal(t, before[side.root], rest, "%s: the rest as Build made it", side.name)
				want := map[uint64]int{SweepUser4K: SweepMaxPages, SweepUser2M: SweepMaxPages, SweepKernel4K: SweepMaxPages}
				if side.user && mode.Isolated() {
					delete(want, SweepKernel4K)
				}
				assert.Equal(t, want, pages, side.name)
			}
		})
	}
}

// TestMapSweepErrors: a frame off its page boundary, a page size the
// sweep has not, a kernel region of 2 MiB pages, and a kernel whose PML4
// slot for the kernel region is in use are errors.
func TestMapSweepErrors(t *testing.T) {
	mem := newHostMem(t)
	kernel := goKernel(t, mem)
	sp, ok := Build(mem, kernel, testTask, testEntry, experiment.On, false, true)
	require.True(t, ok)
	assert.ErrorContains(t, mapSweep(mem, kernel, sp, SweepRegion{Base: SweepUser2M, PageSize: amd64.PageSize2M, Frame: 0x501000, User: true}, true), "want a 4 KiB or 2 MiB page on its boundary")
	assert.ErrorContains(t, mapSweep(mem, kernel, sp, SweepRegion{Base: SweepUser4K, PageSize: amd64.PageSize1G, User: true}, true), "want a 4 KiB or 2 MiB page")
	assert.ErrorContains(t, mapSweep(mem, kernel, sp, SweepRegion{Base: SweepKernel4K, PageSize: amd64.PageSize2M}, true), "the kernel sweep region has 4 KiB pages")
	require.True(t, kernel.Map(SweepKernel4K, 0x9000, amd64.PageSize, amd64.PageSize, amd64.PTE_W))
	assert.ErrorContains(t, mapSweep(mem, kernel, sp, sweepRegions[2], true), "PML4 slot 510 of the kernel's table is in use")
}
