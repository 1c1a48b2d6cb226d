package all_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/bench"
	_ "github.com/ptilab/ptilab/bench/all"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/cpustate/cpustatetest"
	"github.com/ptilab/ptilab/experiment"
)

// fakeWorld is a world whose timing loop returns what a configuration
// costs by a formula, for host tests of the engine: every benchmark's
// table and records, written once, in two worlds of different shapes.
type fakeWorld struct {
	width   int
	entries []experiment.Entry
	copies  []experiment.Copy
	pcid    bool // the CPU has PCIDs (64-bit)
	loops   int  // timing loops run
	// With counters: APERF counts corePct % of MPERF, and an SMI arrives
	// in repeat smiAt-1 of every loop (0: none), which then takes smiCost
	// more cycles per call; perRun samples around the whole loop (as the
	// 32-bit world) instead of around every repeat.
	corePct, smiAt, smiCost uint64
	perRun                  bool
	// offset is where Place put the programs; a call costs a cycle more
	// per 32 bytes of it. placed lists the offsets Place was given;
	// refuse, an offset it refuses.
	offset, refuse int
	placed         []int
}

// cost is the cycles a call costs under c: 100, +1000 with isolation,
// +50 linux, +7 per copy method, +3 per entry after the first, +1 per 32
// bytes of loop offset; and the work call's cycles.
func (w *fakeWorld) cost(c experiment.Config, call bench.Call) uint64 {
	v := uint64(100 + w.offset/32)
	if c.Mode.Isolated() {
		v += 1000
	}
	if c.Flavour == experiment.Linux {
		v += 50 + 7*uint64(c.Copy)
	}
	v += 3 * uint64(c.Entry)
	if call.Op == bench.Work {
		v += call.Arg
	}
	return v
}

// want is what call returns: getppid 1, the others 0.
func want(call bench.Call) int64 {
	if call.Op == bench.Getppid {
		return 1
	}
	return 0
}

const fakeEmpty = 2 // cycles per iteration of the empty loop

func (w *fakeWorld) Width() int { return w.width }
func (w *fakeWorld) Title() string {
	if w.width == 32 {
		return "32-bit PAE kernel: "
	}
	return ""
}
func (w *fakeWorld) Setup() error { return nil }
func (w *fakeWorld) Place(offset int) error {
	w.placed = append(w.placed, offset)
	if offset == w.refuse && offset != 0 {
		return fmt.Errorf("no room %d bytes in", offset)
	}
	w.offset = offset
	return nil
}
func (w *fakeWorld) Entries() []experiment.Entry { return w.entries }

// Has: the fake CPU has nothing optional (no FRED).
func (w *fakeWorld) Has(n experiment.Need) bool { return n == experiment.NeedsNothing }
func (w *fakeWorld) Copies() []experiment.Copy  { return w.copies }
func (w *fakeWorld) User() bench.UserLayout {
	return bench.UserLayout{Data: 0x1000, StackTop: 0x100000, DataPages: 16, MaxDataPages: 16, MaxRepeats: 100, AddrDigits: 18}
}

// fakeSwitch is a configuration the fake world planned.
type fakeSwitch struct{ c experiment.Config }

func (s fakeSwitch) Config() experiment.Config { return s.c }

