package pti

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/tlb"
)

// sweepRegions are the three sweep regions of a test process, each on a
// frame of its own.
var sweepRegions = []tlb.SweepRegion{
	{Base: SweepUser4K, PageSize: amd64.PageSize, Frame: 0x500000, User: true},
	{Base: SweepUser2M, PageSize: amd64.PageSize2M, Frame: 0x800000, User: true},
	{Base: tlb.SweepKernel4K, PageSize: amd64.PageSize, Frame: 0x501000},
}

// TestMapSweep walks both sides of a process with the three sweep regions
// mapped (tlb.MapSweep on its kernel side), in each mode: every one of a region's SweepMaxPages pages maps
// its one frame, read-only and execute-disable, user pages for the user
// regions and supervisor pages for the kernel's; the user side of an
// isolating mode has the user regions and not the kernel's; the kernel
// side has all three; the rest of each side is as Build made it.
func TestMapSweep(t *testing.T) {
	for _, mode := range []experiment.Mode{experiment.Off, experiment.On} {
		t.Run(mode.String(), func(t *testing.T) {
			mem := newHostMem(t)
			kernel := goKernel(t, mem)
			sp, ok := Build(mem, kernel, 0, testTask, testEntry, mode, false, true)
			require.True(t, ok)
			before := map[uint64][]amd64.Mapping{sp.KernelRoot: walk(mem, sp.KernelRoot), sp.UserRoot: walk(mem, sp.UserRoot)}
			for _, r := range sweepRegions {
				require.NoError(t, tlb.MapSweep(mem, kernel, sp.KernelRoot, r, true))
				require.NoError(t, tlb.MapSweep(mem, kernel, sp.KernelRoot, r, true), "mapping again writes the same entries")
			}
			for _, side := range []struct {
				name string
				root uint64
				user bool
			}{{"kernel side", sp.KernelRoot, false}, {"user side", sp.UserRoot, true}} {
				pages := map[uint64]int{}
				var rest []amd64.Mapping
				for _, m := range walk(mem, side.root) {
					var in *tlb.SweepRegion
					for i, r := range sweepRegions {
						if m.VA >= r.Base && m.VA < r.Base+tlb.SweepMaxPages*r.PageSize {
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
				want := map[uint64]int{SweepUser4K: tlb.SweepMaxPages, SweepUser2M: tlb.SweepMaxPages, tlb.SweepKernel4K: tlb.SweepMaxPages}
				if side.user && mode.Isolated() {
					delete(want, tlb.SweepKernel4K)
				}
				assert.Equal(t, want, pages, side.name)
			}
		})
	}
}
