package goos

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/cpustate/cpustatetest"
)

// TestRestoreMSRs: the kernel's way out (endRun, here for a deadlock)
// writes back what the run saved and did not restore, last saved first,
// and prints the line and an msr-restore record that decodes to the
// registry's; once restored, another way out prints nothing.
func TestRestoreMSRs(t *testing.T) {
	cpu := &cpustatetest.CPU{MSRs: map[uint32]uint64{0x199: 0x1000, 0x38f: 0xf}}
	captureConsole, ncaptured, msrCPU = true, 0, cpu
	t.Cleanup(func() { captureConsole, msrCPU, cpustate.Saved = false, cpustate.Hardware{}, cpustate.SavedMSRs{} })
	out := func() string { s := string(captured[:ncaptured]); ncaptured = 0; return s }

	assert.True(t, cpustate.Saved.Save(cpu, 0x199, "IA32_PERF_CTL"))
	assert.True(t, cpustate.Saved.Save(cpu, 0x38f, "IA32_PERF_GLOBAL_CTRL"))
	cpu.WriteMSR(0x199, 0x2200)
	cpu.WriteMSR(0x38f, 0x7_0000_000f)
	cpu.Writes = nil

	restoreMSRs("deadlock")
	assert.Equal(t, []uint32{0x38f, 0x199}, cpu.Written(), "the last saved first")
	assert.Equal(t, uint64(0x1000), cpu.MSRs[0x199])
	assert.Equal(t, uint64(0xf), cpu.MSRs[0x38f])
	lines := strings.Split(out(), "\n")
	if !assert.Len(t, lines, 3) {
		return
	}
	assert.Equal(t, "ptilab: MSRs given back their values from before the run (deadlock): IA32_PERF_CTL 0x1000, IA32_PERF_GLOBAL_CTRL 0xf; each reads back as it was", lines[0])
	raw, ok := strings.CutPrefix(lines[1], contract.RecordTag+" ")
	assert.True(t, ok, lines[1])
	rec, err := contract.Decode("msr-restore", []byte(raw))
	assert.NoError(t, err)
	assert.Equal(t, contract.MSRRestore{At: "deadlock", MSRs: []contract.RestoredMSR{
		{Name: "IA32_PERF_CTL", MSR: "0x199", Firmware: "0x1000", Restored: true, ReadBack: "0x1000"},
		{Name: "IA32_PERF_GLOBAL_CTRL", MSR: "0x38f", Firmware: "0xf", Restored: true, ReadBack: "0xf"},
	}}, rec)
	assert.Empty(t, lines[2])

	cpu.Writes = nil
	restoreMSRs("exit")
	assert.Empty(t, out(), "nothing left to restore: nothing printed")
	assert.Empty(t, cpu.Writes)
}

// TestISTBelow: restoring from IST1 (a kernel fault's handler) lowers
// IST1 below the restoring frame and its callees, so that a #GP there
// does not land on them; elsewhere, or with too little of IST1 left,
// IST1 stays at its top.
func TestISTBelow(t *testing.T) {
	saved := kstackBase
	t.Cleanup(func() { kstackBase = saved })
	kstackBase = 0x10_0000
	lo, top := istExcStack()
	assert.Equal(t, uint64(0x10_1000), lo, "above the guard page")
	assert.Equal(t, uint64(0x10_1000+32<<10), top)

	sp := top - 3000 // a handler 3000 bytes deep
	ist, shift := istBelow(sp)
	assert.True(t, shift)
	assert.Equal(t, (sp-istCalleeRoom)&^15, ist)
	assert.Less(t, ist+istCalleeRoom, sp+16, "below the callees' room")
	assert.Zero(t, ist%16)

	for _, sp := range []uint64{top, top + 100, lo - 8, 0x7fff_0000_0000} {
		ist, shift := istBelow(sp)
		assert.False(t, shift, "%#x is not on IST1", sp)
		assert.Equal(t, top, ist)
	}
	_, shift = istBelow(lo + istCalleeRoom + istNestedRoom - 16)
	assert.False(t, shift, "too deep: no room left for a nested exception")
}
