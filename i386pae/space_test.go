package i386pae

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/i386pae/layout"
)

var (
	spaceTask   = Frames{Code: 0x100000, Data: 0x200000, Stack: 0x300000}
	spaceKernel = uint64(0x01000000) // 16 MiB: PDPTE 0, PDE 8
)

func spaceWalk(t *testing.T, mem *paeMem, pdpt uint64) []amd64.Mapping {
	t.Helper()
	pt := PageTable[*paeMem]{PDPT: pdpt, Mem: mem}
	return walkPAE(t, &pt)
}

// userMappings are the task's pages, the same in both sides.
func userMappings(nx uint64) []amd64.Mapping {
	const p, u, w = amd64.PTE_P, amd64.PTE_U, amd64.PTE_W
	return []amd64.Mapping{
		{VA: 0x401000, PA: spaceTask.Code, Size: 4 * 4096, Flags: p | u},
		{VA: 0x410000, PA: spaceTask.Data, Size: 16 * 4096, Flags: p | u | w | nx},
		{VA: 0x4fc000, PA: spaceTask.Stack, Size: 4 * 4096, Flags: p | u | w | nx},
	}
}

// entryMappings are the entry area, the same in both sides: CPU, Desc and
// EntryStack writable, the text read/execute, global when g is PTE_G.
func entryMappings(g, nx uint64) []amd64.Mapping {
	const p, w = amd64.PTE_P, amd64.PTE_W
	return []amd64.Mapping{
		{VA: 0xff800000, PA: spaceKernel, Size: 4 * 4096, Flags: p | w | nx | g},
		{VA: 0xff804000, PA: spaceKernel + 0x4000, Size: 16 * 4096, Flags: p | g},
	}
}

// kernelSideMappings are everything the kernel side maps, in address order.
func kernelSideMappings(g, nx uint64) []amd64.Mapping {
	const p, w = amd64.PTE_P, amd64.PTE_W
	m := userMappings(nx)
	m = append(m, amd64.Mapping{VA: spaceKernel, PA: spaceKernel, Size: uint64(layout.KernelPages) * 4096, Flags: p | w}) // the identity copy
	m = append(m, entryMappings(g, nx)...)
	// KernelStack, DFStack, LowPML4, State
	return append(m, amd64.Mapping{VA: 0xff814000, PA: spaceKernel + 0x14000, Size: uint64(layout.KernelPages-0x14) * 4096, Flags: p | w | nx})
}

// checkPDPTEs asserts that only PDPTEs 0 and 3 are present, with only P
// besides the PD address, and that the rest of the PDPT's frame is zero.
func checkPDPTEs(t *testing.T, mem *paeMem, pdpt uint64) {
	t.Helper()
	for i, e := range mem.Table(pdpt) {
		switch i {
		case 0, 3:
			assert.Equal(t, uint64(PDPTE_P), e&^amd64.PTE_ADDR, "PDPTE %d of %#x: only P", i, pdpt)
			assert.Zero(t, e&PDPTEReserved)
		default:
			assert.Zero(t, e, "entry %d of PDPT %#x", i, pdpt)
		}
	}
}

// TestBuildSpaces walks both sides of every mode and compares them with
// the exact mappings they must have.
func TestBuildSpaces(t *testing.T) {
	for _, isolated := range []bool{false, true} {
		for _, global := range []bool{false, true} {
			for _, nx := range []bool{true, false} {
				t.Run(fmt.Sprintf("isolated=%v,global=%v,nx=%v", isolated, global, nx), func(t *testing.T) {
					mem := newPAEMem(t, -1)
					mem.NewTable() // an odd page, so that the pair must skip one
					sp, ok := Build(mem, spaceKernel, spaceTask, isolated, global, nx)
					require.True(t, ok)
					assert.Equal(t, isolated, sp.Isolated)
					assert.Zero(t, sp.KernelPDPT%8192, "the PDPT pair is 8 KiB aligned")
					assert.Zero(t, sp.KernelPDPT&(1<<12), "bit 12 of the kernel CR3 is clear")

					g, x := uint64(0), uint64(0)
					if global {
						g = amd64.PTE_G
					}
					if nx {
						x = amd64.PTE_NX
					}
					assert.Equal(t, kernelSideMappings(g, x), spaceWalk(t, mem, sp.KernelPDPT), "kernel side")
					checkPDPTEs(t, mem, sp.KernelPDPT)

					if !isolated {
						assert.Equal(t, sp.KernelPDPT, sp.UserPDPT, "one PDPT")
						assert.Equal(t, amd64.Table{}, *mem.Table(sp.KernelPDPT + 4096), "the pair's upper half is unused")
						return
					}
					// The trampolines' arithmetic (Linux PTI_SWITCH_MASK).
					assert.Equal(t, sp.KernelPDPT|1<<12, sp.UserPDPT)
					assert.Equal(t, sp.KernelPDPT, sp.UserPDPT&^(1<<12))
					user := append(userMappings(x), entryMappings(g, x)...)
					assert.Equal(t, user, spaceWalk(t, mem, sp.UserPDPT), "user side: the task and the entry area only")
					checkPDPTEs(t, mem, sp.UserPDPT)
				})
			}
		}
	}
}

