package i386pae

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/amd64"
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

// Supported lists the modes the 32-bit world has: any other is refused,
// a PCID one as not in PAE.
func TestSupportedModes(t *testing.T) {
	assert.ErrorIs(t, Supported(Config{Mode: pti.OnPCID}), ErrNotInPAE)
	assert.EqualError(t, Supported(Config{Mode: pti.OnPCID}), "on+pcid/sysenter/minimal/nonglobal: PCID: not in PAE (PCIDs exist only in IA-32e mode)")
	err := Supported(Config{Mode: pti.Mode(len(pti.Modes())), Entry: Int80})
	assert.ErrorIs(t, err, ErrNotInPAE)
	assert.EqualError(t, err, "mode(7)/int80/minimal/nonglobal: isolation mode mode(7): not in PAE (the 32-bit kernel has trampolines for off and on)")
	// The deferred modes are the 64-bit world's, with PCIDs or without.
	for _, m := range []pti.Mode{pti.OnDefer, pti.OnDeferPCID, pti.OnNoSwitch, pti.OnNoSwitchPCID} {
		err := Supported(Config{Mode: m})
		assert.ErrorIs(t, err, ErrNotInPAE, "%v", m)
		assert.EqualError(t, err, m.String()+"/sysenter/minimal/nonglobal: isolation mode "+m.String()+": not in PAE (the deferred and no-switch trampolines are the 64-bit world's)")
	}
	for _, m := range []pti.Mode{pti.Off, pti.On} {
		assert.NoError(t, Supported(Config{Mode: m, Entry: Int80}), "%v", m)
		assert.NoError(t, Supported(Config{Mode: m, Entry: Int80, Flavour: pti.Linux}), "%v", m)
	}
}

// Every mode's trampolines are routines of the blob, none shared between
// modes or roles.
func TestModeTrampolines(t *testing.T) {
	starts := map[uint32]string{}
	for _, s := range blobSymbols {
		starts[s.off] = s.name
	}
	seen := map[uint32]bool{}
	for m, tr := range modes {
		offs := []uint32{tr.sysenterMinimal, tr.int80Minimal, tr.int80Linux, tr.sysenterMitigated}
		for _, c := range tr.sysenterLinux {
			offs = append(offs, c[:]...)
		}
		for _, off := range offs {
			name, ok := starts[off]
			assert.True(t, ok, "%v: %#x is no routine", m, off)
			assert.False(t, seen[off], "%v: %s twice", m, name)
			seen[off] = true
		}
	}
}

// The mitigated flavour: SYSENTER with the direct copy method only; the
// knobs Linux's entry_32.S lacks refused before any CPU check (the host's
// zero features would fail SYSENTER), as ErrNotIn32BitEntry; knobs only
// with the mitigated flavour; each knob its site bit; the mitigated
// trampoline its own routine per mode, with the linux INT 0x80 gate.
func TestMitigatedConfig(t *testing.T) {
	mit := Config{Mode: pti.Off, Entry: Sysenter, Flavour: pti.Mitigated, Copy: Direct}
	for _, m := range []pti.Mitigation{pti.IBRS, pti.BHB, pti.LFENCE} {
		c := mit
		c.Knobs = pti.KnobsOf(pti.VERW, m)
		err := Supported(c)
		assert.ErrorIs(t, err, ErrNotIn32BitEntry, "%v", m)
		assert.EqualError(t, err, "off/sysenter/mitigated/"+c.Knobs.String()+"/nonglobal: "+m.String()+": not in 32-bit Linux's entry")
	}
	assert.Equal(t, pti.KnobsOf(pti.VERW, pti.IBPB, pti.RSB, pti.Retpoline), Mitigations32)
	old := amd64.Features
	defer func() { amd64.Features = old }()
	amd64.Features.SEP = true
	assert.NoError(t, Supported(mit))
	for _, c := range []Config{
		{Mode: pti.Off, Entry: Int80, Flavour: pti.Mitigated},
		{Mode: pti.Off, Entry: Sysenter, Flavour: pti.Mitigated, Copy: Movsl},
		{Mode: pti.Off, Entry: Sysenter, Flavour: pti.Mitigated, Copy: Direct, Stamps: true},
	} {
		assert.ErrorContains(t, Supported(c), "the mitigated trampoline is SYSENTER's with the direct copy method, without stamps", "%v", c)
	}
	assert.ErrorContains(t, Supported(Config{Mode: pti.Off, Entry: Sysenter, Flavour: pti.Linux, Copy: Direct, Knobs: pti.KnobsOf(pti.VERW)}), "need the mitigated flavour")
	c := mit
	c.Knobs = pti.KnobsOf(pti.IBPB)
	assert.ErrorIs(t, Supported(c), pti.ErrUnsupported, "no IA32_PRED_CMD")
	amd64.Features.PredCmd = true
	assert.NoError(t, Supported(c))
	c.Knobs = Mitigations32
	assert.NoError(t, Supported(c))
	assert.Equal(t, uint32(sites.SiteVERW|sites.SiteRetpoline|sites.SiteIBPB|sites.SiteRSB), siteBits(c.Knobs))
	assert.Equal(t, uint32(sites.SiteRetpoline), siteBits(pti.KnobsOf(pti.Retpoline)))
	assert.Zero(t, siteBits(0))
	for _, m := range []pti.Mode{pti.Off, pti.On} {
		c.Mode = m
		sysenter, int80 := trampoline(c)
		assert.Equal(t, modes[m].sysenterMitigated, sysenter, "%v", m)
		assert.Equal(t, modes[m].int80Linux, int80, "%v", m)
	}
	assert.Equal(t, "on/sysenter/mitigated/verw+ibpb+rsb+retpoline/nonglobal", c.String())
}
