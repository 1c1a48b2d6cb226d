package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/cpustate/cpustatetest"
)

// loopSamples are the samples of a loop of 1 warm-up and len(perRepeat)
// measured repeats whose fixed counter 0 (slot 0) advances by
// perRepeat[i] instructions in measured repeat i, starting at start (a
// 48-bit counter value); nmi[i] marks repeat i as disturbed by an NMI.
func loopSamples(start uint64, perRepeat []uint64, nmi map[int]bool) []cpustate.Sample {
	s := []cpustate.Sample{{PMC: [cpustate.SamplePMCs]uint64{start - 5000}}}
	v, nmis := start, uint64(0)
	s = append(s, cpustate.Sample{PMC: [cpustate.SamplePMCs]uint64{v & (1<<48 - 1)}})
	for i, d := range perRepeat {
		v += d
		if nmi[i] {
			nmis++
		}
		s = append(s, cpustate.Sample{PMC: [cpustate.SamplePMCs]uint64{v & (1<<48 - 1)}, NMI: nmis})
	}
	return s
}

// null64 is the minimal flavour's null call under PTI off, whose path is
// 15 instructions (pathlength).
var null64 = contract.Subject{Bench: "null", Width: 64, Mode: "off", Entry: "syscall", Flavour: "minimal"}

// TestPMUCheck: the cross-check's arithmetic on an Ivy Bridge's counters.
// A repeat of n = 10 calls retires n*(C+L)+K instructions between its
// sample calls, one of the empty loop n*L+K (L = 6, the loop's own; K =
// 57, the sample call and the RDTSC boundary): the difference per call is
// C, the path's 15 instructions.
func TestPMUCheck(t *testing.T) {
	const n, C, L, K = 10, 15, 6, 57
	calls, empty := uint64(n*(C+L)+K), uint64(n*L+K)
	withPMU(t, DefaultPlan(), ivyBridgePMU(), func(string, string) {
		check := func(s contract.Subject, c, e []cpustate.Sample) *contract.PMUCheck {
			return pmuNow.check(s, n, xcheckOf(c, e, len(c)-2, 1))
		}
		t.Run("match", func(t *testing.T) {
			// The counter wraps past 2^48 in the second repeat.
			got := check(null64, loopSamples(1<<48-300, []uint64{calls, calls, calls}, nil), loopSamples(1000, []uint64{empty, empty, empty}, nil))
			assert.Equal(t, &contract.PMUCheck{Status: "ok", Expected: C, Measured: C, Repeats: 3, EmptyRepeats: 3}, got)
		})
		t.Run("global pages change no path", func(t *testing.T) {
			g := null64
			g.Global = true
			got := check(g, loopSamples(100, []uint64{calls, calls}, nil), loopSamples(1000, []uint64{empty, empty}, nil))
			assert.Equal(t, "ok", got.Status)
		})
		t.Run("mismatch", func(t *testing.T) {
			// One instruction more in one repeat of 30 calls: 1/30 per call.
			got := check(null64, loopSamples(100, []uint64{calls, calls + 1, calls}, nil), loopSamples(1000, []uint64{empty, empty, empty}, nil))
			require.NotNil(t, got)
			assert.Equal(t, "mismatch", got.Status)
			assert.Equal(t, 15.033, got.Measured)
			assert.Equal(t, "validity warning: the CPU retired 15.033 instructions per call (less the empty loop's), the path is 15 under QEMU -icount and Bochs: this figure's PMU counts may not mean what they say", got.Warning)
			// The empty loop's repeats differing: a mismatch too.
			got = check(null64, loopSamples(100, []uint64{calls, calls}, nil), loopSamples(1000, []uint64{empty, empty - 1}, nil))
			assert.Equal(t, "mismatch", got.Status)
			// A path one instruction longer in every repeat.
			got = check(null64, loopSamples(100, []uint64{calls + n, calls + n}, nil), loopSamples(1000, []uint64{empty, empty}, nil))
			assert.Equal(t, "mismatch", got.Status)
			assert.Equal(t, 16.0, got.Measured)
		})
		t.Run("disturbed repeats left out", func(t *testing.T) {
			// An NMI's handler in the second repeat: 40 instructions more.
			got := check(null64, loopSamples(100, []uint64{calls, calls + 40, calls}, map[int]bool{1: true}), loopSamples(1000, []uint64{empty, empty, empty}, nil))
			assert.Equal(t, &contract.PMUCheck{Status: "ok", Expected: C, Measured: C, Repeats: 2, EmptyRepeats: 3}, got)
			got = check(null64, loopSamples(100, []uint64{calls}, map[int]bool{0: true}), loopSamples(1000, []uint64{empty}, nil))
			assert.Equal(t, "not available: every repeat of a loop was disturbed (an SMI or an NMI)", got.Status)
		})
		t.Run("REP path excluded", func(t *testing.T) {
			movsl := contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Copy: "movsl"}
			assert.Nil(t, check(movsl, loopSamples(100, []uint64{calls}, nil), loopSamples(1000, []uint64{empty}, nil)))
			lseek := contract.Subject{Bench: "lseek", Width: 64, Mode: "off", Entry: "syscall", Flavour: "linux"}
			assert.Nil(t, check(lseek, loopSamples(100, []uint64{calls}, nil), loopSamples(1000, []uint64{empty}, nil)), "Go code: no exact length")
		})
		t.Run("sampled around the run", func(t *testing.T) {
			run := []cpustate.Sample{{}, {PMC: [cpustate.SamplePMCs]uint64{calls}}}
			got := pmuNow.check(null64, n, xcheckOf(run, run, 3, 1))
			assert.Equal(t, &contract.PMUCheck{Status: "not available: not sampled around every repeat", Expected: C}, got)
		})
	})
	t.Run("no PMU", func(t *testing.T) {
		tcg := &fakePMU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intelLeaf0, 1: {0x000306a9}}), MSRs: map[uint32]uint64{}}
		withPMU(t, DefaultPlan(), tcg, func(string, string) {
			got := pmuNow.check(null64, n, xcheckOf(loopSamples(100, []uint64{calls}, nil), loopSamples(1000, []uint64{empty}, nil), 1, 1))
			assert.Equal(t, &contract.PMUCheck{Status: "not available: no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)", Expected: C}, got)
			assert.Equal(t, "PMU cross-check (instructions retired per call less the empty loop's = the path length under QEMU -icount and Bochs, on the REP-free paths): not available: no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)", pmuCheckNote())
		})
	})
}
