package isolation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/pti"
)

// spreadOf returns n made-up load times: base plus a deterministic spread
// of width, with every tenth one an outlier at slow.
func spreadOf(n int, base, width, slow uint64) []uint64 {
	xs := make([]uint64, n)
	for i := range xs {
		xs[i] = base + uint64(i*7919)%width
		if i%10 == 9 {
			xs[i] = slow
		}
	}
	return xs
}

func TestCalibrate(t *testing.T) {
	// Hardware-like: hits about 40 ticks, misses about 250, a slow hit
	// now and then (an interrupt's worth): separable, the threshold
	// between the hits' p90 and the misses' p10.
	hit, miss, ok, th := Calibrate(spreadOf(1000, 36, 10, 600), spreadOf(1000, 220, 60, 900))
	assert.True(t, ok)
	assert.Less(t, hit.P90, th)
	assert.Less(t, th, miss.P10)
	assert.Equal(t, hit.P90+(miss.P10-hit.P90)/2, th)
	assert.LessOrEqual(t, hit.Min, hit.P10)
	assert.Equal(t, uint64(600), hit.Max)

	// An emulator's icount: every load the same instructions.
	same := func() []uint64 { return spreadOf(100, 11, 1, 11) }
	hit, miss, ok, th = Calibrate(same(), same())
	assert.False(t, ok, "equal distributions")
	assert.Zero(t, th)
	assert.Equal(t, hit, miss)

	// TCG's real time: no cache model, hits and misses overlap.
	_, _, ok, _ = Calibrate(spreadOf(1000, 80, 200, 400), spreadOf(1000, 90, 200, 400))
	assert.False(t, ok, "overlapping distributions")

	// A tenth of slow hits does not decide it; more than that does.
	slow := spreadOf(1000, 36, 10, 36)
	for i := range 150 {
		slow[i] = 600
	}
	_, _, ok, _ = Calibrate(slow, spreadOf(1000, 220, 60, 900))
	assert.False(t, ok, "15%% of the hits slower than every miss")
}

func TestLeakedByte(t *testing.T) {
	c := make([]uint64, pti.OracleLines)
	_, ok := leakedByte(c)
	assert.False(t, ok, "no hits")
	c[0] = 90 // a suppressed read's 0 never wins
	_, ok = leakedByte(c)
	assert.False(t, ok)
	c['P'], c['T'] = 40, 40
	b, ok := leakedByte(c)
	assert.True(t, ok)
	assert.Equal(t, byte('P'), b, "a tie goes to the lower value")
	c['T'] = 41
	b, _ = leakedByte(c)
	assert.Equal(t, byte('T'), b)
}

// The secret: 16 distinct bytes, none 0.
func TestSecretPattern(t *testing.T) {
	assert.Len(t, pti.SecretPattern, 16)
	seen := map[byte]bool{}
	for i := range len(pti.SecretPattern) {
		b := pti.SecretPattern[i]
		assert.NotZero(t, b)
		assert.False(t, seen[b], "byte %q twice", b)
		seen[b] = true
	}
}

// The oracle's data fits a process, its regions do not overlap, and the
// plan's samples fit theirs.
func TestOracleLayout(t *testing.T) {
	assert.LessOrEqual(t, oracleDataPages, pti.MaxDataPages)
	assert.LessOrEqual(t, oracleCounters+8*pti.OracleLines, oracleSamplesOff)
	assert.LessOrEqual(t, oracleSamplesOff+16*MaxOracleSamples, oracleCalLine)
	assert.LessOrEqual(t, oracleCalLine+64, oracleProbe)
	assert.Zero(t, oracleProbe%amd64.PageSize)
	assert.LessOrEqual(t, oracleSamples.Of(bench.DefaultPlan()), MaxOracleSamples)
}

// A recovered read is as expected only with one fault per attempt at the
// byte, from ring 3, P=1 where the secret is mapped and P=0 where not.
func TestOracleFaultExpected(t *testing.T) {
	const addr = 0x10203004
	ok := pti.Result{Reason: pti.ReasonExit, Recovered: 3, RecoverCR2: addr, RecoverError: amd64.PF_U | amd64.PF_P}
	assert.True(t, oracleFaultExpected(true, ok, 3, addr))
	assert.False(t, oracleFaultExpected(false, ok, 3, addr), "P=1 where the secret is not mapped")
	absent := ok
	absent.RecoverError = amd64.PF_U
	assert.True(t, oracleFaultExpected(false, absent, 3, addr))
	assert.False(t, oracleFaultExpected(true, absent, 3, addr), "P=0 where it is mapped")
	assert.False(t, oracleFaultExpected(true, ok, 4, addr), "a fault short")
	assert.False(t, oracleFaultExpected(true, ok, 3, addr+1), "another address")
	bad := ok
	bad.Reason = pti.ReasonFault
	assert.False(t, oracleFaultExpected(true, bad, 3, addr), "the run ended with a fault")
}