func (w *fakeWorld) Plan(c experiment.Config) (bench.Switch, error) {
	switch {
	case c.Mode == experiment.OnPCID && w.width == 32:
		return nil, fmt.Errorf("%v: PCID: %w", c, bench.ErrNotInPAE)
	case c.Mode == experiment.OnPCID && !w.pcid:
		return nil, fmt.Errorf("%v: PCID: %w", c, bench.ErrUnsupported)
	case c.Stamps && w.width == 64:
		return nil, fmt.Errorf("%v: no instrumented trampoline: %w", c, bench.ErrUnsupported)
	}
	return fakeSwitch{c}, nil
}
func (w *fakeWorld) TasksConfig(mode experiment.Mode, e experiment.Entry) experiment.Config {
	return bench.ConfigOf(mode, e, experiment.Linux)
}
func (w *fakeWorld) Loop(sw bench.Switch, call bench.Call, n, r int, empty bool) (bench.Loop, error) {
	c := sw.Config()
	w.loops++
	per := w.cost(c, call) + fakeEmpty
	if empty {
		per = fakeEmpty
	}
	l := bench.Loop{Cycles: make([]uint64, r), Value: want(call), HasValue: true}
	var s cpustate.Sample
	l.Samples = append(l.Samples, s)
	for i := range l.Cycles {
		l.Cycles[i] = uint64(n) * per
		if !empty && uint64(i+1) == w.smiAt {
			l.Cycles[i] += uint64(n) * w.smiCost
			s.SMI++
		}
		s.MPERF += l.Cycles[i]
		s.APERF += l.Cycles[i] * w.corePct / 100
		if !w.perRun {
			l.Samples = append(l.Samples, s)
		}
	}
	if w.perRun {
		l.Samples = append(l.Samples, s)
	}
	if c.Stamps {
		// Every call stamped: phase i takes 10(i+1) cycles a call, 4 of
		// them its stamp's.
		for i := range l.Stamps.Sums {
			l.Stamps.N[i] = uint64(n * r)
			l.Stamps.Sums[i] = uint64(10*(i+1)) * l.Stamps.N[i]
			l.Stamps.Cost[i] = 4
		}
	}
	return l, nil
}
func (w *fakeWorld) NewProcess(int) (bench.Process, error) {
	return nil, errors.New("no processes here")
}
func (w *fakeWorld) MainProcess() bench.Process { return nil }
func (w *fakeWorld) NewRun(bench.Switch) (bench.Run, error) {
	return nil, errors.New("no tasks kernel here")
}
func (w *fakeWorld) ProbeTargets() []bench.ProbeTarget {
	return []bench.ProbeTarget{
		{Name: "kernel", Address: 0xa000, Kind: bench.KernelOnly},
		{Name: "entry", Address: 0xb000, Kind: bench.EntryArea},
		{Name: "own", Address: 0x1000, Kind: bench.OwnPage},
	}
}
func (w *fakeWorld) ProbeEntry() experiment.Entry { return w.Entries()[0] }

func (w *fakeWorld) Probe(s bench.Switch, addr uint64) (bench.Exit, error) {
	c := s.Config()
	switch addr {
	case 0x1000:
		return bench.Exit{Exited: true, Text: "exit 0"}, nil
	case 0xb000:
		return bench.Exit{Faulted: true, Vector: 14, ErrorCode: 5, CS: 0x33, CR2: addr}, nil
	}
	ec := uint64(5)
	if c.Mode.Isolated() {
		ec = 4
	}
	return bench.Exit{Faulted: true, Vector: 14, ErrorCode: ec, CS: 0x33, CR2: addr}, nil
}

// The engine runs on the host here: the PMU there is a CPU without one
// (no WRMSR on the host), an Intel CPU whose CPUID has no leaf 0AH.
func init() {
	bench.PMUCPU = &cpustatetest.CPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{0: {0x0d, 0x756e6547, 0x6c65746e, 0x49656e69}}), MSRs: map[uint32]uint64{}}
}

// runFake runs plan in a 64-bit world (without PCID) and a 32-bit one
// (two entries, two copy methods), and returns the output and the
// records.
func runFake(t *testing.T, plan bench.Plan) (string, []contract.Record, *bench.Reporter) {
	t.Helper()
	w64 := &fakeWorld{width: 64, entries: []experiment.Entry{experiment.Syscall}}
	w32 := &fakeWorld{width: 32, entries: []experiment.Entry{experiment.Sysenter, experiment.Int80}, copies: []experiment.Copy{experiment.Movsl, experiment.Trim}}
	return runIn(t, plan, w64, w32, 1e9)
}

