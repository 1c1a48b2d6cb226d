package pmu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/cpustate/cpustatetest"
)

// start is s.Start on cpu with a registry of its own, and that registry.
func start(t *testing.T, s *Session, cpu CPU) *cpustate.SavedMSRs {
	t.Helper()
	var saved cpustate.SavedMSRs
	msr, op := s.Start(cpu, &saved)
	require.Equal(t, uint32(0), msr, op)
	return &saved
}

// write is one WRMSR as the fake bank saw it.
type write = cpustatetest.Write

// fakeCPU is CPUID leaves and a bank of MSRs; an MSR not in the bank
// raises #GP (read and write report false). It logs every write in order.
type fakeCPU = cpustatetest.CPU

// "GenuineIntel" and "AuthenticAMD" in EBX, ECX, EDX of leaf 0.
var (
	intel0 = [4]uint32{0x16, 0x756e6547, 0x6c65746e, 0x49656e69}
	amd0   = [4]uint32{0x10, 0x68747541, 0x444d4163, 0x69746e65}
)

// pmuBank is the architectural PMU's MSRs for gp programmable and the
// three fixed counters, all 0.
func pmuBank(gp int, global bool) map[uint32]uint64 {
	m := map[uint32]uint64{}
	for i := 0; i < gp; i++ {
		m[amd64.MSR_IA32_PMC0+uint32(i)] = 0
		m[amd64.MSR_IA32_PERFEVTSEL0+uint32(i)] = 0
	}
	if global {
		for j := 0; j < NumFixed; j++ {
			m[amd64.MSR_IA32_FIXED_CTR0+uint32(j)] = 0
		}
		for _, r := range []uint32{amd64.MSR_IA32_FIXED_CTR_CTRL, amd64.MSR_IA32_PERF_GLOBAL_STATUS,
			amd64.MSR_IA32_PERF_GLOBAL_CTRL, amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL} {
			m[r] = 0
		}
	}
	return m
}

// ivyBridge is a Core i7-3770K (06_3AH stepping 9, Hyper-Threading on):
// CPUID leaves 0, 1 and 0AH of logical CPU #0 in the AIDA64 v2.60 dump
// github.com/InstLatx64/InstLatx64
// GenuineIntel/GenuineIntel00306A9_IvyBridge_CPUID.txt
// ("CPUID 0000000A: 07300403-00000000-00000000-00000603": version 3, 4
// programmable counters of 48 bits, 3 fixed counters of 48 bits, every
// architectural event available). The MSR bank is constructed (all 0).
func ivyBridge() *fakeCPU {
	return &fakeCPU{
		Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{
			0:    {0xd, intel0[1], intel0[2], intel0[3]},
			1:    {0x306a9, 0x00100800, 0x7f9ae3bf, 0xbfebfbff},
			0x0a: {0x07300403, 0, 0, 0x603},
		}),
		MSRs: pmuBank(4, true),
	}
}

// skylake is a Core i5-6400T (06_5EH stepping 3, no Hyper-Threading):
// CPUID leaves 0, 1 and 0AH of logical CPU #0 in the AIDA64 v5.20 dump
// github.com/InstLatx64/InstLatx64
// GenuineIntel/GenuineIntel00506E3_Skylake_CPUID.txt
// ("CPUID 0000000A: 07300804-00000000-00000000-00000603": version 4, 8
// programmable counters, as a core without HT has). MSR bank constructed.
func skylake() *fakeCPU {
	return &fakeCPU{
		Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{
			0:    intel0,
			1:    {0x506e3, 0x00100800, 0x7ffafbff, 0xbfebfbff},
			0x0a: {0x07300804, 0, 0, 0x603},
		}),
		MSRs: pmuBank(8, true),
	}
}

func TestDetectRealCPUs(t *testing.T) {
	ivb := Detect(ivyBridge())
	assert.Equal(t, Caps{Version: 3, GP: 4, GPWidth: 48, EBXLength: 7, FixedMask: 0b111, FixedCount: 3, FixedWidth: 48}, ivb)
	assert.True(t, ivb.Supported())
	assert.True(t, ivb.Global())

	skl := Detect(skylake())
	assert.Equal(t, Caps{Version: 4, GP: 8, GPWidth: 48, EBXLength: 7, FixedMask: 0b111, FixedCount: 3, FixedWidth: 48}, skl)
}

