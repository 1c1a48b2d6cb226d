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
)

var deferredModes = []Mode{OnDefer, OnDeferPCID, OnNoSwitch, OnNoSwitchPCID}

func TestDeferredModeNames(t *testing.T) {
	assert.Equal(t, []string{"off", "on", "on+pcid", "on-defer", "on-defer+pcid", "on-noswitch", "on-noswitch+pcid"}, func() []string {
		var out []string
		for _, m := range Modes() {
			out = append(out, m.String())
		}
		return out
	}())
	for _, m := range Modes() {
		assert.Equal(t, slices.Contains(deferredModes, m), m.Deferred(), "%v", m)
		assert.Equal(t, m == OnNoSwitch || m == OnNoSwitchPCID, m.NoSwitch(), "%v", m)
		assert.Equal(t, strings.HasSuffix(m.String(), "+pcid"), m.PCID(), "%v", m)
		assert.Equal(t, m != Off, m.Isolated(), "%v", m)
	}
}

// The deferred routines' filler sets every field to the symbol of its
// name, as routines does for the others.
func TestDeferRoutineTablesByName(t *testing.T) {
	var d deferRoutines
	var n noSwitchRoutines
	deferRoutinesTable(&d, &n)
	checkTable(t, &d, "")
	checkTable(t, &n, "")
}

// Every flavour of every deferred mode has a trampoline of deferRoutines:
// a mode and its PCID variant share it (only the dispatcher differs);
// OnDefer's and OnNoSwitch's differ; Supported knows them all. The
// mitigated flavour has none: its knobs are measured on on's switch.
func TestDeferredTrampolines(t *testing.T) {
	for _, m := range deferredModes {
		_, ok := deferTrampolines[trampolineKey{Mitigated, m}]
		assert.False(t, ok, "mitigated/%v", m)
		assert.ErrorContains(t, Supported(Config{Mode: m, Flavour: Mitigated}), "no such trampoline")
	}
	for _, f := range []Flavour{Minimal, Linux} {
		for _, m := range deferredModes {
			k := trampolineKey{f, m}
			off, ok := deferTrampolines[k]
			require.True(t, ok, "%v/%v", f, m)
			field, ok := fieldAt(reflect.TypeFor[deferRoutines](), off)
			require.True(t, ok, "%v/%v", f, m)
			assert.True(t, strings.HasPrefix(field.Name, "Sys"+strings.ToUpper(f.String()[:1])+f.String()[1:]), "%v/%v: %s", f, m, field.Name)
			want := "Defer"
			if m.NoSwitch() {
				want = "NoSwitch"
			}
			assert.True(t, strings.HasSuffix(field.Name, want), "%v/%v: %s", f, m, field.Name)
			_, old := trampolines[k]
			assert.False(t, old, "%v/%v: not in the entry text's table", f, m)
			if !m.PCID() {
				assert.NoError(t, Supported(Config{Mode: m, Flavour: f}))
			}
			assert.Equal(t, RegsInR11(Config{Mode: m, Flavour: f}), f == Linux, "%v/%v", f, m)
		}
	}
	assert.False(t, RegsInR11(Config{Mode: On, Flavour: Linux}), "SYS_LINUX leaves the frame above the return address")
	assert.Len(t, deferTrampolines, 2*len(deferredModes))
	assert.Equal(t, uintptr(0), unsafe.Offsetof(deferRoutines{}.SysMinimalDefer), "a zero offset is a trampoline too")
}

// The deferred pages follow the IST stacks, inside the entry area's 2 MiB,
// after its EntryPages.
func TestDeferredLayout(t *testing.T) {
	assert.Equal(t, uint64(EntryBase+EntryPages*amd64.PageSize), uint64(EntryDeferText))
	assert.Equal(t, uint64(EntryTrampStack+amd64.PageSize), uint64(EntryTrampStackTop))
	pages := 0
	for _, a := range Exposure(OnNoSwitch) {
		pages += a.Pages
		assert.GreaterOrEqual(t, a.VA, uint64(EntryDeferText), a.Name)
		assert.LessOrEqual(t, a.VA+uint64(a.Pages)*amd64.PageSize, uint64(EntryDeferText+DeferPages*amd64.PageSize), a.Name)
	}
	assert.Equal(t, DeferPages, pages, "OnNoSwitch maps every deferred page")
}