// runIn runs plan in the worlds w64 and w32 with a TSC of hz, and
// returns the output, the records and the reporter.
func runIn(t *testing.T, plan bench.Plan, w64, w32 *fakeWorld, hz uint64) (string, []contract.Record, *bench.Reporter) {
	t.Helper()
	saved := bench.Worlds
	bench.Worlds = map[int]bench.World{64: w64, 32: w32}
	t.Cleanup(func() { bench.Worlds = saved })
	var out bytes.Buffer
	r := bench.NewReporter(&out)
	bench.RunPlan(r, plan, bench.Clock{Hz: hz, Source: "test"})
	var recs []contract.Record
	for _, l := range strings.Split(out.String(), "\n") {
		js, ok := strings.CutPrefix(l, "PTILAB ")
		if !ok {
			continue
		}
		var k struct{ Kind string }
		require.NoError(t, json.Unmarshal([]byte(js), &k))
		rec, err := contract.Decode(k.Kind, []byte(js))
		require.NoError(t, err, l)
		recs = append(recs, rec)
	}
	return out.String(), recs, r
}

func of[T contract.Record](recs []contract.Record) []T {
	var out []T
	for _, r := range recs {
		if v, ok := r.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestEngineNull runs the null call in both worlds and the seed table
// made from them: every configuration once, cycles per call less the
// empty loop, ratios to the same entry's off, PCID unsupported by the
// 64-bit CPU and not in PAE, the copy methods in the 32-bit world only.
func TestEngineNull(t *testing.T) {
	plan := bench.DefaultPlan()
	plan.Benchmarks = []string{"null", "null32"}
	plan.N, plan.R, plan.Warmup = 10, 3, 1
	out, recs, r := runFake(t, plan)
	assert.Empty(t, r.Failed())

	byKey := map[string]contract.Syscall{}
	for _, s := range of[contract.Syscall](recs) {
		k := s.Key()
		assert.NotContains(t, byKey, k, "recorded once")
		byKey[k] = s
	}
	// 64-bit: off and on x 2 flavours x 2 global settings.
	// 32-bit: off and on x 2 entries x 2 flavours x 2 global settings,
	// then the copy methods (trim8, the one not in the null table) and
	// the stamped ones (2 copies), off and on.
	assert.Len(t, byKey, 8+16+2+4)
	off := byKey[contract.Subject{Bench: "null", Width: 64, Mode: "off", Entry: "syscall", Flavour: "minimal"}.Key()]
	assert.Equal(t, 100.0, off.Mean, "the call less the empty loop")
	onLinuxGlobal := contract.Subject{Bench: "null", Width: 64, Mode: "on", Entry: "syscall", Flavour: "linux", Global: true}.Key()
	assert.Equal(t, 2.0, byKey[onLinuxGlobal].EmptyLoopCycles)
	assert.InDelta(t, 1150.0/150, byKey[onLinuxGlobal].RatioToOff, 0.001)
	assert.Equal(t, 64, off.Width)
	on32 := byKey[contract.Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "int80", Flavour: "linux", Copy: "movsl"}.Key()]
	assert.Equal(t, 1000.0+100+50+3*2, on32.Mean)
	assert.InDelta(t, 1156.0/156, on32.RatioToOff, 0.001, "compared with the same entry's off")
	stamped := byKey[contract.Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "sysenter", Flavour: "linux", Copy: "trim8", Stamps: true}.Key()]
	assert.Equal(t, map[string]float64{"cr3_in": 6, "copy_in": 16, "dispatch": 26, "copy_out": 36, "cr3_out": 46}, stamped.Phases,
		"each phase less its stamp's cost")
	assert.Equal(t, map[string]float64{"cr3_in": 4, "copy_in": 4, "dispatch": 4, "copy_out": 4, "cr3_out": 4}, stamped.StampCost)

	unsup := map[string]int{}
	for _, u := range of[contract.Unsupported](recs) {
		unsup[fmt.Sprintf("%s/%d", u.Bench, u.Width)]++
		assert.Equal(t, "on+pcid", u.Mode)
	}
	assert.Equal(t, map[string]int{"null/64": 4, "null32/32": 8}, unsup)
	assert.Contains(t, out, "on+pcid  minimal  no     unsupported: PCID: not supported by this CPU")
	assert.Contains(t, out, "on+pcid  sysenter minimal  no     unsupported: PCID: not in PAE")
	assert.Contains(t, out, "32-bit PAE kernel: linux SYSENTER trampoline: pt_regs copy methods")
	assert.NotContains(t, out, "linux SYSCALL trampoline", "no copy methods in a world with one")

	// The seed table: 2 widths x off, on x 2 flavours measured; on+pcid
	// unsupported in both (no PCID, not in PAE).
	assert.Len(t, of[contract.Seed](recs), 8)
	assert.Len(t, of[contract.SeedUnsupported](recs), 4)
	assert.Regexp(t, `(?m)^32-bit PTI on\+pcid\s+\| not in PAE\s+\| not in PAE$`, out)
	assert.Regexp(t, `(?m)^64-bit PTI on\+pcid\s+\| unsupported by this CPU\s+\| unsupported by this CPU$`, out)
}