func TestDetectUnsupported(t *testing.T) {
	tests := []struct {
		name  string
		cpuid map[uint32][4]uint32
		want  string
	}{
		// QEMU's TCG CPU models report leaf 0AH as all zeros (no PMU is
		// emulated): version 0.
		{"no PMU (CPUID.0AH:EAX = 0)", map[uint32][4]uint32{0: intel0, 0x0a: {}}, "CPUID.0AH:EAX[7:0] = 0"},
		{"maximum leaf below 0AH", map[uint32][4]uint32{0: {0x5, intel0[1], intel0[2], intel0[3]}, 0x0a: {0x07300403, 0, 0, 0x603}}, "leaf 0AH absent"},
		{"AMD", map[uint32][4]uint32{0: amd0}, "AMD"},
		{"unknown vendor", map[uint32][4]uint32{0: {0x10, 1, 2, 3}}, "not an Intel CPU"},
		{"version without counters", map[uint32][4]uint32{0: intel0, 0x0a: {0x2}}, "no usable counter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Detect(&fakeCPU{Leaves: cpustatetest.ByLeaf(tt.cpuid)})
			assert.False(t, c.Supported())
			assert.Contains(t, c.Unsupported, tt.want)
		})
	}
}

// TestDetectFixedCounters: version 1 has none (EDX is reserved); version
// 5 adds the ECX bitmap of fixed counters beyond EDX[4:0].
func TestDetectFixedCounters(t *testing.T) {
	v1 := Detect(&fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intel0, 0x0a: {0x07280201, 0, 0, 0x603}})})
	assert.Equal(t, Caps{Version: 1, GP: 2, GPWidth: 40, EBXLength: 7}, v1, "version 1: EDX ignored")
	assert.False(t, v1.Global())

	v5 := Detect(&fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intel0, 0x0a: {0x07300805, 0, 0b101, 0x601}})})
	assert.Equal(t, uint8(0b101), v5.FixedMask, "EDX[4:0] = 1 gives counter 0, ECX bit 2 counter 2")
}

func TestEventSelect(t *testing.T) {
	// DTLB_LOAD_MISSES.WALK_COMPLETED on Skylake: event 08H, umask 0EH,
	// USR (16), OS (17), EN (22).
	assert.Equal(t, uint64(0x43_0e08), EventSelect(0x08, 0x0e))
	assert.Equal(t, uint64(1<<16|1<<17|1<<22), EventSelect(0, 0))
}

func skylakeEvents(t *testing.T, n int) []Event {
	m, why := ModelFor(Signature{6, 0x5e, 3})
	require.NotNil(t, m, why)
	return m.Events[:n]
}

