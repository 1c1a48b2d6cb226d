package cpustate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate/cpustatetest"
)

// bank is a CPU with MSRs 0x10 = 1, 0x20 = 2, 0x30 = 3 (and 0x40, a
// write alias of 0x30); any other raises #GP.
func bank() *cpustatetest.CPU {
	return &cpustatetest.CPU{MSRs: map[uint32]uint64{0x10: 1, 0x20: 2, 0x30: 3, 0x40: 0}}
}

// TestSavedFirstValueOnce: a second Save of an MSR keeps the value read
// before the first write; an MSR whose read raises #GP is not saved (the
// caller must not write it) and costs no write at restore.
func TestSavedFirstValueOnce(t *testing.T) {
	c := bank()
	var s SavedMSRs
	require.True(t, s.Save(c, 0x10, "A"))
	c.WriteMSR(0x10, 100)
	require.True(t, s.Save(c, 0x10, "A"), "already saved")
	v, ok := s.Value(0x10)
	assert.True(t, ok)
	assert.Equal(t, uint64(1), v, "the value before the first write")
	assert.False(t, s.Save(c, 0x99, "absent"), "RDMSR raised #GP")
	_, ok = s.Value(0x99)
	assert.False(t, ok)
	require.Len(t, s.Entries(), 1)

	c.Writes = nil
	got := s.Restore(c)
	require.Len(t, got, 1)
	assert.Equal(t, []cpustatetest.Write{{MSR: 0x10, Val: 1}}, c.Writes, "only the saved MSR is written")
	assert.Equal(t, SavedMSR{MSR: 0x10, Via: 0x10, Name: "A", Value: 1, Restored: true, ReadBack: 1, ReadBackOK: true, attempted: true}, got[0])
}

// TestSavedReverseOrder: Restore writes back the last saved first, through
// each entry's Via, and returns the entries in the order saved; the
// registry is then empty, and a second Restore writes nothing.
func TestSavedReverseOrder(t *testing.T) {
	c := bank()
	var s SavedMSRs
	require.True(t, s.Save(c, 0x10, "A"))
	require.True(t, s.Save(c, 0x20, "B"))
	require.True(t, s.SaveVia(c, 0x30, 0x40, "C"))
	for _, m := range []uint32{0x10, 0x20, 0x30} {
		c.WriteMSR(m, 0xff)
	}
	c.Writes = nil
	got := s.Restore(c)
	assert.Equal(t, []uint32{0x40, 0x20, 0x10}, c.Written(), "reverse order, C through its alias")
	require.Len(t, got, 3)
	assert.Equal(t, []string{"A", "B", "C"}, []string{got[0].Name, got[1].Name, got[2].Name})
	assert.Equal(t, uint64(3), c.MSRs[0x40], "C's value went to its alias")
	assert.Equal(t, uint64(0xff), got[2].ReadBack, "the alias is not C in this fake: C reads back what it held")
	assert.Empty(t, s.Entries())

	c.Writes = nil
	assert.Nil(t, s.Restore(c), "nothing left to restore")
	assert.Empty(t, c.Writes)
}

// TestSavedWriteFails: a write-back that raises #GP is recorded and the
// rest still goes on.
func TestSavedWriteFails(t *testing.T) {
	c := bank()
	var s SavedMSRs
	require.True(t, s.Save(c, 0x10, "A"))
	require.True(t, s.SaveVia(c, 0x20, 0x98, "B")) // the alias raises #GP
	got := s.Restore(c)
	require.Len(t, got, 2)
	assert.True(t, got[0].Restored)
	assert.False(t, got[1].Restored)
	assert.True(t, got[1].ReadBackOK)
	assert.Equal(t, []uint32{0x10}, c.Written())
}

// TestSavedFull: a registry that is full saves nothing more, so that
// nothing is written that could not be restored.
func TestSavedFull(t *testing.T) {
	c := &cpustatetest.CPU{MSRs: map[uint32]uint64{}}
	for m := range uint32(MaxSaved + 1) {
		c.MSRs[0x100+m] = uint64(m)
	}
	var s SavedMSRs
	for m := range uint32(MaxSaved) {
		require.True(t, s.Save(c, 0x100+m, "x"))
	}
	assert.False(t, s.Save(c, 0x100+MaxSaved, "x"))
	assert.True(t, s.Save(c, 0x100, "x"), "one already saved still is")
}