// TestEngineWorkAndLseek runs the work curve and lseek in both worlds.
func TestEngineWorkAndLseek(t *testing.T) {
	plan, errs := bench.ParsePlan([]byte("benchmarks = work32, lseek, lseek32\nwork_ns = 0, 1000\n"))
	require.Empty(t, errs)
	plan.R, plan.Warmup = 2, 0
	out, recs, r := runFake(t, plan)
	assert.Empty(t, r.Failed())
	n := map[string]int{}
	for _, s := range of[contract.Syscall](recs) {
		n[s.Bench]++
		if s.Bench == "work32" {
			require.NotNil(t, s.WorkNs)
			assert.Equal(t, "sysenter", s.Entry, "the default entry")
			isolation := map[string]int64{"off": 0, "on": 1000}[s.Mode]
			assert.Equal(t, float64(100+3+isolation+*s.WorkNs), s.Mean, "at 1 GHz a ns is a cycle")
		}
	}
	assert.Equal(t, map[string]int{"work32": 4, "lseek": 4, "lseek32": 8}, n)
	assert.Regexp(t, `(?m)^1000\s+[0-9.]+\s+[0-9.]+\s+not in PAE\s+[0-9]+\.[0-9]{2}\s+-( +- MHz 0){2} +-$`, out, "no core clock; the NMI count (no NMI here) but where not in PAE")
	assert.Regexp(t, `(?m)^on\s+int80\s+yes\s+1156\.0\s+0\.0%\s+1156\.0\s+865052\s+7\.41\s+\+0\.00%\s+-\s+-\s+0/2$`, out, "lseek's rows by entry, with the global gain, no core clock, no NMI in 2 repeats")
	assert.Contains(t, out, "core clock: unsupported (no APERF/MPERF); SMIs: unsupported (no MSR_SMI_COUNT)")
	for _, s := range of[contract.Syscall](recs) {
		// Both worlds: the CPU's reason (the 32-bit sample call reads the
		// counters too).
		pmu := &contract.PMUCounts{Unsupported: "no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)"}
		assert.Equal(t, contract.Core{CoreClock: "unsupported", SMICount: "unsupported", Sampled: "repeat", Headline: "all", PMU: pmu}, s.Core,
			"no MSR counters; the NMI count read around every repeat; no PMU (the host tests' CPU has none)")
	}
}

// TestEngineProbe runs the probe in both worlds: the expected outcomes
// recorded as such, PCID left out of the 32-bit world and unsupported in
// the 64-bit one.
func TestEngineProbe(t *testing.T) {
	plan := bench.DefaultPlan()
	plan.Benchmarks = []string{"probe", "probe32"}
	out, recs, _ := runFake(t, plan)
	probes := of[contract.Probe](recs)
	assert.Len(t, probes, 3*2*2, "3 targets x off, on x 2 worlds")
	for _, p := range probes {
		require.NotNil(t, p.AsExpected)
		assert.True(t, *p.AsExpected, "%v", p)
	}
	unsup := of[contract.Unsupported](recs)
	assert.Len(t, unsup, 3, "the 64-bit world's on+pcid column; the 32-bit world has none")
	assert.NotContains(t, out, "UNEXPECTED")
	assert.Contains(t, out, "32-bit PAE kernel: isolation probe")
}

