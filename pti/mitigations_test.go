package pti

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
)

func TestKnobNames(t *testing.T) {
	assert.Equal(t, "none", Knobs(0).String())
	assert.Equal(t, "verw+ibrs+retpoline", KnobsOf(Retpoline, VERW, IBRS).String())
	assert.Equal(t, []Mitigation{VERW, BHB}, KnobsOf(BHB, VERW).List())
	assert.Len(t, AllMitigations(), 7)
	assert.Equal(t, "mitigation(7)", Mitigation(7).String())
	assert.Equal(t, "on/mitigated/nonglobal/verw", Config{Mode: On, Flavour: Mitigated, Knobs: KnobsOf(VERW)}.String())
	assert.Equal(t, "on/linux/nonglobal", Config{Mode: On, Flavour: Linux}.String())
	assert.True(t, Mitigated.PtRegs())
	assert.True(t, Linux.PtRegs())
	assert.False(t, Minimal.PtRegs())
}

// How each knob runs: trampoline sites, IA32_SPEC_CTRL bits set once, the
// context switch's knobs; the MSR knobs unsupported without their MSRs.
func TestPlanMitigations(t *testing.T) {
	all := KnobsOf(AllMitigations()...)
	tcg := SpecCaps{} // QEMU TCG's default CPU: no speculation controls
	p, err := PlanMitigations(KnobsOf(VERW, RSB, BHB, LFENCE, Retpoline), tcg)
	require.NoError(t, err)
	assert.Equal(t, MitigationPlan{Sites: siteVERW | siteBHB | siteLFENCE | siteRetpoline, RSB: true}, p)
	_, err = PlanMitigations(KnobsOf(IBRS), tcg)
	assert.True(t, errors.Is(err, ErrUnsupported))
	assert.ErrorContains(t, err, "ibrs: no IA32_SPEC_CTRL")
	_, err = PlanMitigations(KnobsOf(IBPB), tcg)
	assert.ErrorContains(t, err, "ibpb: no IA32_PRED_CMD")

	// Skylake client: IBRS on entry and exit, the BHB loop.
	skl := SpecCaps{SpecCtrl: true, PredCmd: true, MDClear: true}
	p, err = PlanMitigations(all, skl)
	require.NoError(t, err)
	assert.Equal(t, MitigationPlan{Sites: siteVERW | siteIBRS | siteBHB | siteLFENCE | siteRetpoline, IBPB: true, RSB: true}, p)
	assert.Empty(t, How(IBRS, skl))

	// eIBRS and BHI_DIS_S: set once, their sites off.
	adl := SpecCaps{SpecCtrl: true, PredCmd: true, MDClear: true, EIBRS: true, BHIDisS: true}
	p, err = PlanMitigations(KnobsOf(IBRS, BHB), adl)
	require.NoError(t, err)
	assert.Equal(t, MitigationPlan{SpecOnce: amd64.SPEC_CTRL_IBRS | amd64.SPEC_CTRL_BHI_DIS_S}, p)
	assert.Equal(t, "eIBRS: set once for the run", How(IBRS, adl))
	assert.Equal(t, "BHI_DIS_S set once for the run", How(BHB, adl))
	assert.Equal(t, "no MD_CLEAR: VERW clears nothing", How(VERW, tcg))

	// The other flavours take no knobs.
	assert.ErrorContains(t, Supported(Config{Flavour: Linux, Knobs: KnobsOf(VERW)}), "need the mitigated flavour")
}