// TestStartSequence checks the MSR writes of Start, Read and Stop against
// SDM Vol. 3B, 20.2.2: global control off first, the fixed-counter
// control, the event selects, the counters cleared, stale overflow
// cleared, global control on with exactly the session's counters.
func TestStartSequence(t *testing.T) {
	cpu := skylake()
	s, skipped := NewSession(Detect(cpu), skylakeEvents(t, 3))
	require.Empty(t, skipped)
	assert.Equal(t, []string{"DTLB_LOAD_MISSES.WALK_COMPLETED", "ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.STLB_HIT"}, s.Events())

	saved := start(t, &s, cpu)
	enable := uint64(0b111 | 0b111<<32)
	assert.Equal(t, []write{
		{MSR: amd64.MSR_IA32_PERF_GLOBAL_CTRL, Val: 0},
		{MSR: amd64.MSR_IA32_FIXED_CTR_CTRL, Val: 0x333},
		{MSR: amd64.MSR_IA32_PERFEVTSEL0, Val: 0x430e08},
		{MSR: amd64.MSR_IA32_PERFEVTSEL0 + 1, Val: 0x430e85},
		{MSR: amd64.MSR_IA32_PERFEVTSEL0 + 2, Val: 0x432008},
		{MSR: amd64.MSR_IA32_PMC0, Val: 0},
		{MSR: amd64.MSR_IA32_PMC0 + 1, Val: 0},
		{MSR: amd64.MSR_IA32_PMC0 + 2, Val: 0},
		{MSR: amd64.MSR_IA32_FIXED_CTR0, Val: 0},
		{MSR: amd64.MSR_IA32_FIXED_CTR0 + 1, Val: 0},
		{MSR: amd64.MSR_IA32_FIXED_CTR0 + 2, Val: 0},
		{MSR: amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL, Val: enable},
		{MSR: amd64.MSR_IA32_PERF_GLOBAL_CTRL, Val: enable},
	}, cpu.Writes)
	assert.Equal(t, uint64(0x7_0000_0007), enable, "PMC0-2 in bits 0-2, FIXED_CTR0-2 in bits 32-34")
	var names []string
	for _, e := range saved.Entries() {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"IA32_PERF_GLOBAL_CTRL", "IA32_PMC0", "IA32_PMC1", "IA32_PMC2", "IA32_FIXED_CTR0", "IA32_FIXED_CTR1", "IA32_FIXED_CTR2",
		"IA32_PERF_GLOBAL_OVF_CTRL", "IA32_PERFEVTSEL0", "IA32_PERFEVTSEL1", "IA32_PERFEVTSEL2", "IA32_FIXED_CTR_CTRL"}, names,
		"every MSR written, saved before the first write: counters, then controls (restored first)")

	// The CPU counts: instructions, cycles, reference cycles and the
	// three events; a counter the session does not use changes too.
	for r, v := range map[uint32]uint64{
		amd64.MSR_IA32_FIXED_CTR0: 1000, amd64.MSR_IA32_FIXED_CTR0 + 1: 3000, amd64.MSR_IA32_FIXED_CTR0 + 2: 2500,
		amd64.MSR_IA32_PMC0: 7, amd64.MSR_IA32_PMC0 + 1: 2, amd64.MSR_IA32_PMC0 + 2: 40, amd64.MSR_IA32_PMC0 + 3: 99,
	} {
		cpu.MSRs[r] = v
	}
	cpu.Writes = nil
	var start, end Sample
	s.Stop(cpu, &end)
	assert.Equal(t, []write{{MSR: amd64.MSR_IA32_PERF_GLOBAL_CTRL, Val: 0}}, cpu.Writes, "stop: global control off; no overflow to clear")
	assert.Equal(t, Sample{Fixed: [3]uint64{1000, 3000, 2500}, GP: [MaxGP]uint64{7, 2, 40}, OverflowKnown: true}, end)
	d := s.Sub(&end, &start)
	assert.Equal(t, Counts{Fixed: [3]uint64{1000, 3000, 2500}, GP: [MaxGP]uint64{7, 2, 40}}, d)
}

// TestFewerCountersThanEvents: the i7-3770K with HT lists 4 programmable
// counters; of 6 events asked for, the last 2 are reported skipped with
// the reason, and only PMC0-3 are programmed and enabled.
func TestFewerCountersThanEvents(t *testing.T) {
	cpu := ivyBridge()
	m, why := ModelFor(ReadSignature(cpu))
	require.NotNil(t, m, why)
	require.Len(t, m.Events, 6)
	s, skipped := NewSession(Detect(cpu), m.Events)
	assert.Len(t, s.Events(), 4)
	require.Len(t, skipped, 2)
	for i, sk := range skipped {
		assert.Equal(t, m.Events[4+i].Name, sk.Name)
		assert.Equal(t, "no programmable counter left: CPUID.0AH:EAX[15:8] lists 4", sk.Reason)
	}
	start(t, &s, cpu)
	assert.Equal(t, write{MSR: amd64.MSR_IA32_PERF_GLOBAL_CTRL, Val: 0x7_0000_000f}, cpu.Writes[len(cpu.Writes)-1])
	for _, w := range cpu.Writes {
		assert.False(t, w.MSR >= amd64.MSR_IA32_PERFEVTSEL0+4 && w.MSR < amd64.MSR_IA32_PERFEVTSEL0+8, "no event select beyond the 4th: %#x", w.MSR)
	}
}

