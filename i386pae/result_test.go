package i386pae

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
		offs := []uint32{tr.sysenterMinimal, tr.int80Minimal, tr.int80Linux}
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
