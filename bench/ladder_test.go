package bench

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/pti"
)

func TestPlanMitigations(t *testing.T) {
	assert.Equal(t, []string{"none", "verw", "ibrs", "ibpb", "rsb", "bhb", "lfence", "retpoline", "linux"}, DefaultPlan().Mitigations)
	p, errs := ParsePlan([]byte("benchmarks = ladder\nmitigations = none, retpoline,verw ,linux\n"))
	require.Empty(t, errs)
	assert.Equal(t, []string{"ladder"}, p.Benchmarks)
	assert.Equal(t, []string{"none", "retpoline", "verw", "linux"}, p.Mitigations)

	for _, tc := range []struct{ in, err string }{
		{"mitigations = verw,none", "mitigations must start with none: the knobs are compared with it"},
		{"mitigations = none,ibrs,spectre", "mitigations must be a comma-separated list of bhb, ibpb, ibrs, lfence, linux, none, retpoline, rsb, verw"},
		{"mitigations = none,verw,verw", "mitigations lists verw twice"},
	} {
		p, errs := ParsePlan([]byte("n = 5\n" + tc.in + "\n"))
		require.Len(t, errs, 1, tc.in)
		assert.Equal(t, 2, errs[0].Line, "the plan line's number")
		assert.Equal(t, tc.err, errs[0].Err)
		assert.Equal(t, DefaultPlan().Mitigations, p.Mitigations, "the default stays")
	}
}

// The ladder's layout: the linux flavour, none over it, each knob alone
// over none, the supported knobs stacked in the plan's order (the first
// rung is the first knob alone: not measured twice), each over the rung
// below, and linux's set over none.
func TestLadderRungs(t *testing.T) {
	order, withLinux := ladderOrder([]string{"none", "retpoline", "ibrs", "verw", "rsb", "bhb", "linux"})
	assert.Equal(t, []pti.Mitigation{pti.Retpoline, pti.IBRS, pti.VERW, pti.RSB, pti.BHB}, order)
	assert.True(t, withLinux)
	noMSR := func(m pti.Mitigation) bool { return m != pti.IBRS && m != pti.IBPB }
	linux := pti.KnobsOf(pti.VERW, pti.RSB, pti.Retpoline)
	rs := ladderRungs(order, onEntry, noMSR, linux, withLinux)
	var got []string
	for _, r := range rs {
		over := "-"
		if r.Over >= 0 {
			over = rs[r.Over].label()
		}
		got = append(got, r.Part+" "+r.label()+" over "+over)
	}
	assert.Equal(t, []string{
		"flavour linux flavour over -",
		"none none over linux flavour",
		"alone retpoline over none",
		"alone ibrs over none",
		"alone verw over none",
		"alone bhb over none",
		"stacked verw+retpoline over retpoline",
		"stacked verw+bhb+retpoline over verw+retpoline",
		"linux verw+rsb+retpoline over none",
	}, got)

	// Every knob acts on the ping-pong; without linux no linux rung.
	rs = ladderRungs(order, func(pti.Mitigation) bool { return true }, noMSR, linux, false)
	assert.Len(t, rs, 2+5+3)
	assert.Equal(t, partStacked, rs[len(rs)-1].Part)
	assert.Equal(t, "verw+rsb+bhb+retpoline", rs[len(rs)-1].label())
}

// Each rung's increment is its mean less that of the rung it is over;
// none where either did not measure.
func TestLadderIncrements(t *testing.T) {
	rs := []rung{{Over: -1}, {Over: 0}, {Over: 1}, {Over: 1}, {Over: 2}, {Over: 3}}
	mean := []float64{86, 98, 110, 0, 171.5, 200}
	ok := []bool{true, true, true, false, true, true}
	inc := increments(rs, mean, ok)
	assert.True(t, math.IsNaN(inc[0]), "the bottom rung is over nothing")
	assert.Equal(t, 12.0, inc[1])
	assert.Equal(t, 12.0, inc[2])
	assert.True(t, math.IsNaN(inc[3]), "unsupported")
	assert.Equal(t, 61.5, inc[4])
	assert.True(t, math.IsNaN(inc[5]), "over an unsupported rung")
}

func TestLinuxKnobSet(t *testing.T) {
	ks := []cpustate.LinuxKnob{{Name: "verw", On: true}, {Name: "ibrs"}, {Name: "rsb", On: true}, {Name: "retpoline", On: true}}
	assert.Equal(t, pti.KnobsOf(pti.VERW, pti.RSB, pti.Retpoline), linuxKnobs(ks))
	require.Equal(t, len(cpustate.LinuxKnobNames), len(pti.AllMitigations()))
	for i, m := range pti.AllMitigations() {
		assert.Equal(t, cpustate.LinuxKnobNames[i], m.String(), "cpustate names pti's knobs")
	}
}

// The 32-bit world runs the knobs Linux's entry_32.S has and says the
// others are not in it, whatever the CPU (here the host's zero
// features: the knobs it has fail on SYSENTER, a CPU feature, instead);
// its ladder rungs are SYSENTER's, with the direct trampoline.
func TestMitigated32(t *testing.T) {
	for _, m := range []pti.Mitigation{pti.IBRS, pti.BHB, pti.LFENCE} {
		c := config(pti.Off, Sysenter, pti.Mitigated)
		c.Knobs = pti.KnobsOf(pti.VERW, m)
		err := World32.Supported(c)
		assert.ErrorIs(t, err, i386pae.ErrNotIn32BitEntry, "%v", m)
		assert.Equal(t, m.String()+": not in 32-bit Linux's entry", reasonOf(err), "%v", m)
	}
	for _, m := range []pti.Mitigation{pti.VERW, pti.IBPB, pti.RSB, pti.Retpoline} {
		c := config(pti.Off, Sysenter, pti.Mitigated)
		c.Knobs = pti.KnobsOf(m)
		assert.NotErrorIs(t, World32.Supported(c), i386pae.ErrNotIn32BitEntry, "%v", m)
	}
	c := ladderConfig(World32, pti.On, pti.Mitigated)
	assert.Equal(t, Sysenter, c.Entry)
	assert.Equal(t, i386pae.Direct, config32(c).Copy)
	assert.Equal(t, Syscall, ladderConfig(World64, pti.On, pti.Linux).Entry)
	assert.Equal(t, 4, ladderSites(World32))
	assert.Equal(t, 6, ladderSites(World64))
}