// TestVersion1: no fixed counters and no global MSRs (SDM Vol. 3B,
// 20.2.1): each counter is cleared, then started by its event select's
// EN; Stop clears EN; the overflow status is not known. The CPU is
// constructed (CPUID.0AH:EAX = 07280201H: version 1, 2 counters of 40
// bits, as the Core Solo/Duo generation had).
func TestVersion1(t *testing.T) {
	cpu := &fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intel0, 0x0a: {0x07280201, 0, 0, 0}}), MSRs: pmuBank(2, false)}
	caps := Detect(cpu)
	s, skipped := NewSession(caps, []Event{{"A", 0x08, 0x82, ""}, {"B", 0x85, 0x02, ""}, {"C", 0x5f, 0x04, ""}})
	assert.Equal(t, []Skipped{{"C", "no programmable counter left: CPUID.0AH:EAX[15:8] lists 2"}}, skipped)
	start(t, &s, cpu)
	assert.Equal(t, []write{
		{MSR: amd64.MSR_IA32_PMC0, Val: 0}, {MSR: amd64.MSR_IA32_PERFEVTSEL0, Val: 0x438208},
		{MSR: amd64.MSR_IA32_PMC0 + 1, Val: 0}, {MSR: amd64.MSR_IA32_PERFEVTSEL0 + 1, Val: 0x430285},
	}, cpu.Writes)
	cpu.MSRs[amd64.MSR_IA32_PMC0] = 1<<40 + 5 // bits above the width are not the count
	cpu.Writes = nil
	var end Sample
	s.Stop(cpu, &end)
	assert.Equal(t, []write{{MSR: amd64.MSR_IA32_PERFEVTSEL0, Val: 0x038208}, {MSR: amd64.MSR_IA32_PERFEVTSEL0 + 1, Val: 0x030285}}, cpu.Writes, "EN cleared, nothing else written")
	assert.Equal(t, uint64(5), end.GP[0])
	assert.False(t, end.OverflowKnown)
	assert.False(t, s.Fixed(0))
}

// TestOverflow: Stop keeps the session's counters' bits of
// IA32_PERF_GLOBAL_STATUS, clears exactly those through
// IA32_PERF_GLOBAL_OVF_CTRL, and Sub credits one wrap of 2^48.
func TestOverflow(t *testing.T) {
	cpu := skylake()
	s, _ := NewSession(Detect(cpu), skylakeEvents(t, 2))
	start(t, &s, cpu)
	cpu.Writes = nil
	// PMC1 and FIXED_CTR1 overflowed; bit 3 (PMC3, not the session's) and
	// bit 63 (CondChgd) are set too.
	cpu.MSRs[amd64.MSR_IA32_PERF_GLOBAL_STATUS] = 1<<1 | 1<<33 | 1<<3 | 1<<63
	cpu.MSRs[amd64.MSR_IA32_PMC0+1] = 10
	cpu.MSRs[amd64.MSR_IA32_FIXED_CTR0+1] = 20
	var start, end Sample
	s.Stop(cpu, &end)
	assert.Equal(t, []write{
		{MSR: amd64.MSR_IA32_PERF_GLOBAL_CTRL, Val: 0},
		{MSR: amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL, Val: 1<<1 | 1<<33},
	}, cpu.Writes)
	assert.Equal(t, uint64(1<<1|1<<33), end.Overflow)
	d := s.Sub(&end, &start)
	assert.Equal(t, uint64(1<<48+10), d.GP[1])
	assert.Equal(t, uint64(1<<48+20), d.Fixed[1])
	assert.Equal(t, uint64(1<<1|1<<33), d.Wrapped)
}

// TestSubWraps: between two snapshots of running counters, a counter
// that passed 2^48 - 1 gives its count modulo its width.
func TestSubWraps(t *testing.T) {
	cpu := skylake()
	s, _ := NewSession(Detect(cpu), skylakeEvents(t, 1))
	start := Sample{GP: [MaxGP]uint64{1<<48 - 10}, Fixed: [3]uint64{1<<48 - 1, 5, 0}}
	end := Sample{GP: [MaxGP]uint64{5}, Fixed: [3]uint64{3, 9, 0}}
	d := s.Sub(&end, &start)
	assert.Equal(t, uint64(15), d.GP[0])
	assert.Equal(t, [3]uint64{4, 4, 0}, d.Fixed)
	assert.Zero(t, d.Wrapped)
}

