package i386pae

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/experiment/sites"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
)

// The 32-bit world's run ends are the 64-bit world's (and so are its exit
// statuses: package exitstatus), so that a Result reads the same in both.
func TestResultIsPTIs(t *testing.T) {
	assert.EqualValues(t, pti.ReasonExit, layout.ReasonExit)
	assert.EqualValues(t, pti.ReasonFault, layout.ReasonFault)
	assert.EqualValues(t, pti.ReasonDeadlock, layout.ReasonDeadlock)
	assert.Equal(t, "exit 2 (ping: read failed)", Result{Reason: layout.ReasonExit, Status: 2}.String())
	assert.Equal(t, "exit 0", Result{Reason: layout.ReasonExit}.String())
	assert.Equal(t, "deadlock: every remaining task is blocked", Result{Reason: layout.ReasonDeadlock}.String())
	assert.Equal(t, "#PF page fault in ring 3 (32-bit), error 0x4, EIP 0x401000, CR2 0x0",
		Result{Reason: layout.ReasonFault, Vector: 14, ErrorCode: 4, EIP: 0x401000, CS: layout.USER_CS}.String())
}

// w32 is a configuration of the 32-bit world.
func w32(m experiment.Mode, e experiment.Entry, f experiment.Flavour) experiment.Config {
	return experiment.Config{World: experiment.W32, Mode: m, Entry: e, Flavour: f}
}

// Plan refuses the modes the 32-bit world has no trampolines for (the
// model's rows say which), a PCID one as not in PAE.
func TestPlanModes(t *testing.T) {
	_, err := Plan(w32(experiment.OnPCID, experiment.Sysenter, experiment.Minimal))
	assert.ErrorIs(t, err, experiment.ErrNotInPAE)
	assert.ErrorContains(t, err, "PCID: not in PAE (PCIDs exist only in IA-32e mode)")
	_, err = Plan(w32(experiment.OnDefer, experiment.Int80, experiment.Minimal))
	assert.ErrorIs(t, err, experiment.ErrNotInPAE)
	assert.ErrorContains(t, err, "isolation mode on-defer: not in PAE (the 32-bit kernel has trampolines for off and on)")
	_, err = Plan(w32(experiment.Mode(len(experiment.Modes())), experiment.Int80, experiment.Minimal))
	assert.ErrorIs(t, err, experiment.ErrNoTrampoline)
	for _, m := range experiment.Modes() {
		for _, f := range []experiment.Flavour{experiment.Minimal, experiment.Linux} {
			_, err := Plan(w32(m, experiment.Int80, f))
			if !m.In(experiment.W32) {
				assert.ErrorIs(t, err, experiment.ErrNotInPAE, "%v", m)
				continue
			}
			assert.NoError(t, err, "%v", m)
		}
	}
	_, err = Plan(experiment.Config{World: experiment.W64, Mode: experiment.Off, Entry: experiment.Syscall})
	assert.ErrorIs(t, err, pti.ErrUnsupported, "the 64-bit world's configurations are pti's")
}

// The trampoline table instantiates the model's rows: every flavour of
// every mode the 32-bit world has, none other; each one a routine of the
// blob, none shared between modes or roles but the mitigated flavour's
// INT 0x80 gate, which is the linux one.
func TestModeTrampolines(t *testing.T) {
	starts := map[uint32]string{}
	for _, s := range blobSymbols {
		starts[s.off] = s.name
	}
	seen := map[uint32]bool{}
	n := 0
	for _, m := range experiment.Modes() {
		for _, f := range experiment.Flavours() {
			tr, ok := trampolines[trampolineKey{f, m}]
			assert.Equal(t, m.In(experiment.W32) && m.Has(f), ok, "%v/%v", f, m)
			if !ok {
				continue
			}
			n++
			offs := []uint32{}
			if f != experiment.Mitigated {
				offs = append(offs, tr.int80)
			} else {
				assert.Equal(t, trampolines[trampolineKey{experiment.Linux, m}].int80, tr.int80, "%v/%v", f, m)
			}
			for _, off := range tr.sysenter {
				offs = append(offs, off)
			}
			for _, off := range offs {
				name, ok := starts[off]
				assert.True(t, ok, "%v/%v: %#x is no routine", f, m, off)
				assert.False(t, seen[off], "%v/%v: %s twice", f, m, name)
				seen[off] = true
			}
		}
	}
	assert.Len(t, trampolines, n)
}

