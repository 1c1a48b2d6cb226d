package cpustate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
)

// on lists the knobs LinuxKnobs turns on, in order.
func on(ks []LinuxKnob) []string {
	var out []string
	for _, k := range ks {
		if k.On {
			out = append(out, k.Name)
		}
	}
	return out
}

// The `linux` set of the ladder on the vulnerability fixtures: what Linux
// runs on a plain process's SYSCALL and context switch, from the table
// Vulns gives (vuln_test.go has each table and why).
func TestLinuxKnobs(t *testing.T) {
	skl := skylakeClient()
	skl.MSRs[amd64.MSR_IA32_ARCH_CAPABILITIES] = 0
	for _, tc := range []struct {
		name string
		cpu  CPU
		want []string
	}{
		// VERW without MD_CLEAR ("attempted, no microcode"), retpolines,
		// RSB filling; no IBPB in that microcode.
		{"Ivy Bridge", ivyBridge(), []string{"verw", "rsb", "retpoline"}},
		// IBRS mode on a retbleed-affected part; IBPB only conditional.
		{"Skylake client", skl, []string{"verw", "ibrs", "rsb"}},
		// Enhanced IBRS (set once), no RSB filling, BHI's loop; no MDS.
		{"Cascade Lake", cascadeLake(), []string{"ibrs", "bhb"}},
		// Retpolines and RSB filling; IBPB conditional.
		{"Zen 2", zen2(), []string{"rsb", "retpoline"}},
		// QEMU's default CPU: AMD family 0FH: retpolines, RSB filling.
		{"qemu64", qemu64(), []string{"rsb", "retpoline"}},
		// QEMU's Skylake-Client under TCG: VERW attempted, retpolines
		// (which cover BHI without RRSBA), RSB filling.
		{"emulated Skylake-Client", emulated(), []string{"verw", "rsb", "retpoline"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := LinuxKnobs(tc.cpu)
			require.Len(t, ks, len(LinuxKnobNames))
			for i, k := range ks {
				assert.Equal(t, LinuxKnobNames[i], k.Name)
				assert.NotEmpty(t, k.Why, k.Name)
			}
			assert.Equal(t, tc.want, on(ks))
			assert.False(t, ks[5].On, "lfence is never on Linux's SYSCALL path")
		})
	}
	ks := LinuxKnobs(cascadeLake())
	assert.Equal(t, "Enhanced IBRS: set once", ks[1].Why)
	assert.Equal(t, "IBPB conditional: only for tasks that ask (prctl, seccomp)", ks[2].Why)
	assert.Equal(t, "BHI: clear_bhb_loop on entry", ks[4].Why)
	ks = LinuxKnobs(ivyBridge())
	assert.Equal(t, "clears CPU buffers for mds", ks[0].Why)
	assert.Equal(t, "Linux fences the exception entries' SWAPGS here (FENCE_SWAPGS_KERNEL), not SYSCALL's", ks[5].Why, "Meltdown-affected: SMAP does not hold speculatively")
	line := LinuxKnobLine(ks)
	assert.Contains(t, line, "linux = verw+rsb+retpoline, as Linux 6.6.y")
	assert.Contains(t, line, "ibrs off (Spectre v2 mode: Retpolines)")
	assert.Equal(t, "linux = none, as Linux "+LinuxLogic+" would set them here: ", LinuxKnobLine(nil))
}
