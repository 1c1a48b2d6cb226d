package pti

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
)

// deferredModes are the model's deferred modes.
func deferredModes() []experiment.Mode {
	var out []experiment.Mode
	for _, m := range experiment.Modes() {
		if m.Deferred() {
			out = append(out, m)
		}
	}
	return out
}

// The page routines' filler sets every field to the symbol of its
// name, as routines does for the others.
func TestDeferRoutineTablesByName(t *testing.T) {
	var r pageRoutines
	pageRoutinesTable(&r)
	checkTable(t, &r.Defer, "")
	checkTable(t, &r.NoSwitch, "")
	checkTable(t, &r.FRED, "")
	checkTable(t, &r.LASS, "")
	assert.Equal(t, "fredEvent", symbolOf(r.FredEvent))
}

// Every flavour of every deferred mode has a trampoline of deferRoutines:
// a mode and its PCID variant share it (only the dispatcher differs); the
// defer and no-switch trampolines differ; Plan knows them all. The
// mitigated flavour has none (the mode rows say so): its knobs are
// measured on on's switch.
func TestDeferredTrampolines(t *testing.T) {
	shared := map[trampolineKey]trampoline{}
	for _, m := range deferredModes() {
		for _, f := range experiment.Flavours() {
			k := trampolineKey{experiment.Syscall, f, m}
			tr, ok := trampolines[k]
			c := experiment.Config{World: experiment.W64, Mode: m, Entry: experiment.Syscall, Flavour: f}
			if !m.Has(f) {
				assert.False(t, ok, "%v/%v", f, m)
				_, err := Plan(c)
				assert.ErrorIs(t, err, experiment.ErrNoTrampoline, "%v/%v", f, m)
				continue
			}
			require.True(t, ok, "%v/%v", f, m)
			assert.True(t, tr.deferred, "%v/%v: in the deferred entry text", f, m)
			field, ok := fieldAt(reflect.TypeFor[deferRoutines](), tr.off)
			require.True(t, ok, "%v/%v", f, m)
			assert.Contains(t, field.Name, "Sys"+strings.ToUpper(f.String()[:1])+f.String()[1:], "%v/%v", f, m)
			base := trampolineKey{experiment.Syscall, f, m.Row().Base}
			if prev, ok := shared[base]; ok {
				assert.Equal(t, prev, tr, "%v/%v shares its base mode's trampoline", f, m)
			}
			shared[base] = tr
			if !m.PCID() {
				_, err := Plan(c)
				assert.NoError(t, err)
			}
			sw := Switch{c: c}
			assert.Equal(t, f == experiment.Linux, sw.RegsInR11(), "%v/%v", f, m)
		}
	}
	on := Switch{c: experiment.Config{World: experiment.W64, Mode: experiment.On, Entry: experiment.Syscall, Flavour: experiment.Linux}}
	assert.False(t, on.RegsInR11(), "SYS_LINUX leaves the frame above the return address")
	distinct := map[trampoline]bool{}
	for _, tr := range shared {
		distinct[tr] = true
	}
	assert.Len(t, distinct, len(shared), "the defer and no-switch trampolines differ")
	assert.Equal(t, uintptr(0), unsafe.Offsetof(deferRoutines{}.SysMinimalDefer), "a zero offset is a trampoline too")
}

// The deferred pages follow the IST stacks, inside the entry area's 2 MiB,
// after its EntryPages.
func TestDeferredLayout(t *testing.T) {
	assert.Equal(t, uint64(EntryBase+EntryPages*amd64.PageSize), uint64(EntryDeferText))
	assert.Equal(t, uint64(EntryTrampStack+amd64.PageSize), uint64(EntryTrampStackTop))
	pages := 0
	for _, a := range Exposure(experiment.OnNoSwitch) {
		pages += a.Pages
		assert.GreaterOrEqual(t, a.VA, uint64(EntryDeferText), a.Name)
		assert.LessOrEqual(t, a.VA+uint64(a.Pages)*amd64.PageSize, uint64(EntryDeferText+DeferPages*amd64.PageSize), a.Name)
	}
	assert.Equal(t, DeferPages, pages, "OnNoSwitch maps every deferred page")
}

// extra returns what got maps that base does not, page by page, runs of
// contiguous pages with the same flags merged again as the walker merges
// them (a page next to one of base's, such as the no-switch handlers'
// page before the FRED pages, walks as one mapping with it).
func extra(got, base []amd64.Mapping) []amd64.Mapping {
	in := map[amd64.Mapping]bool{}
	for _, p := range pagesOf(base) {
		in[p] = true
	}
	var out []amd64.Mapping
	for _, p := range pagesOf(got) {
		if in[p] {
			continue
		}
		if n := len(out); n > 0 && out[n-1].VA+out[n-1].Size == p.VA && out[n-1].PA+out[n-1].Size == p.PA && out[n-1].Flags == p.Flags {
			out[n-1].Size += p.Size
			continue
		}
		out = append(out, p)
	}
	return out
}

// pagesOf splits mappings into their pages.
func pagesOf(ms []amd64.Mapping) []amd64.Mapping {
	var out []amd64.Mapping
	for _, m := range ms {
		for off := uint64(0); off < m.Size; off += amd64.PageSize {
			out = append(out, amd64.Mapping{VA: m.VA + off, PA: m.PA + off, Size: amd64.PageSize, Flags: m.Flags})
		}
	}
	return out
}