// With isolation the user side has nothing of the kernel but the entry
// area: not the kernel stack, the #DF stack, the low PML4, nor the
// identity copy; the kernel side has them all.
func TestBuildUserSideHidesKernel(t *testing.T) {
	mem := newPAEMem(t, -1)
	sp, ok := Build(mem, spaceKernel, spaceTask, true, true, true)
	require.True(t, ok)
	k := PageTable[*paeMem]{PDPT: sp.KernelPDPT, Mem: mem}
	u := PageTable[*paeMem]{PDPT: sp.UserPDPT, Mem: mem}

	for _, va := range []uint32{layout.KernelStack, layout.KernelStack + 4096, layout.DFStack, layout.LowPML4} {
		pa, f, ok := k.Translate(va)
		require.True(t, ok, "%#x in the kernel side", va)
		assert.Equal(t, spaceKernel+uint64(va-layout.KernelBase), pa)
		assert.Zero(t, f&(amd64.PTE_U|amd64.PTE_G), "%#x: supervisor, not global", va)
		_, _, ok = u.Translate(va)
		assert.False(t, ok, "%#x in the user side", va)
	}
	for i := uint32(0); i < layout.KernelPages; i++ {
		va := uint32(spaceKernel) + i*4096
		pa, f, ok := k.Translate(va)
		require.True(t, ok, "identity page %d in the kernel side", i)
		assert.Equal(t, uint64(va), pa)
		assert.Equal(t, uint64(amd64.PTE_P|amd64.PTE_W), f, "supervisor, writable, executable, not global")
		_, _, ok = u.Translate(va)
		assert.False(t, ok, "identity page %d in the user side", i)
	}
	for i := uint32(0); i < layout.EntryPages; i++ {
		va := layout.KernelBase + i*4096
		kpa, kf, kok := k.Translate(va)
		upa, uf, uok := u.Translate(va)
		require.True(t, kok && uok, "entry page %d in both sides", i)
		assert.Equal(t, kpa, upa)
		assert.Equal(t, kf, uf)
		assert.NotZero(t, uf&amd64.PTE_G)
		assert.Zero(t, uf&amd64.PTE_U, "supervisor-only")
	}
	for _, va := range []uint32{layout.KernelBase + layout.KernelPages*4096, layout.UserBase, layout.UserEnd - 4096, 0} {
		_, _, ok := k.Translate(va)
		assert.False(t, ok, "%#x is not mapped", va)
	}
}

// The kernel's frames must be page aligned and their identity copy must
// overlap neither the user window nor the kernel window.
func TestBuildKernelPlacement(t *testing.T) {
	const size = uint64(layout.KernelPages) * 4096
	for _, c := range []struct {
		kernel uint64
		ok     bool
	}{
		{spaceKernel + 0x800, false},
		{0, false},
		{layout.UserBase, false},
		{layout.UserEnd - 4096, false},
		{layout.UserEnd, true},
		{0x40000000, true}, // PDPTE 1
		{layout.PipeBase - size, true},
		{layout.PipeBase - size + 4096, false}, // the pipes' rings are mapped from PipeBase
		{layout.KernelBase, false},
		{1 << 32, false},
		{1<<64 - 4096, false},
	} {
		mem := newPAEMem(t, -1)
		_, ok := Build(mem, c.kernel, spaceTask, true, false, true)
		assert.Equal(t, c.ok, ok, "kernel at %#x", c.kernel)
		if !c.ok {
			assert.Empty(t, mem.Tables, "kernel at %#x: nothing allocated", c.kernel)
		}
	}
}