// Each linux SYSENTER trampoline of the table is the routine of its copy
// method and mode, plain or instrumented (by name: a copy method's rows
// must not be picked by their order).
func TestCopyTrampolines(t *testing.T) {
	starts := map[uint32]string{}
	for _, s := range blobSymbols {
		starts[s.off] = s.name
	}
	stem := map[experiment.Copy]string{experiment.Movsl: "Movsl", experiment.Movsb: "Movsb", experiment.Trim: "Trim", experiment.Direct: "Direct"}
	for _, m := range []experiment.Mode{experiment.Off, experiment.On} {
		mode := map[experiment.Mode]string{experiment.Off: "Off", experiment.On: "On"}[m]
		tr := trampolines[trampolineKey{experiment.Linux, m}]
		for _, c := range experiment.Copies() {
			assert.Equal(t, "sysenterLinux"+stem[c]+mode, starts[tr.sysenter[copyKey{c, false}]], "%v %v", m, c)
			assert.Equal(t, "sysenterStamp"+stem[c]+mode, starts[tr.sysenter[copyKey{c, true}]], "%v %v stamps", m, c)
		}
		assert.Equal(t, "sysenterMitigated"+mode, starts[trampolines[trampolineKey{experiment.Mitigated, m}].sysenter[copyKey{experiment.Direct, false}]])
		assert.Equal(t, "sysenterMinimal"+mode, starts[trampolines[trampolineKey{experiment.Minimal, m}].sysenter[copyKey{experiment.Movsl, false}]])
	}
}

// The mitigated flavour: SYSENTER with the direct copy method only; the
// knobs Linux's entry_32.S lacks refused before any CPU check (the host's
// zero features would fail SYSENTER), as ErrNotIn32BitEntry; knobs only
// with the mitigated flavour; each knob its site bit; the mitigated
// trampoline its own routine per mode, with the linux INT 0x80 gate.
func TestMitigatedConfig(t *testing.T) {
	mit := w32(experiment.Off, experiment.Sysenter, experiment.Mitigated)
	mit.Copy = experiment.Direct
	for _, m := range experiment.Mitigations() {
		if m.Row().In32 {
			continue
		}
		c := mit
		c.Knobs = experiment.KnobsOf(experiment.VERW, m)
		_, err := Plan(c)
		assert.ErrorIs(t, err, experiment.ErrNotIn32BitEntry, "%v", m)
		assert.ErrorContains(t, err, c.Key()+": "+m.String()+": not in 32-bit Linux's entry")
	}
	old := amd64.Features
	defer func() { amd64.Features = old }()
	amd64.Features.SEP = true
	_, err := Plan(mit)
	assert.NoError(t, err)
	for _, c := range []experiment.Config{
		w32(experiment.Off, experiment.Int80, experiment.Mitigated),
		w32(experiment.Off, experiment.Sysenter, experiment.Mitigated),
		{World: experiment.W32, Mode: experiment.Off, Entry: experiment.Sysenter, Flavour: experiment.Mitigated, Copy: experiment.Direct, Stamps: true},
	} {
		_, err := Plan(c)
		assert.ErrorContains(t, err, "the mitigated trampoline is SYSENTER's with the direct copy method, without stamps", "%v", c)
	}
	_, err = Plan(experiment.Config{World: experiment.W32, Mode: experiment.Off, Entry: experiment.Sysenter, Flavour: experiment.Linux, Copy: experiment.Direct, Knobs: experiment.KnobsOf(experiment.VERW)})
	assert.ErrorContains(t, err, "need the mitigated flavour")
	c := mit
	c.Knobs = experiment.KnobsOf(experiment.IBPB)
	_, err = Plan(c)
	assert.ErrorIs(t, err, pti.ErrUnsupported, "no IA32_PRED_CMD")
	assert.ErrorContains(t, err, "ibpb: no IA32_PRED_CMD")
	amd64.Features.PredCmd = true
	_, err = Plan(c)
	assert.NoError(t, err)
	c.Knobs = experiment.Knobs32()
	s, err := Plan(c)
	assert.NoError(t, err)
	assert.Equal(t, uint32(sites.SiteVERW|sites.SiteRetpoline|sites.SiteIBPB|sites.SiteRSB), s.sites)
	c.Knobs = experiment.KnobsOf(experiment.Retpoline)
	s, err = Plan(c)
	assert.NoError(t, err)
	assert.Equal(t, uint32(sites.SiteRetpoline), s.sites)
	c.Knobs = 0
	s, err = Plan(c)
	assert.NoError(t, err)
	assert.Zero(t, s.sites)
	for _, m := range []experiment.Mode{experiment.Off, experiment.On} {
		c.Mode = m
		s, err := Plan(c)
		assert.NoError(t, err)
		assert.Equal(t, trampolines[trampolineKey{experiment.Mitigated, m}].sysenter[copyKey{experiment.Direct, false}], s.sysenter, "%v", m)
		assert.Equal(t, trampolines[trampolineKey{experiment.Linux, m}].int80, s.int80, "%v", m)
		assert.Equal(t, uint32(layout.EntrySysenter), s.CallEntry())
	}
}