// TestStartGP: a CPU that lists a PMU but raises #GP on its MSRs (a
// hypervisor that hides them, Bochs's models) makes Start name the MSR
// whose read raised #GP, with nothing written.
func TestStartGP(t *testing.T) {
	cpu := skylake()
	delete(cpu.MSRs, amd64.MSR_IA32_PERF_GLOBAL_CTRL)
	s, _ := NewSession(Detect(cpu), nil)
	var saved cpustate.SavedMSRs
	msr, op := s.Start(cpu, &saved)
	assert.Equal(t, uint32(amd64.MSR_IA32_PERF_GLOBAL_CTRL), msr)
	assert.Equal(t, OpRDMSR, op)
	assert.Empty(t, cpu.Writes)

	cpu = skylake()
	delete(cpu.MSRs, amd64.MSR_IA32_PERFEVTSEL0+1)
	s, _ = NewSession(Detect(cpu), skylakeEvents(t, 2))
	saved = cpustate.SavedMSRs{}
	require.True(t, saved.Save(cpu, amd64.MSR_IA32_PMC0+3, "IA32_PMC3")) // another writer's
	msr, op = s.Start(cpu, &saved)
	assert.Equal(t, uint32(amd64.MSR_IA32_PERFEVTSEL0+1), msr)
	assert.Equal(t, OpRDMSR, op)
	assert.Empty(t, cpu.Writes)
	assert.Len(t, saved.Entries(), 1, "what Start saved is dropped, what was saved before stays")

	// Readable but the write raises #GP: a bank that refuses writes.
	ro := &readOnly{skylake()}
	s, _ = NewSession(Detect(ro), nil)
	saved = cpustate.SavedMSRs{}
	msr, op = s.Start(ro, &saved)
	assert.Equal(t, uint32(amd64.MSR_IA32_PERF_GLOBAL_CTRL), msr)
	assert.Equal(t, OpWRMSR, op)
	assert.NotEmpty(t, saved.Entries(), "what was saved stays saved, for the restore")
}

// readOnly is a CPU whose every MSR write raises #GP.
type readOnly struct{ *fakeCPU }

func (readOnly) WriteMSR(uint32, uint64) bool { return false }

// TestStartRestore: the firmware left its own values (a counter in use);
// after a run, the registry writes every MSR back, the controls first,
// the global enables last, and each reads back as the firmware left it;
// where IA32_PERF_CAPABILITIES[13] allows, the programmable counters go
// back through IA32_A_PMCx (their full width).
func TestStartRestore(t *testing.T) {
	cpu := ivyBridge()
	cpu.Leaves[[2]uint32{1, 0}] = [4]uint32{0x306a9, 0, amd64.CPUID_01_ECX_PDCM, 0}
	cpu.MSRs[amd64.MSR_IA32_PERF_CAPABILITIES] = amd64.PERF_CAPABILITIES_FW_WRITE | amd64.PERF_CAPABILITIES_FREEZE_WHILE_SMM
	cpu.MSRs[amd64.MSR_IA32_DEBUGCTL] = 0
	for i := uint32(0); i < 4; i++ {
		cpu.MSRs[amd64.MSR_IA32_A_PMC0+i] = 0
	}
	firmware := map[uint32]uint64{
		amd64.MSR_IA32_PERF_GLOBAL_CTRL: 0xf, amd64.MSR_IA32_PERFEVTSEL0: 0x43003c, amd64.MSR_IA32_PMC0: 0x12_3456_7890,
		amd64.MSR_IA32_FIXED_CTR_CTRL: 0xb, amd64.MSR_IA32_FIXED_CTR0: 77,
	}
	for m, v := range firmware {
		cpu.MSRs[m] = v
	}
	s, _ := NewSession(Detect(cpu), skylakeEvents(t, 2))
	saved := start(t, &s, cpu)
	assert.Equal(t, []string{"IA32_PERFEVTSEL0 = 0x43003c: counter 0 enabled", "IA32_FIXED_CTR_CTRL = 0xb: fixed counter 0 enabled"}, InUse(cpu, Detect(cpu), saved),
		"the values from before Start")
	ok, why := FreezeWhileSMM(cpu, saved)
	require.True(t, ok, why)
	assert.Equal(t, uint64(0), cpu.MSRs[amd64.MSR_IA32_PMC0])
	cpu.Writes = nil
	got := saved.Restore(cpu)
	require.Len(t, got, 11)
	assert.Equal(t, []uint32{amd64.MSR_IA32_DEBUGCTL, amd64.MSR_IA32_FIXED_CTR_CTRL, amd64.MSR_IA32_PERFEVTSEL0 + 1, amd64.MSR_IA32_PERFEVTSEL0,
		amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL, amd64.MSR_IA32_FIXED_CTR0 + 2, amd64.MSR_IA32_FIXED_CTR0 + 1, amd64.MSR_IA32_FIXED_CTR0,
		amd64.MSR_IA32_A_PMC0 + 1, amd64.MSR_IA32_A_PMC0, amd64.MSR_IA32_PERF_GLOBAL_CTRL}, cpu.Written())
	for m, v := range firmware {
		if m == amd64.MSR_IA32_PMC0 {
			m = amd64.MSR_IA32_A_PMC0 // the fake keeps the alias apart
		}
		assert.Equal(t, v, cpu.MSRs[m], "%#x as the firmware left it", m)
	}
	assert.Equal(t, uint64(0), cpu.MSRs[amd64.MSR_IA32_DEBUGCTL], "FREEZE_WHILE_SMM cleared again")
	for _, e := range got {
		assert.True(t, e.Restored, e.Name)
	}
}