func TestBuildTask(t *testing.T) {
	// The most data pages reach the stack.
	task := Frames{Code: 0x100000, Data: 0x200000, Stack: 0x200000 + MaxDataPages*4096, DataPages: MaxDataPages}
	assert.Equal(t, 236, MaxDataPages)
	mem := newPAEMem(t, -1)
	sp, ok := Build(mem, spaceKernel, task, true, false, true)
	require.True(t, ok)
	got := spaceWalk(t, mem, sp.UserPDPT)
	require.NotEmpty(t, got)
	assert.Equal(t, amd64.Mapping{
		VA: layout.UserData, PA: task.Data, Size: (MaxDataPages + layout.UserStackPages) * 4096,
		Flags: amd64.PTE_P | amd64.PTE_U | amd64.PTE_W | amd64.PTE_NX,
	}, got[1], "data and stack in one run")

	for _, bad := range []Frames{
		{Code: 0x100000, Data: 0x200000, Stack: 0x300000, DataPages: MaxDataPages + 1},
		{Code: 0x100000, Data: 0x200000, Stack: 0x300000, DataPages: -1},
		{Code: 0x100800, Data: 0x200000, Stack: 0x300000},
		{Code: 0x100000, Data: 0x200010, Stack: 0x300000},
		{Code: 0x100000, Data: 0x200000, Stack: 0x300001},
	} {
		_, ok := Build(newPAEMem(t, -1), spaceKernel, bad, true, false, true)
		assert.False(t, ok, "%+v", bad)
	}
}

func TestBuildExhausted(t *testing.T) {
	// Kernel side: the PDPT pair, PD 0 with the PTs of the user window
	// and of the identity copy, PD 3 with the PT of the kernel window;
	// the user side: PD 0 and PD 3 with a PT each.
	for _, c := range []struct {
		isolated bool
		tables   int
	}{{false, 7}, {true, 11}} {
		for limit := 0; limit < c.tables; limit++ {
			_, ok := Build(newPAEMem(t, limit), spaceKernel, spaceTask, c.isolated, false, true)
			assert.False(t, ok, "isolated=%v with %d tables", c.isolated, limit)
		}
		mem := newPAEMem(t, c.tables)
		_, ok := Build(mem, spaceKernel, spaceTask, c.isolated, false, true)
		assert.True(t, ok, "isolated=%v with %d tables", c.isolated, c.tables)
		assert.Len(t, mem.Tables, c.tables)
	}
}

// pairMem hands out a PDPT pair at a fixed address: for the checks of the
// pair's alignment and of CR3's 32 bits.
type pairMem struct {
	*paeMem
	pair uint64
}

func (m pairMem) NewTablePair() (uint64, bool) {
	m.Tables[m.pair] = new(amd64.Table)
	m.Tables[m.pair+4096] = new(amd64.Table)
	return m.pair, true
}

func TestBuildPairPlacement(t *testing.T) {
	for _, c := range []struct {
		pair uint64
		ok   bool
	}{
		{0x7000, false},      // not 8 KiB aligned
		{1 << 32, false},     // above 4 GiB: not a PAE CR3
		{1<<32 - 8192, true}, // the last pair below 4 GiB
		{0x12346000, true},
	} {
		_, ok := Build(pairMem{newPAEMem(t, -1), c.pair}, spaceKernel, spaceTask, true, false, true)
		assert.Equal(t, c.ok, ok, "pair at %#x", c.pair)
	}
}

// The entry area is CPU through the text; the kernel-only pages follow it.
func TestLayoutWindow(t *testing.T) {
	assert.Equal(t, 20, layout.EntryPages)
	assert.Equal(t, uint32(layout.KernelStack), uint32(layout.KernelBase+layout.EntryPages*4096))
	assert.Equal(t, uint32(layout.Text+layout.TextPages*4096), uint32(layout.KernelStack))
	assert.Equal(t, uint32(layout.LowPML4+4096), uint32(layout.State))
	assert.Equal(t, uint32(layout.State+layout.StatePages*4096), uint32(layout.KernelBase+layout.KernelPages*4096))
	assert.Equal(t, 3, pdptIndex(layout.KernelBase))
	assert.Equal(t, 508, pdIndex(layout.KernelBase))
	assert.Equal(t, 508, pdIndex(layout.KernelBase+layout.KernelPages*4096-1), "one PT maps the kernel window")
	assert.Equal(t, 0, pdptIndex(layout.UserEnd-1))
	assert.Equal(t, 2, pdIndex(layout.UserBase))
	assert.Equal(t, 2, pdIndex(layout.UserStackTop-1), "one PT maps the task")
}
