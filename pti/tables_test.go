package pti

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/testkit/hosttables"
)

// hostMem is a TableMemory over Go memory: tables keyed by a fake physical
// address, handed out upwards from 64 MiB.
type hostMem = hosttables.Memory[amd64.Table]

func newHostMem(t *testing.T) *hostMem { return hosttables.New[amd64.Table](t, 64<<20, -1) }

// The fake Go kernel: an identity map of [2 MiB, 8 MiB) in 2 MiB pages and
// a runtime page at 1 TiB, all supervisor-only.
func goKernel(t *testing.T, mem *hostMem) amd64.PageTable[*hostMem] {
	pt, ok := amd64.New[*hostMem](mem)
	require.True(t, ok)
	require.True(t, pt.Map(2<<20, 2<<20, 6<<20, amd64.PageSize2M, amd64.PTE_W))
	require.True(t, pt.Map(1<<40, 0x9000, amd64.PageSize, amd64.PageSize, amd64.PTE_W|amd64.PTE_NX))
	return pt
}

var (
	testTask  = Frames{Code: 0x100000, Data: 0x200000, Stack: 0x300000}
	testEntry = uint64(0x400000)
)

func walk(mem *hostMem, root uint64) []amd64.Mapping {
	pt := amd64.PageTable[*hostMem]{Root: root, Mem: mem}
	return hosttables.Walked(pt.Walk)
}

// taskAndEntry are the mappings every table of a task has: the task's
// pages (user) and the entry area (supervisor), with global on the entry
// area when global.
func taskAndEntry(global bool) []amd64.Mapping {
	g := uint64(0)
	if global {
		g = amd64.PTE_G
	}
	const p = amd64.PTE_P
	return []amd64.Mapping{
		{VA: UserCode, PA: testTask.Code, Size: UserCodePages * 4096, Flags: p | amd64.PTE_U},
		{VA: UserData, PA: testTask.Data, Size: UserDataPages * 4096, Flags: p | amd64.PTE_U | amd64.PTE_W | amd64.PTE_NX},
		{VA: UserStackTop - UserStackPages*4096, PA: testTask.Stack, Size: UserStackPages * 4096, Flags: p | amd64.PTE_U | amd64.PTE_W | amd64.PTE_NX},
		{VA: EntryText, PA: testEntry, Size: EntryTextPages * 4096, Flags: p | g},
		{VA: EntryData, PA: testEntry + 0x2000, Size: 2 * 4096, Flags: p | amd64.PTE_W | amd64.PTE_NX | g},
		{VA: EntryIDT, PA: testEntry + 0x4000, Size: 4096, Flags: p | amd64.PTE_NX | g},
		{VA: EntryStack, PA: testEntry + 0x5000, Size: 5 * 4096, Flags: p | amd64.PTE_W | amd64.PTE_NX | g},
		{VA: EntryFREDText, PA: testEntry + 0xd000, Size: FREDPages * 4096, Flags: p | g},
	}
}

var kernelMappings = []amd64.Mapping{
	{VA: 2 << 20, PA: 2 << 20, Size: 6 << 20, Flags: amd64.PTE_P | amd64.PTE_W},
	{VA: 1 << 40, PA: 0x9000, Size: 4096, Flags: amd64.PTE_P | amd64.PTE_W | amd64.PTE_NX},
}

// TestBuildTables walks every table each mode builds and compares it with
// the exact mappings it must have: the user table of an isolating mode has
// nothing of the kernel but the entry area.
func TestBuildTables(t *testing.T) {
	for _, mode := range []experiment.Mode{experiment.Off, experiment.On, experiment.OnPCID} {
		for _, global := range []bool{false, true} {
			t.Run(mode.String(), func(t *testing.T) {
				mem := newHostMem(t)
				kernel := goKernel(t, mem)
				sp, ok := Build(mem, kernel, 0, testTask, testEntry, mode, global, true)
				require.True(t, ok)
				assert.Equal(t, mode, sp.Mode)

				kernelSide := append(append([]amd64.Mapping{}, kernelMappings...), taskAndEntry(global)...)
				assert.Equal(t, kernelSide, walk(mem, sp.KernelRoot), "kernel side: the Go kernel, the task and the entry area")
				if !mode.Isolated() {
					assert.Equal(t, sp.KernelRoot, sp.UserRoot, "one table")
					return
				}
				assert.Zero(t, sp.KernelRoot%8192, "the PML4 pair is 8 KiB aligned")
				assert.Equal(t, sp.KernelRoot+4096, sp.UserRoot, "the user PML4 is the upper half of the pair")
				assert.Equal(t, taskAndEntry(global), walk(mem, sp.UserRoot), "user side: the task and the entry area only")
				// The Go kernel's own table is unchanged.
				assert.Equal(t, kernelMappings, walk(mem, kernel.Root))
			})
		}
	}
}

func TestBuildWithoutNX(t *testing.T) {
	mem := newHostMem(t)
	sp, ok := Build(mem, goKernel(t, mem), 0, testTask, testEntry, experiment.On, false, false)
	require.True(t, ok)
	for _, m := range walk(mem, sp.UserRoot) {
		assert.Zero(t, m.Flags&amd64.PTE_NX, "%#x: no NX without EFER.NXE", m.VA)
	}
}

func TestCR3(t *testing.T) {
	off := Space{Mode: experiment.Off, KernelRoot: 0x10000, UserRoot: 0x10000}
	on := Space{Mode: experiment.On, KernelRoot: 0x10000, UserRoot: 0x11000}
	pcid := Space{Mode: experiment.OnPCID, KernelRoot: 0x10000, UserRoot: 0x11000}
	for _, c := range []struct {
		sp         Space
		noflush    bool
		kern, user uint64
	}{
		{off, false, 0x10000, 0x10000},
		{on, false, 0x10000, 0x11000},
		{on, true, 0x10000, 0x11000}, // no NOFLUSH without PCIDs
		{pcid, false, 0x10001, 0x11801},
		{pcid, true, 0x8000000000010001, 0x8000000000011801},
	} {
		assert.Equal(t, c.kern, KernelCR3(c.sp, c.noflush), "%v %v", c.sp.Mode, c.noflush)
		assert.Equal(t, c.user, UserCR3(c.sp, c.noflush), "%v %v", c.sp.Mode, c.noflush)
		// The trampolines' arithmetic: OR the mask in to go to the user
		// side, clear it to come back.
		if c.sp.Mode == experiment.OnPCID {
			assert.Equal(t, KernelCR3(c.sp, c.noflush)|PTIUserMask, UserCR3(c.sp, c.noflush))
			assert.Equal(t, UserCR3(c.sp, c.noflush)&^PTIUserMask, KernelCR3(c.sp, c.noflush))
		}
	}
	assert.Equal(t, uint64(1<<11|1), uint64(UserPCID))
}