// quietCPU is a bank that logs nothing, for the allocation test.
type quietCPU struct{ msr [0x400]uint64 }

func (q *quietCPU) CPUID(uint32, uint32) (uint32, uint32, uint32, uint32) { return 0, 0, 0, 0 }
func (q *quietCPU) ReadMSR(m uint32) (uint64, bool)                       { return q.msr[m], true }
func (q *quietCPU) WriteMSR(m uint32, v uint64) bool                      { q.msr[m] = v; return true }
func (q *quietCPU) TSC() uint64                                           { return 0 }

// TestRingZeroDoesNotAllocate: Start, Read, Stop and Sub run in ring 0
// around a repeat and must not allocate.
func TestRingZeroDoesNotAllocate(t *testing.T) {
	s, _ := NewSession(Detect(skylake()), skylakeEvents(t, 4))
	var c CPU = &quietCPU{}
	var a, b Sample
	allocs := testing.AllocsPerRun(100, func() {
		saved := cpustate.SavedMSRs{}
		s.Start(c, &saved)
		s.Read(c, &a)
		s.Stop(c, &b)
		_ = s.Sub(&b, &a)
	})
	assert.Zero(t, allocs)
}

// TestFixedUnavailable: a fixed counter whose architectural event
// CPUID.0AH:EBX marks unavailable (within EAX[31:24] bits) is not
// counted, and FixedReason says why; a bit beyond the length is ignored.
// The CPUID values are constructed from the i7-3770K's.
func TestFixedUnavailable(t *testing.T) {
	c := Detect(&fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intel0, 0x0a: {0x07300403, 0b100, 0, 0x603}})})
	assert.Equal(t, uint8(0b011), c.FixedMask)
	assert.Equal(t, "", c.FixedReason(0))
	assert.Equal(t, "CPUID.0AH:EBX[2] marks CPU_CLK_UNHALTED.REF_TSC unavailable", c.FixedReason(2))

	c = Detect(&fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intel0, 0x0a: {0x02300403, 0b100, 0, 0x603}})})
	assert.Equal(t, uint8(0b111), c.FixedMask, "EBX bit 2 beyond EAX[31:24] = 2 is not valid")

	c = Detect(&fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intel0, 0x0a: {0x07300403, 0, 0, 0x602}})})
	assert.Equal(t, uint8(0b011), c.FixedMask)
	assert.Equal(t, "CPUID.0AH:EDX[4:0] lists 2 fixed-function counters", c.FixedReason(2))

	v1 := Detect(&fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intel0, 0x0a: {0x07280201}})})
	assert.Contains(t, v1.FixedReason(0), "version 1 has no fixed-function counters")
	none := Detect(&fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: intel0, 0x0a: {}})})
	assert.Equal(t, none.Unsupported, none.FixedReason(1))
}