// TestEngineTasksFailure: a world whose tasks kernel cannot run fails
// each configuration of the ping-pong and sched-messaging, with an error
// record each, and the tables say so.
func TestEngineTasksFailure(t *testing.T) {
	plan := bench.DefaultPlan()
	plan.Benchmarks = []string{"pingpong", "messaging32"}
	out, recs, r := runFake(t, plan)
	errs := of[contract.Error](recs)
	assert.Len(t, errs, 2*2+2*2+2*2, "ping-pong: off, on x 2; messaging32: off, on x 2, and its phases")
	assert.Len(t, r.Failed(), len(errs))
	assert.Contains(t, out, "| FAILED: no processes here")
	assert.Contains(t, errs[0].Error, "no processes here")
}

// TestRegistry checks the registry this package fills: plan names
// unique in every world, in the default plan's order (the 64-bit ones
// first, then the 32-bit ones), the optional benchmarks left out of it.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range bench.PlanNames(true) {
		assert.False(t, seen[n], "plan name %s given twice", n)
		seen[n] = true
	}
	assert.Equal(t, []string{"null", "work", "lseek", "pingpong", "messaging", "probe", "retention", "flushcost", "tlbsweep", "oracle", "deadlock", "ladder",
		"null32", "work32", "lseek32", "pingpong32", "messaging32", "probe32", "ladder32"}, bench.PlanNames(true))
	assert.Equal(t, []string{"null", "work", "lseek", "pingpong", "messaging", "probe", "null32", "work32", "lseek32", "pingpong32", "messaging32", "probe32"},
		bench.PlanNames(false), "everything but the optional ones")
	assert.Equal(t, bench.PlanNames(false), bench.DefaultPlan().Benchmarks)
}

// runFakeCounters runs plan as runFake does, on a CPU with APERF/MPERF
// and MSR_SMI_COUNT: both fake worlds run the core at corePct % of the
// TSC's rate and take an SMI in the third repeat of every loop (the
// second measured one after a warm-up), which costs 500 cycles per call;
// the 32-bit world samples around its whole loops.
func runFakeCounters(t *testing.T, plan bench.Plan) (string, []contract.Record) {
	t.Helper()
	bench.SetCounters(cpustate.SampleAPERF | cpustate.SampleSMI)
	t.Cleanup(func() { bench.SetCounters(0) })
	w64 := &fakeWorld{width: 64, entries: []experiment.Entry{experiment.Syscall}, corePct: 50, smiAt: 3, smiCost: 500}
	w32 := &fakeWorld{width: 32, entries: []experiment.Entry{experiment.Sysenter, experiment.Int80}, copies: []experiment.Copy{experiment.Movsl, experiment.Trim}, corePct: 50, smiAt: 3, smiCost: 500, perRun: true}
	out, recs, _ := runIn(t, plan, w64, w32, 3_400_000_000)
	return out, recs
}

