package pti

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
)

// How each knob runs: trampoline sites, IA32_SPEC_CTRL bits set once, the
// context switch's knobs; the MSR knobs unsupported without their MSRs.
func TestPlanMitigations(t *testing.T) {
	all := experiment.KnobsOf(experiment.EntryMitigations()...)
	tcg := SpecCaps{} // QEMU TCG's default CPU: no speculation controls
	p, err := PlanMitigations(experiment.KnobsOf(experiment.VERW, experiment.RSB, experiment.BHB, experiment.LFENCE, experiment.Retpoline), tcg)
	require.NoError(t, err)
	assert.Equal(t, MitigationPlan{Sites: siteVERW | siteBHB | siteLFENCE | siteRetpoline, RSB: true}, p)
	_, err = PlanMitigations(experiment.KnobsOf(experiment.IBRS), tcg)
	assert.True(t, errors.Is(err, ErrUnsupported))
	assert.ErrorContains(t, err, "ibrs: no IA32_SPEC_CTRL")
	_, err = PlanMitigations(experiment.KnobsOf(experiment.IBPB), tcg)
	assert.ErrorContains(t, err, "ibpb: no IA32_PRED_CMD")
	assert.ErrorIs(t, CheckKnobs(experiment.KnobsOf(experiment.IBPB), tcg), ErrUnsupported)
	assert.NoError(t, CheckKnobs(experiment.Knobs32(), SpecCaps{PredCmd: true}), "the 32-bit knobs need IA32_PRED_CMD only")

	// Skylake client: IBRS on entry and exit, the BHB loop.
	skl := SpecCaps{SpecCtrl: true, PredCmd: true, MDClear: true}
	p, err = PlanMitigations(all, skl)
	require.NoError(t, err)
	assert.Equal(t, MitigationPlan{Sites: siteVERW | siteIBRS | siteBHB | siteLFENCE | siteRetpoline, IBPB: true, RSB: true}, p)
	assert.Empty(t, How(experiment.IBRS, skl))

	// eIBRS and BHI_DIS_S: set once, their sites off.
	adl := SpecCaps{SpecCtrl: true, PredCmd: true, MDClear: true, EIBRS: true, BHIDisS: true}
	p, err = PlanMitigations(experiment.KnobsOf(experiment.IBRS, experiment.BHB), adl)
	require.NoError(t, err)
	assert.Equal(t, MitigationPlan{SpecOnce: amd64.SPEC_CTRL_IBRS | amd64.SPEC_CTRL_BHI_DIS_S}, p)
	assert.Equal(t, "eIBRS: set once for the run", How(experiment.IBRS, adl))
	assert.Equal(t, "BHI_DIS_S set once for the run", How(experiment.BHB, adl))
	assert.Equal(t, "no MD_CLEAR: VERW clears nothing", How(experiment.VERW, tcg))

	// The other flavours take no knobs.
	_, err = Plan(experiment.Config{World: experiment.W64, Flavour: experiment.Linux, Knobs: experiment.KnobsOf(experiment.VERW)})
	assert.ErrorContains(t, err, "need the mitigated flavour")
}

// Each knob acts where its row says: a process-switch knob in the context
// switch, the others at their trampoline site (without eIBRS and
// BHI_DIS_S, which set IA32_SPEC_CTRL once instead).
func TestPlanMitigationsActs(t *testing.T) {
	caps := SpecCaps{SpecCtrl: true, PredCmd: true, MDClear: true}
	for _, m := range experiment.EntryMitigations() {
		p, err := PlanMitigations(experiment.KnobsOf(m), caps)
		require.NoError(t, err, "%v", m)
		onSwitch := m.Row().Acts&experiment.AtProcessSwitch != 0
		assert.Equal(t, onSwitch, p.IBPB || p.RSB, "%v", m)
		assert.Equal(t, !onSwitch, p.Sites == uint64(m.Site()), "%v", m)
		assert.Zero(t, p.SpecOnce, "%v", m)
	}
}

// The asi actions: their sites are the knobs' bits, and a CPU without
// IA32_FLUSH_CMD cannot run l1d.
func TestASIActions(t *testing.T) {
	assert.Equal(t, uint64(siteVERW|siteL1D|siteRSB), asiSites(experiment.KnobsOf(experiment.VERW, experiment.L1D, experiment.RSB)))
	assert.Zero(t, asiSites(0))
	l1d := experiment.KnobsOf(experiment.L1D)
	assert.ErrorIs(t, CheckKnobs(l1d, SpecCaps{}), ErrUnsupported)
	assert.ErrorContains(t, CheckKnobs(l1d, SpecCaps{}), "l1d: no IA32_FLUSH_CMD (CPUID.(EAX=07H,ECX=0):EDX[28])")
	assert.NoError(t, CheckKnobs(l1d, SpecCaps{FlushCmd: true}))
	assert.NoError(t, CheckKnobs(experiment.KnobsOf(experiment.VERW, experiment.RSB), SpecCaps{}), "verw and rsb run everywhere")
}
