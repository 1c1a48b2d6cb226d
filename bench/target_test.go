package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/testkit/hosttables"
)

// Each target kind's Mapped is what the user table of every mode maps, as
// pti.Build makes it, walked on the host: a Go kernel shaped as goos's (an
// identity map in 2 MiB pages, supervisor-only) with a sensitive block
// left out of the asi modes' nonsensitive table; a mapped target
// supervisor-only but the task's own page.
func TestTargetKindMapped(t *testing.T) {
	const block = 4 << 20 // the sensitive block
	mem := hosttables.New[amd64.Table](t, 64<<20, -1)
	kernel, ok := amd64.New(mem)
	require.True(t, ok)
	require.True(t, kernel.Map(2<<20, 2<<20, 6<<20, amd64.PageSize2M, amd64.PTE_W))
	var ns pti.Nonsensitive
	require.NoError(t, pti.SyncNonsensitive(&ns, mem, kernel, []uint64{block}))
	frames := pti.Frames{Code: 0x100000, Data: 0x200000, Stack: 0x300000}
	targets := map[TargetKind]uint64{
		KernelOnly: 6<<20 + 0x1000, EntryArea: pti.EntryData, OwnPage: pti.UserData,
		DeferredArea: pti.EntryTrampStack, Sensitive: block + 0x1000,
	}
	for _, m := range experiment.Modes() {
		sp, ok := pti.Build(mem, kernel, ns.Root, frames, 0x800000, m, false, true)
		require.True(t, ok, "%v", m)
		user := amd64.PageTable[*hosttables.Memory[amd64.Table]]{Root: sp.UserRoot, Mem: mem}
		for k, va := range targets {
			pte, level := user.Lookup(va)
			assert.Equal(t, k.Mapped(m), level != 0, "%v: kind %d at %#x", m, k, va)
			if level != 0 {
				assert.Equal(t, k == OwnPage, pte&amd64.PTE_U != 0, "%v: kind %d: user-accessible", m, k)
			}
		}
	}
	// The asi modes are the ones whose user table maps the kernel but not
	// the sensitive blocks.
	for _, m := range experiment.Modes() {
		assert.Equal(t, m.ASI(), KernelOnly.Mapped(m) && !Sensitive.Mapped(m), "%v", m)
	}
}