// extra returns the mappings of got that are not in base.
func extra(got, base []amd64.Mapping) []amd64.Mapping {
	var out []amd64.Mapping
	for _, m := range got {
		if !slices.Contains(base, m) {
			out = append(out, m)
		}
	}
	return out
}

// TestExposure walks the user table of every mode and compares what it
// maps beyond On's user table with the exact list each mode must have
// (written out here, not derived from Exposure), then checks that Exposure,
// the list the probe prints, says the same: Off exposes the whole kernel;
// On and OnPCID nothing; the deferred modes the deferred entry text and
// the trampoline stack; the no-switch modes also the handlers' page. Every
// extra page is supervisor-only; the kernel side maps them as well, and
// nothing else differs from On's kernel side.
func TestExposure(t *testing.T) {
	const p, w, nx = amd64.PTE_P, amd64.PTE_W, amd64.PTE_NX
	deferred := []amd64.Mapping{
		{VA: EntryDeferText, PA: testEntry + 0xa000, Size: 4096, Flags: p},
		{VA: EntryTrampStack, PA: testEntry + 0xb000, Size: 4096, Flags: p | w | nx},
	}
	noswitch := append(slices.Clone(deferred), amd64.Mapping{VA: EntryNoSwitchText, PA: testEntry + 0xc000, Size: 4096, Flags: p})
	want := map[Mode][]amd64.Mapping{
		Off: kernelMappings, On: nil, OnPCID: nil,
		OnDefer: deferred, OnDeferPCID: deferred, OnNoSwitch: noswitch, OnNoSwitchPCID: noswitch,
	}
	mem := newHostMem(t)
	kernel := goKernel(t, mem)
	on, ok := Build(mem, kernel, testTask, testEntry, On, false, true)
	require.True(t, ok)
	onUser, onKernel := walk(mem, on.UserRoot), walk(mem, on.KernelRoot)
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) {
			sp, ok := Build(mem, kernel, testTask, testEntry, m, false, true)
			require.True(t, ok)
			got := extra(walk(mem, sp.UserRoot), onUser)
			assert.Equal(t, want[m], got, "what the user table maps beyond on's")
			assert.Empty(t, extra(onUser, walk(mem, sp.UserRoot)), "it maps everything on's does")
			if m != Off {
				assert.Equal(t, want[m], extra(walk(mem, sp.KernelRoot), onKernel), "the kernel side maps the same extra pages")
			}
			for _, x := range got {
				assert.Zero(t, x.Flags&amd64.PTE_U, "%#x: supervisor-only", x.VA)
			}

			areas := Exposure(m)
			if m == Off {
				require.Len(t, areas, 1)
				assert.Zero(t, areas[0].Pages, "the whole kernel")
				assert.Contains(t, areas[0].String(), "the kernel: every mapping of the Go kernel's table")
				return
			}
			require.Len(t, areas, len(want[m]))
			for i, a := range areas {
				x := want[m][i]
				assert.Equal(t, x.VA, a.VA, a.Name)
				assert.Equal(t, x.Size, uint64(a.Pages)*amd64.PageSize, a.Name)
				assert.Equal(t, x.Flags&^amd64.PTE_P, a.Flags, a.Name)
				assert.NotEmpty(t, a.Holds, a.Name)
			}
		})
	}
	assert.Equal(t, "trampoline stack [0xffffffffffe0b000, 0xffffffffffe0c000) 1 page(s): the task's pt_regs (its user registers) and the dispatcher's return address and saved stack pointer",
		Exposure(OnDefer)[1].String())
}

// A mode and its PCID variant share a process's tables; the deferred
// modes have their own.
func TestTableClass(t *testing.T) {
	classes := map[Mode]Mode{Off: Off, On: On, OnPCID: On, OnDefer: OnDefer, OnDeferPCID: OnDefer, OnNoSwitch: OnNoSwitch, OnNoSwitchPCID: OnNoSwitch}
	for _, m := range Modes() {
		assert.Equal(t, classes[m], m.tableClass(), "%v", m)
	}
}