// TestExposure walks the user table of every mode and compares what it
// maps beyond On's user table with the exact list each mode must have
// (written out here, not derived from Exposure), then checks that Exposure,
// the list the probe prints, says the same: Off exposes the whole kernel;
// On and OnPCID nothing; the deferred modes the deferred entry text and
// the trampoline stack; the no-switch modes also the handlers' page; lass
// the whole kernel and its handlers' page (lass.go); the asi modes the
// kernel but the sensitive blocks, their kernel side being On's. Every
// extra page is supervisor-only; the kernel side maps them as well, and
// nothing else differs from On's kernel side.
func TestExposure(t *testing.T) {
	const p, w, nx = amd64.PTE_P, amd64.PTE_W, amd64.PTE_NX
	deferred := []amd64.Mapping{
		{VA: EntryDeferText, PA: testEntry + 0xa000, Size: 4096, Flags: p},
		{VA: EntryTrampStack, PA: testEntry + 0xb000, Size: 4096, Flags: p | w | nx},
	}
	noswitch := append(slices.Clone(deferred), amd64.Mapping{VA: EntryNoSwitchText, PA: testEntry + 0xc000, Size: 4096, Flags: p})
	lass := append(slices.Clone(kernelMappings), amd64.Mapping{VA: EntryLASSText, PA: testEntry + 0x13000, Size: 4096, Flags: p})
	// The asi modes' user table: the kernel but the sensitive block at 4 MiB.
	nonsensitive := []amd64.Mapping{
		{VA: 2 << 20, PA: 2 << 20, Size: 2 << 20, Flags: p | w},
		{VA: 6 << 20, PA: 6 << 20, Size: 2 << 20, Flags: p | w},
		kernelMappings[1],
	}
	// What each exposure of a mode's row maps, written out page by page.
	wantOf := func(m experiment.Mode) []amd64.Mapping {
		e := m.Row().Exposes
		switch {
		case e&experiment.ExposesNonsensitiveKernel != 0:
			return nonsensitive
		case e&experiment.ExposesLASSHandlers != 0:
			return lass
		case e&experiment.ExposesKernel != 0:
			return kernelMappings
		case e&experiment.ExposesNoSwitchHandlers != 0:
			return noswitch
		case e&experiment.ExposesDispatch != 0:
			return deferred
		}
		return nil
	}
	mem := newHostMem(t)
	kernel := goKernel(t, mem)
	var ns Nonsensitive
	require.NoError(t, SyncNonsensitive(&ns, mem, kernel, []uint64{4 << 20}))
	on, ok := Build(mem, kernel, ns.Root, testTask, testEntry, experiment.On, false, true)
	require.True(t, ok)
	onUser, onKernel := walk(mem, on.UserRoot), walk(mem, on.KernelRoot)
	for _, m := range experiment.Modes() {
		t.Run(m.String(), func(t *testing.T) {
			sp, ok := Build(mem, kernel, ns.Root, testTask, testEntry, m, false, true)
			require.True(t, ok)
			want := wantOf(m)
			got := extra(walk(mem, sp.UserRoot), onUser)
			assert.Equal(t, want, got, "what the user table maps beyond on's")
			assert.Empty(t, extra(onUser, walk(mem, sp.UserRoot)), "it maps everything on's does")
			switch {
			case m.ASI():
				assert.Equal(t, onKernel, walk(mem, sp.KernelRoot), "the sensitive table is on's kernel side")
			case m.Isolated():
				assert.Equal(t, want, extra(walk(mem, sp.KernelRoot), onKernel), "the kernel side maps the same extra pages")
			}
			for _, x := range got {
				assert.Zero(t, x.Flags&amd64.PTE_U, "%#x: supervisor-only", x.VA)
			}

			areas := Exposure(m)
			switch {
			case m.ASI():
				require.Len(t, areas, 1)
				assert.Zero(t, areas[0].Pages, "the kernel but the sensitive blocks")
				assert.Contains(t, areas[0].String(), "the nonsensitive kernel: every mapping of the Go kernel's table, supervisor-only, but the sensitive blocks")
				areas, want = nil, nil
			case !m.Isolated():
				assert.Zero(t, areas[0].Pages, "the whole kernel")
				assert.Contains(t, areas[0].String(), "the kernel: every mapping of the Go kernel's table")
				areas, want = areas[1:], want[len(kernelMappings):]
			}
			require.Len(t, areas, len(want))
			for i, a := range areas {
				x := want[i]
				assert.Equal(t, x.VA, a.VA, a.Name)
				assert.Equal(t, x.Size, uint64(a.Pages)*amd64.PageSize, a.Name)
				assert.Equal(t, x.Flags&^amd64.PTE_P, a.Flags, a.Name)
				assert.NotEmpty(t, a.Holds, a.Name)
			}
		})
	}
	assert.Equal(t, "trampoline stack [0xffffffffffe0b000, 0xffffffffffe0c000) 1 page(s): the task's pt_regs (its user registers) and the dispatcher's return address and saved stack pointer",
		Exposure(experiment.OnDefer)[1].String())
}