// TestEngineCoreClock: the core clock and the SMIs of every repeat reach
// the records and the table. Per repeat (64-bit): one of 4 measured
// repeats disturbed, the headline over the other 3; per run (32-bit):
// every repeat of the loop disturbed, the headline over all.
func TestEngineCoreClock(t *testing.T) {
	plan := bench.DefaultPlan()
	plan.Benchmarks = []string{"null", "null32"}
	plan.Flavours, plan.Globals = []experiment.Flavour{experiment.Minimal}, []bool{false}
	plan.N, plan.R, plan.Warmup = 10, 4, 1
	out, recs := runFakeCounters(t, plan)
	byKey := map[string]contract.Syscall{}
	for _, s := range of[contract.Syscall](recs) {
		byKey[s.Key()] = s
	}
	off := byKey[contract.Subject{Bench: "null", Width: 64, Mode: "off", Entry: "syscall", Flavour: "minimal"}.Key()]
	assert.Equal(t, (3*100.0+600)/4, off.Mean, "all repeats: one took 500 more per call")
	assert.Equal(t, contract.Core{
		CoreClock: "aperf/mperf", CoreMHz: 1700, CoreMean: off.Mean / 2, CoreMedian: 50,
		SMICount: "msr", SMIs: 1, Disturbed: 1, DisturbedRepeats: []int{1}, Sampled: "repeat",
		Undisturbed: &contract.Spread{N: 3, Mean: 100, Median: 100, Min: 100, Max: 100}, Headline: "undisturbed",
		PMU: &contract.PMUCounts{Unsupported: "no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)"},
	}, off.Core)
	assert.Equal(t, []float64{100, 600, 100, 100}, off.Repeats, "the repeats in the order they ran, the disturbed one among them")
	off32 := byKey[contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "minimal"}.Key()]
	assert.Equal(t, "run", off32.Sampled)
	assert.Equal(t, uint64(1), off32.SMIs)
	assert.Equal(t, 4, off32.Disturbed, "sampled per run: an SMI marks every repeat")
	assert.Nil(t, off32.Undisturbed)
	assert.Equal(t, "all", off32.Headline)
	assert.InDelta(t, 1700, off32.CoreMHz, 1e-9)
	assert.Contains(t, out, "core clock: APERF/MPERF around every repeat; SMIs: MSR_SMI_COUNT around every repeat")
	assert.Regexp(t, `(?m)^off\s+minimal\s+no\s+225\.0\s.*\s1700\s+112\.5\s+1/4$`, out, "the 64-bit row's core columns")
	assert.Regexp(t, `(?m)^off\s+sysenter minimal\s+no\s+.*\s1700\s+[0-9.]+\s+4/4$`, out)
}

// TestEngineLoopOffsets: a benchmark that reads loop_offset runs again at
// each of the plan's other offsets, with its world's programs placed
// there (Place) and back at 0 after, its records carrying the offset in
// their key and set beside offset 0's in the loop-placement table; one
// that does not read it (the probe) runs once; a world that cannot place
// its programs fails those runs with an error record.
func TestEngineLoopOffsets(t *testing.T) {
	plan, errs := bench.ParsePlan([]byte("benchmarks = null,probe,null32\nloop_offset = 0,64\nmodes = off\nflavours = minimal\nglobal = off\n"))
	require.Empty(t, errs)
	plan.N, plan.R, plan.Warmup = 10, 2, 0
	w64 := &fakeWorld{width: 64, entries: []experiment.Entry{experiment.Syscall}}
	w32 := &fakeWorld{width: 32, entries: []experiment.Entry{experiment.Sysenter}, refuse: 64}
	out, recs, r := runIn(t, plan, w64, w32, 1e9)
	assert.Equal(t, []int{64, 0}, w64.placed, "placed at 64 for the second run of null, then back")
	assert.Equal(t, []int{64, 0}, w32.placed)
	assert.Zero(t, w64.offset)
	got := map[string]float64{}
	for _, s := range of[contract.Syscall](recs) {
		got[s.Key()] = s.Mean
	}
	assert.Equal(t, map[string]float64{
		"bench=null width=64 mode=off entry=syscall flavour=minimal global=off":                100,
		"bench=null width=64 mode=off entry=syscall flavour=minimal global=off loop_offset=64": 102,
		"bench=null32 width=32 mode=off entry=sysenter flavour=minimal global=off":             103,
	}, got, "the fake call costs a cycle more per 32 bytes of offset")
	for _, p := range of[contract.Probe](recs) {
		assert.Zero(t, p.LoopOffset, "the probe runs once")
	}
	require.Len(t, r.Failed(), 1)
	assert.Equal(t, "null32 at loop offset 64", r.Failed()[0])
	assert.Contains(t, out, "loop placement: null again with the ring-3 programs shifted by loop_offset bytes")
	assert.Regexp(t, `(?m)^null\s+width=64 mode=off entry=syscall flavour=minimal global=off\s+64\s+102\.0\s+0\.0%\s+100\.0\s+0\.0%\s+1\.020$`, out)
}