// The kernel secret is read in every mode, mapped (P=1) under off, lass
// and asi and not under the other isolated modes; the sensitive secret
// only where that differs from it, under the asi modes, where it is not
// mapped (P=0).
func TestOracleSecrets(t *testing.T) {
	require.Len(t, oracleSecrets, 2)
	kernel, sensitive := oracleSecrets[0], oracleSecrets[1]
	assert.Equal(t, pti.KernelSecret, kernel.secret)
	assert.Empty(t, kernel.target, "the kernel secret's rows name no target")
	assert.Equal(t, pti.SensitiveSecret, sensitive.secret)
	for _, m := range experiment.Modes() {
		assert.True(t, kernel.readIn(m), "%v", m)
		assert.Equal(t, m.ASI(), sensitive.readIn(m), "%v", m)
		assert.Equal(t, !m.Isolated() || m.ASI(), kernel.kind.Mapped(m), "%v: the kernel secret mapped", m)
		if m.ASI() {
			assert.False(t, sensitive.kind.Mapped(m), "%v: the sensitive secret not mapped", m)
		}
	}
}

// The deferred modes' area is present (a protection fault, P=1) under
// those modes only, off included among the others (P=0: not mapped), and
// LASS's #GP under lass (the upper half).
func TestProbeDeferredArea(t *testing.T) {
	target := bench.ProbeTarget{Name: "defer area", Address: pti.EntryTrampStack, Kind: bench.DeferredArea}
	for _, m := range experiment.Modes() {
		fault := func(ec uint64) bench.Exit {
			return bench.Exit{Faulted: true, Vector: amd64.VectorPF, ErrorCode: ec, CS: 0x33, CR2: pti.EntryTrampStack}
		}
		present, absent := fault(amd64.PF_P|amd64.PF_U), fault(amd64.PF_U)
		gp := bench.Exit{Faulted: true, Vector: amd64.VectorGP, CS: 0x33}
		lass := m.Row().LASS
		assert.Equal(t, m.Deferred(), expected(target, m, present), "%v: P=1", m)
		assert.Equal(t, !m.Deferred() && !lass, expected(target, m, absent), "%v: P=0", m)
		assert.Equal(t, lass, expected(target, m, gp), "%v: LASS's #GP(0)", m)
		assert.False(t, expected(target, m, bench.Exit{Exited: true}), "%v: a read that succeeds", m)
	}
}

// Under lass an upper-half target is LASS's #GP(0) from ring 3, a
// lower-half one (the kernel text) the present-page #PF of off.
func TestProbeLASS(t *testing.T) {
	const text = 0x1001000
	gp := bench.Exit{Faulted: true, Vector: amd64.VectorGP, CS: 0x33}
	entry := bench.ProbeTarget{Name: "entry area", Address: pti.EntryData, Kind: bench.EntryArea}
	assert.True(t, expected(entry, experiment.LASS, gp))
	assert.False(t, expected(entry, experiment.Off, gp))
	gp.ErrorCode = 8
	assert.False(t, expected(entry, experiment.LASS, gp), "a #GP with a selector error code is not LASS's")
	kernel := bench.ProbeTarget{Name: "kernel text", Address: text, Kind: bench.KernelOnly}
	pf := bench.Exit{Faulted: true, Vector: amd64.VectorPF, ErrorCode: amd64.PF_P | amd64.PF_U, CS: 0x33, CR2: text}
	assert.True(t, expected(kernel, experiment.LASS, pf), "LASS does not cover the lower half")
}

// Under the asi modes ring 3's table is the nonsensitive kernel table: the
// kernel text is present (P=1, as under off), a sensitive page is not
// (P=0, as under on); under off both are present, under on neither.
func TestProbeASI(t *testing.T) {
	const text, sensitive = 0x1001000, 0x4001000
	targets := []bench.ProbeTarget{
		{Name: "kernel text", Address: text, Kind: bench.KernelOnly},
		{Name: "sensitive page", Address: sensitive, Kind: bench.Sensitive},
	}
	present := map[experiment.Mode][2]bool{ // kernel text, sensitive page
		experiment.Off: {true, true}, experiment.On: {false, false}, experiment.OnPCID: {false, false},
		experiment.ASI: {true, false}, experiment.ASIPCID: {true, false},
	}
	for m, want := range present {
		for i, target := range targets {
			fault := func(ec uint64) bench.Exit {
				return bench.Exit{Faulted: true, Vector: amd64.VectorPF, ErrorCode: ec, CS: 0x33, CR2: target.Address}
			}
			assert.Equal(t, want[i], expected(target, m, fault(amd64.PF_P|amd64.PF_U)), "%v %s: P=1", m, target.Name)
			assert.Equal(t, !want[i], expected(target, m, fault(amd64.PF_U)), "%v %s: P=0", m, target.Name)
			assert.False(t, expected(target, m, bench.Exit{Exited: true}), "%v %s: a read that succeeds", m, target.Name)
		}
	}
}