// TestFreezeWhileSMM: IA32_DEBUGCTL.FREEZE_WHILE_SMM is set (the other
// bits kept) only where CPUID.01H:ECX[15] and IA32_PERF_CAPABILITIES[12]
// say the CPU has it, IA32_DEBUGCTL saved first; the registry restores
// the old value.
func TestFreezeWhileSMM(t *testing.T) {
	const pdcm = 1 << 15
	cpu := func(ecx uint32, msrs map[uint32]uint64) *cpustatetest.CPU {
		return &cpustatetest.CPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{1: {0x000306a9, 0, ecx, 0}}), MSRs: msrs}
	}
	c := cpu(pdcm, map[uint32]uint64{0x345: 0x31c3, 0x1d9: 0x801})
	var saved cpustate.SavedMSRs
	ok, why := FreezeWhileSMM(c, &saved)
	require.True(t, ok, why)
	old, _ := saved.Value(0x1d9)
	assert.Equal(t, uint64(0x801), old)
	assert.Equal(t, uint64(0x4801), c.MSRs[0x1d9], "bit 14 set, the others kept")
	saved.Restore(c)
	assert.Equal(t, uint64(0x801), c.MSRs[0x1d9])
	for _, tt := range []struct {
		name string
		c    *cpustatetest.CPU
		why  string
	}{
		{"no PDCM", cpu(0, map[uint32]uint64{0x345: 0x1000, 0x1d9: 0}), "CPUID.01H:ECX[15] (PDCM) is clear: no IA32_PERF_CAPABILITIES"},
		{"not enumerated", cpu(pdcm, map[uint32]uint64{0x345: 0x2c3, 0x1d9: 0}), "IA32_PERF_CAPABILITIES[12] is clear: no FREEZE_WHILE_SMM"},
		{"no IA32_PERF_CAPABILITIES", cpu(pdcm, map[uint32]uint64{0x1d9: 0}), "RDMSR IA32_PERF_CAPABILITIES raised #GP"},
		{"no IA32_DEBUGCTL", cpu(pdcm, map[uint32]uint64{0x345: 0x1000}), "RDMSR IA32_DEBUGCTL raised #GP"},
	} {
		var saved cpustate.SavedMSRs
		ok, why := FreezeWhileSMM(tt.c, &saved)
		assert.False(t, ok, tt.name)
		assert.Equal(t, tt.why, why, tt.name)
		assert.Empty(t, tt.c.Writes, tt.name)
		assert.Empty(t, saved.Entries(), tt.name)
	}
}

// TestInUse: the firmware's enable bits, as Linux's check_hw_exists
// reads them: an event select's EN, a fixed counter's OS/USR field (not
// its PMI bit alone), only the counters CPUID lists; IA32_PERF_GLOBAL_CTRL
// alone says nothing.
func TestInUse(t *testing.T) {
	cpu := ivyBridge()
	cpu.MSRs[amd64.MSR_IA32_PERF_GLOBAL_CTRL] = 0x7_0000_000f
	assert.Empty(t, InUse(cpu, Detect(cpu), &cpustate.SavedMSRs{}))
	cpu.MSRs[amd64.MSR_IA32_PERFEVTSEL0+3] = 0x43003c
	cpu.MSRs[amd64.MSR_IA32_PERFEVTSEL0+1] = 0x03003c // no EN
	cpu.MSRs[amd64.MSR_IA32_FIXED_CTR_CTRL] = 0x280   // fixed 2 USR; fixed 1 PMI only
	assert.Equal(t, []string{"IA32_PERFEVTSEL3 = 0x43003c: counter 3 enabled", "IA32_FIXED_CTR_CTRL = 0x280: fixed counter 2 enabled"}, InUse(cpu, Detect(cpu), &cpustate.SavedMSRs{}))
	cpu.MSRs[amd64.MSR_IA32_PERFEVTSEL0+4] = 0x43003c // beyond CPUID's 4 counters: not read
	assert.Len(t, InUse(cpu, Detect(cpu), &cpustate.SavedMSRs{}), 2)
	assert.Nil(t, InUse(cpu, Caps{Unsupported: "no"}, &cpustate.SavedMSRs{}))
}
