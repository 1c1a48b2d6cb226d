package ladder

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
)

func TestPlanMitigations(t *testing.T) {
	assert.Equal(t, []string{"none", "verw", "ibrs", "ibpb", "rsb", "bhb", "lfence", "retpoline", "linux"}, mitigations.Of(bench.DefaultPlan()))
	p, errs := bench.ParsePlan([]byte("mitigations = none, retpoline,verw ,linux\n"))
	require.Empty(t, errs)
	assert.Equal(t, []string{"none", "retpoline", "verw", "linux"}, mitigations.Of(p))

	for _, tc := range []struct{ in, err string }{
		{"mitigations = verw,none", "mitigations must start with none: the knobs are compared with it"},
		{"mitigations = none,ibrs,spectre", "mitigations must be a comma-separated list of bhb, ibpb, ibrs, lfence, linux, none, retpoline, rsb, verw"},
		{"mitigations = none,verw,verw", "mitigations lists verw twice"},
	} {
		p, errs := bench.ParsePlan([]byte("n = 5\n" + tc.in + "\n"))
		require.Len(t, errs, 1, tc.in)
		assert.Equal(t, 2, errs[0].Line, "the plan line's number")
		assert.Equal(t, tc.err, errs[0].Err)
		assert.Equal(t, mitigations.Of(bench.DefaultPlan()), mitigations.Of(p), "the default stays")
	}
}

// The ladder's layout: the linux flavour, none over it, each knob alone
// over none, the supported knobs stacked in the plan's order (the first
// rung is the first knob alone: not measured twice), each over the rung
// below, and linux's set over none.
func TestLadderRungs(t *testing.T) {
	order, withLinux := ladderOrder([]string{"none", "retpoline", "ibrs", "verw", "rsb", "bhb", "linux"})
	assert.Equal(t, []experiment.Mitigation{experiment.Retpoline, experiment.IBRS, experiment.VERW, experiment.RSB, experiment.BHB}, order)
	assert.True(t, withLinux)
	noMSR := func(m experiment.Mitigation) bool { return m != experiment.IBRS && m != experiment.IBPB }
	linux := experiment.KnobsOf(experiment.VERW, experiment.RSB, experiment.Retpoline)
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
	rs = ladderRungs(order, func(experiment.Mitigation) bool { return true }, noMSR, linux, false)
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
	assert.Equal(t, experiment.KnobsOf(experiment.VERW, experiment.RSB, experiment.Retpoline), linuxKnobs(ks))
	require.Equal(t, len(cpustate.LinuxKnobNames), len(experiment.EntryMitigations()))
	for i, m := range experiment.EntryMitigations() {
		assert.Equal(t, cpustate.LinuxKnobNames[i], m.String(), "cpustate names pti's knobs")
	}
}

// The 32-bit world runs the knobs Linux's entry_32.S has and says the
// others are not in it, whatever the CPU (here the host's zero
// features: the knobs it has fail on SYSENTER, a CPU feature, instead);
// its ladder rungs are SYSENTER's, with the direct trampoline.
func TestMitigated32(t *testing.T) {
	for _, m := range []experiment.Mitigation{experiment.IBRS, experiment.BHB, experiment.LFENCE} {
		c := bench.ConfigOf(experiment.Off, experiment.Sysenter, experiment.Mitigated)
		c.Knobs = experiment.KnobsOf(experiment.VERW, m)
		_, err := bench.World32.Plan(c)
		assert.ErrorIs(t, err, experiment.ErrNotIn32BitEntry, "%v", m)
		assert.Equal(t, m.String()+": not in 32-bit Linux's entry", bench.ReasonOf(err), "%v", m)
	}
	for _, m := range []experiment.Mitigation{experiment.VERW, experiment.IBPB, experiment.RSB, experiment.Retpoline} {
		c := bench.ConfigOf(experiment.Off, experiment.Sysenter, experiment.Mitigated)
		c.Knobs = experiment.KnobsOf(m)
		_, err := bench.World32.Plan(c)
		assert.NotErrorIs(t, err, experiment.ErrNotIn32BitEntry, "%v", m)
	}
	c := ladderConfig(bench.World32, experiment.On, experiment.Mitigated)
	assert.Equal(t, experiment.Sysenter, c.Entry)
	assert.Equal(t, experiment.Direct, c.Copy)
	assert.Equal(t, experiment.Syscall, ladderConfig(bench.World64, experiment.On, experiment.Linux).Entry)
	assert.Equal(t, 4, ladderSites(bench.World32))
	assert.Equal(t, 6, ladderSites(bench.World64))
}