// TestRestoreRecord: the kernel's JSON (WriteRestoreJSON, written from
// an exception handler) is byte for byte what contract.Encode makes of
// RestoreRecord, and decodes to it; the human line names each MSR and
// what went wrong.
func TestRestoreRecord(t *testing.T) {
	entries := []SavedMSR{
		{MSR: 0xc1, Via: 0x4c1, Name: "IA32_PMC0", Value: 0x1234, Restored: true, ReadBack: 0x1234, ReadBackOK: true},
		{MSR: 0x38f, Via: 0x38f, Name: "IA32_PERF_GLOBAL_CTRL", Value: 0xf, Restored: false, ReadBack: 0, ReadBackOK: true},
		{MSR: 0x199, Via: 0x199, Name: "IA32_PERF_CTL", Value: 0x1000, Restored: true},
	}
	rec := RestoreRecord("fault", entries)
	assert.Equal(t, contract.MSRRestore{At: "fault", MSRs: []contract.RestoredMSR{
		{Name: "IA32_PMC0", MSR: "0xc1", Firmware: "0x1234", Via: "0x4c1", Restored: true, ReadBack: "0x1234"},
		{Name: "IA32_PERF_GLOBAL_CTRL", MSR: "0x38f", Firmware: "0xf", ReadBack: "0x0"},
		{Name: "IA32_PERF_CTL", MSR: "0x199", Firmware: "0x1000", Restored: true},
	}}, rec)
	want, err := contract.Encode(rec)
	require.NoError(t, err)
	buf := make([]byte, 1024)
	got := buf[:WriteRestoreJSON(buf, "fault", entries)]
	assert.Equal(t, string(want), string(got))
	back, err := contract.Decode("msr-restore", got)
	require.NoError(t, err)
	assert.Equal(t, rec, back)
	assert.Equal(t, `{"kind":"msr-restore","at":"end","msrs":[]}`, string(buf[:WriteRestoreJSON(buf, "end", nil)]))
	short := make([]byte, 20)
	assert.Equal(t, `{"kind":"msr-restore`, string(short[:WriteRestoreJSON(short, "end", entries)]), "cut at the buffer's end")

	line := func(at string, e []SavedMSR) string { return string(buf[:WriteRestoreLine(buf, at, e)]) }
	assert.Equal(t, "ptilab: MSRs given back their values from before the run (fault): IA32_PMC0 0x1234, IA32_PERF_GLOBAL_CTRL 0xf, IA32_PERF_CTL 0x1000"+
		"; IA32_PERF_GLOBAL_CTRL: WRMSR 0x38f raised #GP; IA32_PERF_CTL: the read back raised #GP", line("fault", entries))
	assert.Equal(t, "ptilab: MSRs given back their values from before the run (end): IA32_PMC0 0x1234; each reads back as it was", line("end", entries[:1]))
	entries[0].ReadBack = 0xffff_8000_0000
	assert.Contains(t, line("end", entries[:1]), "; IA32_PMC0 reads back 0xffff80000000")
	entries[0].Value = 0
	assert.Contains(t, line("end", entries[:1]), "IA32_PMC0 0x0;", "0 as %#x writes it")
}

// TestRestoreAllocs: Restore and the kernel's record allocate nothing.
func TestRestoreAllocs(t *testing.T) {
	c := bank()
	var s SavedMSRs
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(10, func() {
		s.Save(c, 0x10, "A")
		s.Restore(c)
	})
	// The fake CPU logs its writes (an append): the registry itself adds
	// nothing on top.
	assert.LessOrEqual(t, allocs, 1.0)
	s.Save(c, 0x10, "A")
	e := s.Restore(c)
	assert.Zero(t, testing.AllocsPerRun(10, func() {
		WriteRestoreJSON(buf[:cap(buf)], "fault", e)
		WriteRestoreLine(buf[:cap(buf)], "fault", e)
	}))
}
