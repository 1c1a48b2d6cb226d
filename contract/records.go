package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// The records of a run: one Go type per kind, written by the image as
// `PTILAB {"kind":K,...}` lines (the JSON of the type, its kind first) and
// decoded by the host tool and the tests with Decode. Counts are cycles of
// the TSC, or instructions where Stats.Unit says so (QEMU -icount, Bochs);
// times are in the unit their name gives.

// Record is a record of one kind.
type Record interface {
	// Kind is the "kind" of the record's line.
	Kind() string
}

// Subject is what a benchmark's record is about: the benchmark and the
// configuration it ran under.
type Subject struct {
	Bench string `json:"bench"` // "null", "work", "lseek", "pingpong", "messaging", "probe", ...
	Width int    `json:"width"` // the world: 64 (long mode, package pti) or 32 (PAE, package i386pae)
	Mode  string `json:"mode"`  // "off", "on", "on+pcid", "on-defer", "on-noswitch" (and their "+pcid"), "lass"
	// Entry is the way into the kernel: "syscall" or "fred" (64-bit), "sysenter"
	// or "int80" (32-bit).
	Entry   string `json:"entry,omitempty"`
	Flavour string `json:"flavour,omitempty"` // "minimal" or "linux"
	// Copy is the pt_regs copy of the 32-bit linux trampolines: "movsl",
	// "movsb", "trim8", "direct".
	Copy string `json:"copy,omitempty"`
	// Stamps marks the instrumented trampoline (phase breakdown).
	Stamps bool `json:"stamps,omitempty"`
	// Global: the entry area and the kernel text were global pages.
	Global bool   `json:"global"`
	Tasks  string `json:"tasks,omitempty"`  // "processes" or "threads"
	Target string `json:"target,omitempty"` // the probe's target; the leak oracle's secret ("sensitive"; absent: the kernel's)
	// WorkNs is the work curve's point: ns the call spends in the kernel.
	WorkNs *int64 `json:"work_ns,omitempty"`
	// Emulated: the figures come from an emulator, not the hardware.
	Emulated bool `json:"emulated"`
	// Icount: the TSC counted instructions (QEMU -icount shift=0, Bochs).
	Icount bool `json:"icount"`
	// SweepPages is the TLB sweep's point: pages touched per call (with
	// Target naming the sweep: "user 4k", "user 2m", "kernel 4k").
	SweepPages *int `json:"sweep_pages,omitempty"`
	// Mitigations are the mitigated flavour's knobs: "none", or their
	// names joined by "+" ("verw+ibrs").
	Mitigations string `json:"mitigations,omitempty"`
	// ASIActions are an asi mode's actions on the way back to the
	// nonsensitive table (experiment.Config.ASIActions): "none", or
	// their names joined by "+" ("verw+l1d"); absent in the other modes
	// (and in records written before the field: none).
	ASIActions string `json:"asi_actions,omitempty"`
	// LoopOffset is how many bytes further than by default the world's
	// ring-3 programs ran, the timed loop's included (plan key
	// loop_offset: a multiple of 32, so every jump of the loop kept its
	// place in its 32-byte chunk, and the loop moved to another part of
	// its cache line and page); absent (0) at the default places.
	LoopOffset int `json:"loop_offset,omitempty"`
	// Microcode is the microcode revision the figure was measured under
	// (hex, as the machine record's microcode: IA32_BIOS_SIGN_ID[63:32]
	// on Intel, SDM Vol. 3A, 10.11.7.1); absent where it could not be
	// read (Bochs's models lack the MSR). Not part of the key: the same
	// configuration under two revisions compares.
	Microcode string `json:"microcode,omitempty"`
	// Kernel names the kernel a `ptilab linux` row ran on where it is not
	// the world's own: "64-compat", a 32-bit program entering the 64-bit
	// Linux kernel by its compat entries (INT 0x80, SYSENTER), not a PAE
	// kernel. Part of the key; absent on the image's rows and on the
	// 64-bit Linux rows, which line up with the image's.
	Kernel string `json:"kernel,omitempty"`
}

// About returns the subject: what a record that embeds it is about.
func (s Subject) About() Subject { return s }

// Stats are a measured figure's statistics over its repeats: mean, sample
// standard deviation (and in % of the mean), perf stat --repeat's ± (the
// standard deviation of the mean, in %), median, minimum and maximum, in
// Unit ("tsc_cycles" or "instructions"), with the TSC frequency and the
// ratio to PTI off (absent when there is none).
type Stats struct {
	Unit       string  `json:"unit"`
	Mean       float64 `json:"mean"`
	Stddev     float64 `json:"stddev"`
	StddevPct  float64 `json:"stddev_pct"`
	PerfPct    float64 `json:"perf_pm_pct"`
	Median     float64 `json:"median"`
	Min        float64 `json:"min"`
	Max        float64 `json:"max"`
	TSCHz      uint64  `json:"tsc_hz"`
	RatioToOff float64 `json:"ratio_to_off,omitempty"`
	Core
	// Repeats are the measured repeats' figures per operation, in Unit,
	// in the order they ran: the samples the statistics above summarise
	// (warm-up repeats not included; absent in records written before
	// they were recorded, and in seed records, whose figures are their
	// benchmarks' records).
	Repeats []float64 `json:"repeats,omitempty"`
}

// Core is a figure's core clock and disturbances, from the counters read
// in ring 0 before and after every measured repeat (outside its timed
// region): APERF/MPERF and MSR_SMI_COUNT. Where the CPU lacks a counter
// (QEMU's TCG, Bochs) its field says "unsupported" and its figures are
// absent.
type Core struct {
	// CoreClock is "aperf/mperf", or "unsupported".
	CoreClock string `json:"core_clock"`
	// CoreMHz is the effective core clock over the measured repeats: TSC
	// Hz * sum dAPERF / sum dMPERF, times dMPERF/dTSC where MPERF does not
	// tick at the TSC's rate (the pstate record's mperf_per_tsc and
	// mperf_scaled; so are CoreMean, CoreMedian and RepeatMHz).
	CoreMHz float64 `json:"core_mhz,omitempty"`
	// CoreMean and CoreMedian are core cycles per operation: each repeat's
	// figure times its own dAPERF/dMPERF, over the measured repeats.
	CoreMean   float64 `json:"core_mean,omitempty"`
	CoreMedian float64 `json:"core_median,omitempty"`
	// SMICount is "msr" (MSR_SMI_COUNT read around every repeat), or
	// "unsupported".
	SMICount string `json:"smi_count"`
	// SMIs is the SMIs during the measured repeats (0 where SMICount is
	// unsupported), NMIs the NMIs (always counted: ptilab's handlers count
	// them); Disturbed is how many measured repeats saw at least one SMI or
	// NMI.
	SMIs      uint64 `json:"smis"`
	NMIs      uint64 `json:"nmis"`
	Disturbed int    `json:"disturbed"`
	// DisturbedRepeats are the indices, in Stats.Repeats, of the repeats
	// an SMI or an NMI disturbed (absent: none); RepeatMHz each repeat's
	// effective core clock (TSC Hz * dAPERF / dMPERF over the repeat), in
	// MHz (0 for a repeat whose counters did not advance), absent when
	// every repeat's is within 0.5% of CoreMHz (which then holds for each;
	// bench.RepeatClockTolerance). Both only where the counters were read
	// around every repeat (Sampled "repeat").
	DisturbedRepeats []int     `json:"disturbed_repeats,omitempty"`
	RepeatMHz        []float64 `json:"repeat_mhz,omitempty"`
	// Sampled says over what the counters were read: "repeat" (around
	// every repeat) or "run" (around all repeats at once: a disturbance
	// marks every repeat of the run).
	Sampled string `json:"sampled,omitempty"`
	// Undisturbed are the statistics over the repeats that saw no
	// disturbance (absent when none did, or none was free of one).
	Undisturbed *Spread `json:"undisturbed,omitempty"`
	// Headline names the statistics a reader should quote: "undisturbed"
	// when some repeats were disturbed and at least half were not, else
	// "all" (the record's own mean, median, ...).
	Headline string `json:"headline"`
	// PMU is the performance counters per operation, or why there are
	// none (absent only from records made outside a world).
	PMU *PMUCounts `json:"pmu,omitempty"`
}

// PMUCounts are a figure's performance-monitoring counts: per operation
// over the measured repeats (loop overhead included, the empty loop's not
// subtracted), by name: "instructions" (INST_RETIRED.ANY), "core_cycles"
// (CPU_CLK_UNHALTED.THREAD), "ref_cycles" (CPU_CLK_UNHALTED.REF_TSC) and
// the model's events as Intel's event lists name them (package pmu),
// counted in ring 0 and ring 3. Or Unsupported: why nothing was counted
// (the CPU has no architectural performance monitoring, the plan says
// pmu = off, the 32-bit world does not count).
type PMUCounts struct {
	Unsupported string             `json:"unsupported,omitempty"`
	PerOp       map[string]float64 `json:"per_op,omitempty"`
	// Skipped are events asked for and not counted, each "name: reason".
	Skipped []string `json:"skipped,omitempty"`
}

// Spread is a figure's statistics over a subset of its repeats.
type Spread struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Syscall is a timed system-call loop: units per call over R repeats of N
// calls, the empty loop's cost per iteration subtracted.
type Syscall struct {
	Subject
	N, R int
	// Warmup is the repeats run before the measured ones.
	Warmup int `json:"warmup,omitempty"`
	Stats
	NsPerCall       float64 `json:"ns_per_call"`
	EmptyLoopCycles float64 `json:"empty_loop_cycles"`
	// Phases are the instrumented trampoline's units per call in each
	// phase ("cr3_in", "copy_in", "dispatch", "copy_out", "cr3_out"), less
	// the stamps' own cost, and PhaseCall the whole call over the same
	// calls, stamps included (with Stamps). StampCost is that cost per
	// phase: one call's stamps taken back to back in the same run (LFENCE;
	// RDTSC and the sum's instructions), subtracted from each call's
	// phase. Logs before it have no StampCost and raw Phases.
	Phases    map[string]float64 `json:"phases,omitempty"`
	StampCost map[string]float64 `json:"stamp_cost,omitempty"`
	PhaseCall float64            `json:"phase_call,omitempty"`
	// PMUCheck is the cross-check of the CPU's instructions retired per
	// call with the path's length under the emulators, on the paths whose
	// length is exact (pathlength); absent on the others.
	PMUCheck *PMUCheck `json:"pmu_check,omitempty"`
	// ASITransitions are an asi mode's switches to the sensitive table
	// (ASI faults) over the timed loop's N*(R+Warmup) calls; absent in
	// the other modes.
	ASITransitions *uint64 `json:"asi_transitions,omitempty"`
}

// PMUCheck is the cross-check that makes a figure's PMU counts
// trustworthy: the instructions retired per call (fixed counter 0,
// INST_RETIRED.ANY, ring 0 and ring 3) less the empty loop's, over the
// repeats no SMI or NMI disturbed, must equal the path's length in
// instructions as QEMU -icount shift=0 and Bochs count it. Both figures
// are taken alike: each repeat's count (the TSC's under the emulators,
// the counter's delta between the sample calls around it on the CPU)
// divided by its calls, less the empty loop's; the loop's own
// instructions and each repeat's boundary cancel, and what is left is
// the call's path, an integer.
type PMUCheck struct {
	// Status is "ok" (equal), "mismatch" (a validity warning: Warning
	// says what differs) or "not available: <reason>" (no counts: the
	// CPU has no PMU, the plan turned it off, every repeat was disturbed).
	Status string `json:"status"`
	// Expected is the path's length in instructions per call
	// (pathlength); Measured the instructions retired per call
	// less the empty loop's, over Repeats calls-loop and EmptyRepeats
	// empty-loop repeats.
	Expected     int64   `json:"expected"`
	Measured     float64 `json:"measured,omitempty"`
	Repeats      int     `json:"repeats,omitempty"`
	EmptyRepeats int     `json:"empty_repeats,omitempty"`
	Warning      string  `json:"warning,omitempty"`
}

// PingPong is the ping-pong: units per round trip (two writes, two reads,
// two context switches), and what the tasks kernel counted over the run,
// warm-up included.
type PingPong struct {
	Subject
	N, R int
	// Warmup is the repeats run before the measured ones.
	Warmup int `json:"warmup,omitempty"`
	Stats
	NsPerRoundTrip float64 `json:"ns_per_round_trip"`
	RoundTrips     uint64  `json:"round_trips"`
	Switches       uint64  `json:"switches"`
	CR3Loads       uint64  `json:"cr3_loads"`
	// ASITransitions are an asi mode's switches to the sensitive table
	// (ASI faults) over the run, warm-up included; absent in the other
	// modes.
	ASITransitions *uint64 `json:"asi_transitions,omitempty"`
}

// Messaging is sched-messaging: units per run, from the start signal to
// the last exit, and the last run's messages and the tasks kernel's
// counts.
type Messaging struct {
	Subject
	Workload
	R      int `json:"R"`
	Warmup int `json:"warmup"`
	Stats
	Seconds     float64 `json:"seconds"`
	Messages    uint64  `json:"messages"`
	PerMessage  float64 `json:"per_message"` // units per message
	Switches    uint64  `json:"switches"`
	CR3Loads    uint64  `json:"cr3_loads"`
	ChecksumsOK bool    `json:"checksums_ok"`
	// ASITransitions are an asi mode's switches to the sensitive table
	// (ASI faults) over the last run; absent in the other modes.
	ASITransitions *uint64 `json:"asi_transitions,omitempty"`
}

// ASIPerOp is the mean ASI transitions per call: ASITransitions over
// the N*(R+Warmup) calls they count; false outside the asi modes.
func (s Syscall) ASIPerOp() (float64, bool) {
	return perOp(s.ASITransitions, uint64(s.N)*uint64(s.R+s.Warmup))
}

// ASIPerOp is the mean ASI transitions per round trip: ASITransitions
// over the run's RoundTrips (warm-up included, both); false outside the
// asi modes.
func (p PingPong) ASIPerOp() (float64, bool) { return perOp(p.ASITransitions, p.RoundTrips) }

// ASIPerOp is the mean ASI transitions per message of the last run
// (ASITransitions over Messages, the start protocol's transitions
// included); false outside the asi modes.
func (m Messaging) ASIPerOp() (float64, bool) { return perOp(m.ASITransitions, m.Messages) }

// perOp is count over ops operations, false for no count or none.
func perOp(count *uint64, ops uint64) (float64, bool) {
	if count == nil || ops == 0 {
		return 0, false
	}
	return float64(*count) / float64(ops), true
}

// Workload is sched-messaging's shape: groups of 20 senders and 20
// receivers, messages from each sender to each receiver (loops), bytes per
// message, and the IPC: "socket" (an AF_UNIX stream socket pair per
// receiver, perf's default) or "pipe" (perf -p).
type Workload struct {
	Groups int    `json:"groups"`
	Loops  int    `json:"loops"`
	Size   int    `json:"size"`
	IPC    string `json:"ipc,omitempty"`
}

// Phases is where a sched-messaging run's units went, from the
// instrumented SYSENTER entry: each phase's share of the run in %, less
// the stamps' own cost (StampCost per call and phase, calibrated in the
// run, times the stamped calls; logs before it have neither), the entry
// path's (all but the dispatch), the run's units and messages.
type Phases struct {
	Subject
	Workload
	Unit         string             `json:"unit"`
	PhasePct     map[string]float64 `json:"phase_pct"`
	StampCost    map[string]float64 `json:"stamp_cost,omitempty"`
	StampedCalls uint64             `json:"stamped_calls,omitempty"`
	EntryPathPct float64            `json:"entry_path_pct"`
	RunCycles    uint64             `json:"run_cycles"`
	Messages     uint64             `json:"messages"`
	// Warmup is the runs before the instrumented one; Core the core clock
	// and disturbances over it.
	Warmup int   `json:"warmup,omitempty"`
	Core   *Core `json:"core,omitempty"`
}

// Probe is one ring-3 read of the isolation probe. Fault is set when the
// read faulted; AsExpected says whether the outcome is the one the mode's
// tables imply (absent where the image does not judge it).
type Probe struct {
	Subject
	Address string `json:"address"`
	Faulted bool   `json:"faulted"`
	*ProbeFault
	AsExpected *bool `json:"as_expected,omitempty"`
}

// ProbeFault is the exception a probe's read raised: its vector, error
// code (for #PF: Present is its P bit), CR2, and whether it came from
// ring 3.
type ProbeFault struct {
	Vector    uint64 `json:"vector"`
	ErrorCode uint64 `json:"error_code"`
	Present   bool   `json:"present"`
	CR2       string `json:"cr2"`
	User      bool   `json:"user"`
}

// Retention is an answer of the TLB retention proof (SDM Vol. 3A,
// 4.10.2.4 global pages, 4.10.4.1 MOV to CR3 with PCIDs and NOFLUSH): in
// ring 0, a page at Address is read under CR3 value First, which fills its
// TLB entry; CR3 is loaded with Away, the page's PTE pointed at another
// frame without invalidation, CR3 loaded with Back, and the page read
// again. Result is "kept" when the second read saw the first frame (the
// CPU kept the translation across both CR3 writes) and "walked again"
// when it saw the new one (it walked the tables; legal: NOFLUSH and the G
// bit permit keeping entries, they do not promise it).
type Retention struct {
	Subject
	// Probe is "pcid-noflush" (PCIDs, NOFLUSH on the way back) or
	// "global" (a global page, CR4.PGE, no PCIDs).
	Probe   string `json:"probe"`
	Address string `json:"address"`
	// First, Away and Back are the CR3 values, in hex.
	First  string `json:"first_cr3"`
	Away   string `json:"away_cr3"`
	Back   string `json:"back_cr3"`
	Result string `json:"result"`
}

// RetentionProbes are the retention proof's probes, in the order it runs
// them (Retention.Probe).
var RetentionProbes = []string{"pcid-noflush", "global"}

// RetentionAnswers are the retention proof's answers among recs, by
// probe: a Retention record's Result ("kept", "walked again"), or
// "unsupported" for an unsupported record of the retention benchmark.
func RetentionAnswers(recs []Record) map[string]string {
	out := map[string]string{}
	for _, r := range recs {
		switch v := r.(type) {
		case Retention:
			out[v.Probe] = v.Result
		case Unsupported:
			if v.Bench == "retention" {
				out[v.Target] = "unsupported"
			}
		}
	}
	return out
}

// RetentionSummary says the retention answers in a line, the probes in
// RetentionProbes's order, then any other: "pcid-noflush walked again,
// global kept".
func RetentionSummary(answers map[string]string) string {
	var parts []string
	for _, p := range RetentionProbes {
		if a, ok := answers[p]; ok {
			parts = append(parts, p+" "+a)
		}
	}
	var rest []string
	for p, a := range answers {
		if !slices.Contains(RetentionProbes, p) {
			rest = append(rest, p+" "+a)
		}
	}
	slices.Sort(rest)
	return strings.Join(append(parts, rest...), ", ")
}

// FlushCost is a TLB flush operation timed in ring 0 with interrupts
// masked (Subject.Target names it: "mov cr3", "mov cr3 pcid noflush",
// "mov cr3 pcid", "invlpg", "invpcid 0" to "invpcid 3", "cr4.pge toggle"):
// units per operation over R repeats of N operations after Warmup, the
// empty loop's cost per iteration (EmptyLoopCycles) subtracted. Unit is as
// Stats.Unit's. Operation is the operation in words ("MOV to CR3, no
// PCID"), PerfPct perf stat --repeat's ± of PerOp (the standard deviation
// of the mean, in %; absent with one repeat).
type FlushCost struct {
	Subject
	Operation       string   `json:"operation,omitempty"`
	N               int      `json:"N"`
	R               int      `json:"R"`
	Warmup          int      `json:"warmup"`
	Unit            string   `json:"unit"`
	PerOp           Spread   `json:"per_op"`
	PerfPct         *float64 `json:"perf_pm_pct,omitempty"`
	EmptyLoopCycles float64  `json:"empty_loop_cycles"`
	TSCHz           uint64   `json:"tsc_hz"`
	// Repeats are the measured repeats' units per operation, in the
	// order they ran (Stats.Repeats').
	Repeats []float64 `json:"repeats,omitempty"`
}

// OracleCalibration is the leak oracle's calibration: Samples pairs of
// timed loads of one line of ring 3's data, a cached one (Hit) and one
// just flushed by CLFLUSH (Miss), in Unit (TSC ticks, or instructions
// under an emulator's icount). Observable is the rule's answer: the hits'
// 90th percentile below the misses' 10th; then Threshold, halfway between
// them, tells a hit (at most Threshold) from a miss. Verdict says it in
// words ("oracle unavailable: cache timing not observable" when not).
// TimedBy is how ring 3 timed a load ("RDTSCP; LFENCE", or "LFENCE;
// RDTSC; LFENCE (no RDTSCP)"). After names the system call made before
// each timed load ("getppid"), in the Subject's mode: the oracle's
// reloads follow a fault's kernel entry, whose CR3 writes under isolation
// without PCIDs empty the TLB, so each mode has its own calibration and
// threshold. Logs before it have no After and one calibration, under off,
// for every mode.
type OracleCalibration struct {
	Subject
	Samples    int               `json:"samples"`
	Unit       string            `json:"unit"`
	TimedBy    string            `json:"timed_by,omitempty"`
	After      string            `json:"after,omitempty"`
	Hit        OraclePercentiles `json:"hit"`
	Miss       OraclePercentiles `json:"miss"`
	Observable bool              `json:"observable"`
	Threshold  uint64            `json:"threshold,omitempty"`
	Verdict    string            `json:"verdict"`
}

// OraclePercentiles are a timed load's 10th, 50th and 90th percentiles,
// minimum and maximum.
type OraclePercentiles struct {
	P10 uint64 `json:"p10"`
	P50 uint64 `json:"p50"`
	P90 uint64 `json:"p90"`
	Min uint64 `json:"min"`
	Max uint64 `json:"max"`
}

// Oracle is the leak oracle's row of a mode: ring 3 read each byte of a
// kernel secret (Secret, Bytes long: a supervisor-only page of the
// kernel's; SecretPage says which, Subject.Target "sensitive" for the
// sensitive one) Attempts times, every read a page fault that the kernel
// recovered (Faults of them; the last one's error code ErrorCode, Present
// its P bit: the secret mapped, supervisor-only, in the user side's
// table); AsExpected says the faults were the ones expected (one per
// attempt at the byte's address, user-mode reads, P=1 where the mode's
// user table maps the secret, without isolation and the kernel's under
// asi, and P=0 where it does not). With the calibration observable (Tried), each read
// was followed by a transient load of the probe line its value selects
// and the lines were timed (Flush+Reload): Recovered bytes came out equal
// to the secret's (Leaked, in hex, the byte with the most hits per
// position, "??" for none). Meltdown is the vulnerability table's line
// for this CPU, beside the figures, not a verdict drawn from them.
// Pattern is the secret's bytes as text.
type Oracle struct {
	Subject
	Secret     string `json:"secret"`
	Pattern    string `json:"pattern,omitempty"`
	Bytes      int    `json:"bytes"`
	Attempts   int    `json:"attempts"`
	Faults     uint64 `json:"faults"`
	ErrorCode  uint64 `json:"error_code"`
	Present    bool   `json:"present"`
	AsExpected *bool  `json:"as_expected"`
	Tried      bool   `json:"tried"`
	Recovered  *int   `json:"recovered,omitempty"`
	Leaked     string `json:"leaked,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Meltdown   string `json:"meltdown"`
	// SecretPage says what the secret's page is.
	SecretPage string `json:"secret_page"`
}

// Exposure is what the user page table of a mode (Subject.Mode) maps
// beyond on's (issue 14's exposure lists: package pti's Exposure, which
// the host tests walk the tables against): one area per range. Off's user
// table is its kernel table: one area without an address, "the kernel".
type Exposure struct {
	Subject
	Areas []ExposureArea `json:"areas"`
}

// ExposureArea is a range of pages: its name, [Start, End) (absent for
// off's whole kernel), size in 4 KiB pages and what it holds.
type ExposureArea struct {
	Name  string `json:"name"`
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
	Pages int    `json:"pages"`
	Holds string `json:"holds"`
}

// TLBSweep is a point of the TLB working-set sweep (lmbench's lat_ctx
// -s, Gregg's sweep): units per null call (getppid, or for the kernel
// sweep ptilab's touch call) plus its touches of Subject.SweepPages
// distinct pages, over R repeats of N calls after Warmup, the empty
// loop's cost per iteration subtracted (the touches are not). The pages
// are Region's virtual pages of PageBytes each, Stride bytes apart, all
// mapped onto Frames frames of FrameBytes; each touch reads BytesPerTouch
// bytes at Offset in its page (so that consecutive touches fall in
// different cache sets). Side is "user" (ring 3 touches them between
// calls) or "kernel" (the system call does). ExtraVsOff is the units per
// call over PTI off's at the same point (absent for off, or when off did
// not run); Stats.RatioToOff the ratio.
type TLBSweep struct {
	Subject
	N      int `json:"N"`
	R      int `json:"R"`
	Warmup int `json:"warmup"`
	Stats
	NsPerCall       float64  `json:"ns_per_call"`
	EmptyLoopCycles float64  `json:"empty_loop_cycles"`
	ExtraVsOff      *float64 `json:"extra_vs_off,omitempty"`
	Side            string   `json:"side"`
	Region          string   `json:"region"`
	PageBytes       uint64   `json:"page_bytes"`
	Stride          uint64   `json:"stride"`
	VirtualPages    int      `json:"virtual_pages"`
	Frames          int      `json:"frames"`
	FrameBytes      uint64   `json:"frame_bytes"`
	BytesPerTouch   int      `json:"bytes_per_touch"`
	Offset          string   `json:"offset"`
}

// Ladder is a rung of the mitigation ladder (bench "ladder"): its
// configuration (Subject: the mitigated flavour's knobs, or the linux
// flavour; Tasks "processes" for the ping-pong ladder, empty for the null
// call), which part of the table it is ("flavour": the linux flavour,
// "none": every site disabled, "alone": one knob, "stacked": the plan's
// knobs added one by one, "linux": the set Linux would enable), the rung
// its increment is over (Over, a Mitigations name or "linux flavour"),
// its mean and the increment in Unit per operation (absent when either
// rung did not measure). The measurement itself is the syscall or
// pingpong record of the same subject, written before it. Sites are the
// mitigated null path's sites in its world (each a TEST and a taken JE
// when disabled).
type Ladder struct {
	Subject
	Rung
	Unit      string   `json:"unit"`
	Mean      float64  `json:"mean"`
	Increment *float64 `json:"increment,omitempty"`
	Sites     int      `json:"sites,omitempty"`
}

// Rung is where a configuration stands in a mitigation ladder's table:
// its part and the rung its increment is over (Ladder's); an unsupported
// or error record of a ladder's rung carries it too.
type Rung struct {
	Part string `json:"part"`
	Over string `json:"over,omitempty"`
}

// Seed is a cell of a table shaped as the reference thread's (null call
// or sched-messaging, 32-bit and 64-bit rows).
type Seed struct {
	Subject
	Stats
	Seconds float64 `json:"seconds,omitempty"` // sched-messaging's cells
}

// Unsupported is a configuration the CPU or the world cannot run, and
// why: a configuration of a benchmark, or of a seed table's cell
// (SeedUnsupported).
type Unsupported struct {
	Subject
	*Workload
	*Rung            // a ladder's rung
	N         int    `json:"N,omitempty"`
	R         int    `json:"R,omitempty"`
	Warmup    int    `json:"warmup,omitempty"`
	Address   string `json:"address,omitempty"`   // the probe's
	Operation string `json:"operation,omitempty"` // the flush cost's, in words
	Reason    string `json:"reason"`
}

// SeedUnsupported is a seed table's cell that cannot be measured.
type SeedUnsupported struct{ Unsupported }

// Error is a benchmark or a setup that went wrong; the PTILAB-END line
// counts it as a failure, under Name. Subject is set for a benchmark's
// configuration.
type Error struct {
	Name  string `json:"name"`
	Error string `json:"error"`
	*Subject
	*Rung     // a ladder's rung
	N     int `json:"N,omitempty"`
	R     int `json:"R,omitempty"`
}

// Check is a self-check: its name, whether it passed, what it saw, and
// fields of its own (Data, written beside the others).
type Check struct {
	Name   string
	OK     bool
	Detail string
	Data   map[string]any
}

// MarshalJSON writes the check's fields and Data in one object; Data
// cannot replace name, ok or detail.
func (c Check) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(c.Data)+3)
	for k, v := range c.Data {
		m[k] = v
	}
	m["name"], m["ok"], m["detail"] = c.Name, c.OK, c.Detail
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes (numbers in Data as
// json.Number).
func (c *Check) UnmarshalJSON(b []byte) error {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return err
	}
	c.Name, _ = m["name"].(string)
	c.OK, _ = m["ok"].(bool)
	c.Detail, _ = m["detail"].(string)
	delete(m, "name")
	delete(m, "ok")
	delete(m, "detail")
	delete(m, "kind")
	c.Data = m
	return nil
}

// Deadlock is a run that ended with every task blocked: the tasks (the
// first 64), how many there were, and how many in each state.
type Deadlock struct {
	Bench     string         `json:"bench"`
	Provoked  bool           `json:"provoked"`
	Tasks     []DeadlockTask `json:"tasks"`
	TaskCount int            `json:"task_count"`
	States    map[string]int `json:"states"`
}

// DeadlockTask is a task of a deadlocked run: its state, what it waits
// for, on which pipe, and where it resumes.
type DeadlockTask struct {
	Task    int    `json:"task"`
	Process int    `json:"process"`
	State   string `json:"state"`
	Wait    string `json:"wait"`
	Pipe    int    `json:"pipe"`
	RIP     string `json:"rip"`
}

// Machine identifies the machine and the run's setup.
type Machine struct {
	// PtilabCommit is the source the image was built from: 12 hex digits
	// of its git commit, "+dirty" for a changed work tree, "unknown"
	// when built outside a checkout (host/image.Commit).
	PtilabCommit string  `json:"ptilab_commit,omitempty"`
	Vendor       string  `json:"vendor"`
	Brand        string  `json:"brand"`
	Family       uint32  `json:"family"`
	Model        uint32  `json:"model"`
	Stepping     uint32  `json:"stepping"`
	Microcode    *uint32 `json:"microcode,omitempty"`
	TSCHz        uint64  `json:"tsc_hz"`
	TSCSource    string  `json:"tsc_source"`
	// The two TSC figures behind TSCHz: CPUID's (leaf 15H with its
	// crystal, or the SDM's crystal of the model; 0 when the CPU gives
	// none) and the measured one, against the ACPI PM timer, else the
	// HPET (both over the same half second), else the PIT
	// ("acpi-pm-timer", "hpet", "pit"; 0 and "" when none worked), with
	// their difference, (CPUID - measured) / measured, in ppm when both
	// exist. TSCCPUIDRejected: leaf 15H gave a figure more than 2% from
	// leaf 16H's base frequency, which was not used.
	// TSCPMTimerError says why the PM timer gave no figure.
	//
	// The HPET (IA-PC HPET 1.0a, found through the ACPI HPET table):
	// TSCHPETHz the TSC figure measured against its main counter over
	// the PM timer's half second, or TSCHPETError why there is none ("no
	// HPET table", "above 4 GiB", "no HPET answers at its address",
	// "counter period out of range", "disabled, with a timer interrupt or
	// legacy routing enabled: not started", or a calibration error such
	// as "did not advance"); HPETBase its registers' physical address,
	// HPETPeriodFs its COUNTER_CLK_PERIOD (femtoseconds per tick; absent
	// where not read); HPETStarted: its main counter was halted, ptilab
	// ran it for the calibration and then halted it again with its
	// configuration and count as found (HPETRestored: both read back so);
	// TSCHPETvsPMPPM (HPET - PM timer) / PM timer in ppm, when both gave
	// a figure.
	//
	// The PIT is measured only where neither the PM timer nor the HPET
	// gave a figure (both fields absent where it was not): TSCPITRetries
	// is how many of its 50 ms one-shots were run again after an SMI
	// disturbed one (at most 2), TSCPITError why it gave no figure.
	TSCCPUIDHz       uint64 `json:"tsc_cpuid_hz"`
	TSCCPUIDSource   string `json:"tsc_cpuid_source,omitempty"`
	TSCCPUIDRejected bool   `json:"tsc_cpuid_rejected,omitempty"`
	TSCMeasuredHz    uint64 `json:"tsc_measured_hz"`
	TSCMeasuredBy    string `json:"tsc_measured_by,omitempty"`
	TSCPPM           *int64 `json:"tsc_cpuid_vs_measured_ppm,omitempty"`
	TSCPMTimerError  string `json:"tsc_pm_timer_error,omitempty"`
	TSCHPETHz        uint64 `json:"tsc_hpet_hz,omitempty"`
	TSCHPETvsPMPPM   *int64 `json:"tsc_hpet_vs_pm_timer_ppm,omitempty"`
	TSCHPETError     string `json:"tsc_hpet_error,omitempty"`
	HPETBase         uint64 `json:"hpet_base,omitempty"`
	HPETPeriodFs     uint32 `json:"hpet_period_fs,omitempty"`
	HPETStarted      bool   `json:"hpet_started,omitempty"`
	HPETRestored     bool   `json:"hpet_restored,omitempty"`
	TSCPITRetries    *int   `json:"tsc_pit_retries,omitempty"`
	TSCPITError      string `json:"tsc_pit_error,omitempty"`
	TSCInvariant     bool   `json:"tsc_invariant"`
	PCID             bool   `json:"pcid"`
	INVPCID          bool   `json:"invpcid"`
	PGE              bool   `json:"pge"`
	SMEP             bool   `json:"smep"`
	SMAP             bool   `json:"smap"`
	RDRAND           bool   `json:"rdrand"`
	RDSEED           bool   `json:"rdseed"`
	RDTSCP           bool   `json:"rdtscp"`
	NX               bool   `json:"nx"`
	// FRED and LASS: CPUID.(EAX=07H,ECX=1):EAX[17] and [6], the 2025
	// CPUs' event delivery (the fred entry's rows need it) and
	// linear-address-space separation.
	FRED             bool   `json:"fred"`
	LASS             bool   `json:"lass"`
	PerfMonVersion   uint32 `json:"perfmon_version"`
	RAMBytes         uint64 `json:"ram_bytes"`
	FreeAtBootBytes  uint64 `json:"free_at_boot_bytes"`
	PoolBytes        uint64 `json:"pool_bytes"`
	FirmwareVendor   string `json:"firmware_vendor"`
	FirmwareRevision uint32 `json:"firmware_revision"`
	Board            string `json:"board"`
	Hypervisor       string `json:"hypervisor"`
	// Emulator names the emulator the run is on ("qemu-tcg", "bochs");
	// absent on hardware and hardware virtual machines.
	Emulator string `json:"emulator,omitempty"`
	// EmulatorBuild is the emulator build the host runner named in the
	// plan (key emulator_build, e.g. "bochs 3.0.devel 783b58fd6d9b"), as
	// told: the image cannot check it. Absent when not told.
	EmulatorBuild string `json:"emulator_build,omitempty"`
	ImageBase     uint64 `json:"image_base"`
	ImageBytes    uint64 `json:"image_bytes"`
	Relocated     bool   `json:"relocated"`
	Serial        bool   `json:"serial"`
	// SerialPorts are the serial consoles the record was written to:
	// "io 0x3f8" or "mmio 0xfe032000/4" (4-byte registers), the baud rate
	// ("115200 baud", or "firmware's baud", with "(spcr names 115200)"
	// when the SPCR table names a rate but no input clock for a
	// memory-mapped UART), then how it was found: "(com1)" or "(com2)"
	// probed at the legacy address, "(pci 00:16.3 8086:1e3d)" a
	// 16550-compatible serial controller on PCI (bus:device.function
	// vendor:device; ", decode turned on" when the firmware had left its
	// BAR's decode off), "(spcr)" named by the ACPI SPCR table; and
	// "(stuck)" for one given up because it never drained.
	SerialPorts []string `json:"serial_ports,omitempty"`
	Screens     int      `json:"screens"`
	Random      string   `json:"random"`
	RTC         bool     `json:"rtc"`
}

// TSCEvidence says what the machine's TSC frequency rests on, for the
// machine lines of the console and of the report: CPUID's figure, the
// measured one and its reference, the other references' figures or why
// they gave none, and how far apart the figures are: "CPUID none,
// measured 2.095999 GHz (acpi-pm-timer), HPET 2.096001 GHz (+1 ppm)". ""
// for a record that carries none of it (written before ptilab recorded
// it).
func (m Machine) TSCEvidence() string {
	if m.TSCCPUIDHz == 0 && !m.TSCCPUIDRejected && m.TSCMeasuredBy == "" && m.TSCPMTimerError == "" && m.TSCHPETError == "" && m.TSCPITRetries == nil {
		return ""
	}
	ghz := func(hz uint64) string { return fmt.Sprintf("%.6f GHz", float64(hz)/1e9) }
	s := "CPUID none"
	switch {
	case m.TSCCPUIDHz != 0:
		s = "CPUID " + ghz(m.TSCCPUIDHz) + " (" + m.TSCCPUIDSource + ")"
	case m.TSCCPUIDRejected:
		s = "CPUID 15H rejected (over 2% from 16H's base frequency)"
	}
	if m.TSCMeasuredHz != 0 {
		s += ", measured " + ghz(m.TSCMeasuredHz) + " (" + m.TSCMeasuredBy + ")"
	} else {
		s += ", measured none"
	}
	if m.TSCPMTimerError != "" {
		s += ", ACPI PM timer: " + m.TSCPMTimerError
	}
	switch {
	case m.TSCHPETHz != 0 && m.TSCMeasuredBy != "hpet":
		s += ", HPET " + ghz(m.TSCHPETHz)
		if m.TSCHPETvsPMPPM != nil {
			s += fmt.Sprintf(" (%+d ppm)", *m.TSCHPETvsPMPPM)
		}
	case m.TSCHPETError != "":
		s += ", HPET: " + m.TSCHPETError
	}
	if m.HPETStarted && !m.HPETRestored {
		s += " (started for the calibration, and its configuration or count did not read back as found after)"
	}
	if r := m.TSCPITRetries; r != nil {
		retries := fmt.Sprintf("%d retries", *r)
		if *r == 1 {
			retries = "1 retry"
		}
		switch {
		case m.TSCPITError != "":
			s += ", PIT: " + m.TSCPITError + " (" + retries + ")"
		case *r > 0:
			s += ", PIT after " + retries
		}
	}
	if m.TSCPPM != nil {
		s += fmt.Sprintf(", %+d ppm apart", *m.TSCPPM)
		if m.TSCSource == m.TSCMeasuredBy {
			s += ": the measured figure is used"
		}
	}
	return s
}

// Timing is how the benchmarks time: whether LFENCE serializes RDTSC,
// the TSC's frequency (Hz) and source, and what the figures are.
type Timing struct {
	LFENCE       string `json:"lfence"`
	TSCHz        uint64 `json:"tsc_hz"`
	TSCSource    string `json:"tsc_source"`
	TSCInvariant bool   `json:"tsc_invariant"`
	RDTSCP       bool   `json:"rdtscp"`
	Emulated     bool   `json:"emulated"`
	Emulator     string `json:"emulator,omitempty"`
	Icount       bool   `json:"icount"`
	// Modes are the plan's isolation modes, in the order the benchmarks
	// run them (the tables' mode column is as wide as the longest).
	Modes []string `json:"modes,omitempty"`
	// Entries are the entries the plan runs, both worlds' (the tables
	// give a world an entry column when it runs several).
	Entries []string `json:"entries,omitempty"`
}

// CPUState is the processor's state as the firmware left it, printed once
// at boot before any benchmark: the firmware's control registers, EFER,
// segment selectors and interrupt flag at the image entry point; the MSRs
// that decide the figures (by their SDM names: value as hex, or
// "unsupported" where the read raised #GP or CPUID says the MSR is absent);
// raw CPUID leaves 15H and 16H (EAX, EBX, ECX, EDX; absent beyond the
// maximum leaf); the CPUID limit the firmware may have set and ptilab
// cleared; and what they mean: the core clock's controls, fast strings
// and ERMSB (which decide the REP MOVS copy rows), SMT siblings.
type CPUState struct {
	CR0       string            `json:"cr0"`
	CR4       string            `json:"cr4"`
	EFER      string            `json:"efer"`
	Selectors map[string]string `json:"selectors"` // cs, ss, ds, es, fs, gs, tr
	IF        bool              `json:"if"`
	MSRs      map[string]string `json:"msrs"`
	CPUID15H  []uint32          `json:"cpuid_15h,omitempty"`
	CPUID16H  []uint32          `json:"cpuid_16h,omitempty"`
	// XCR0 is the firmware's XCR0 (hex; absent when it left CR4.OSXSAVE
	// clear) and XStateInit whether boot put the XSAVE-managed state (the
	// AVX upper halves) in its initial configuration before clearing
	// CR4.OSXSAVE: dirty upper halves slow every later SSE instruction on
	// Skylake (SDM Vol. 1, 13.3; Intel's optimization manual, "Mixing AVX
	// code with SSE code").
	XCR0       string `json:"xcr0,omitempty"`
	XStateInit bool   `json:"xstate_init"`
	// CPUIDLimit is IA32_MISC_ENABLE[22] ("Limit CPUID Maxval", "Max
	// CPUID Value Limit" in firmware menus) as the firmware left it: when
	// true, CPUID.0H:EAX said 2 at most, hiding leaves 06H, 07H, 0AH, 0BH
	// and 15H and what they enumerate. Absent where ptilab did not read
	// it: not an Intel CPU of family 6 model 0DH or later, where Linux
	// clears it (arch/x86/kernel/cpu/intel.c, intel_unlock_cpuid_leafs),
	// or the read raised #GP. CPUIDLimitCleared is whether boot cleared
	// it, before the Go runtime and ptilab's feature checks read CPUID;
	// MaxLeafAtEntry and MaxLeaf are CPUID.0H:EAX before and after.
	CPUIDLimit        *bool  `json:"cpuid_limit,omitempty"`
	CPUIDLimitCleared bool   `json:"cpuid_limit_cleared"`
	MaxLeafAtEntry    uint32 `json:"max_leaf_at_entry"`
	MaxLeaf           uint32 `json:"max_leaf"`

	// CoreClock is "aperf/mperf" (CPUID.06H:ECX[0] and both MSRs read) or
	// "unsupported"; SMICount "msr" or "unsupported".
	CoreClock string `json:"core_clock"`
	SMICount  string `json:"smi_count"`
	// MaxNonTurboRatio is MSR_PLATFORM_INFO[15:8] (0: unreadable), and
	// CurrentRatio IA32_PERF_STATUS[15:8].
	MaxNonTurboRatio int `json:"max_non_turbo_ratio"`
	CurrentRatio     int `json:"current_ratio"`
	// EIST, TurboDisabled and FastStrings are IA32_MISC_ENABLE bits 16, 38
	// and 0 (absent when it is unreadable).
	EIST          *bool `json:"eist,omitempty"`
	TurboDisabled *bool `json:"turbo_disabled,omitempty"`
	FastStrings   *bool `json:"fast_strings,omitempty"`
	Turbo         bool  `json:"turbo"`       // CPUID.06H:EAX[1], or IA32_MISC_ENABLE[38], which clears that bit
	HWP           bool  `json:"hwp"`         // CPUID.06H:EAX[7]
	HWPEnabled    bool  `json:"hwp_enabled"` // IA32_PM_ENABLE[0]
	ERMSB         bool  `json:"ermsb"`       // CPUID.(07H,0):EBX[9]
	// ThreadsPerCore is the SMT level's logical processors from CPUID leaf
	// 1FH or 0BH (TopologyLeaf; 0 when neither exists): the topology as
	// shipped, which still shows siblings with Hyper-Threading disabled
	// in the firmware. ThreadCount and CoreCount are
	// MSR_CORE_THREAD_COUNT (35H) [15:0] and [31:16], the logical
	// processors and cores the firmware enabled in the package (0 where
	// not read: Intel from Nehalem on only). SMT is whether the core has
	// siblings, and SMTSource what said so: "msr" (ThreadCount >
	// CoreCount), else "cpuid" (ThreadsPerCore > 1), else "none".
	ThreadsPerCore int    `json:"threads_per_core"`
	TopologyLeaf   string `json:"topology_leaf"`
	ThreadCount    int    `json:"thread_count,omitempty"`
	CoreCount      int    `json:"core_count,omitempty"`
	SMT            bool   `json:"smt"`
	SMTSource      string `json:"smt_source"`
	// FRED and LASS: CPUID.(EAX=07H,ECX=1):EAX[17] and [6] (the FRED
	// entry's rows need the first).
	FRED bool `json:"fred"`
	LASS bool `json:"lass"`

	// The firmware's state that would block or skew a run.
	//
	// CR0Fixed and CR4Fixed are the bits of CR0 and CR4 (hex masks) that
	// the entry code changed before any SSE instruction so that SSE runs
	// (CR0.MP set, CR0.EM and CR0.TS cleared, CR4.OSFXSR and
	// CR4.OSXMMEXCPT set; SDM Vol. 3A, 13.1.3), absent when the firmware
	// had them so: U-Boot's UEFI enters with SSE off. FCW and MXCSR are
	// the firmware's x87 control word and MXCSR at entry (hex; UEFI 2.10,
	// 2.3.4 asks for 0x37f and 0x1f80, which the entry code loads).
	// PCIDECleared: the firmware entered with CR4.PCIDE set, which boot
	// cleared (CR3's PCID 0 first), as leaving long mode for the 32-bit
	// world needs (SDM Vol. 3A, 4.10.1).
	CR0Fixed     string `json:"cr0_fixed,omitempty"`
	CR4Fixed     string `json:"cr4_fixed,omitempty"`
	FCW          string `json:"fcw"`
	MXCSR        string `json:"mxcsr"`
	PCIDECleared bool   `json:"pcide_cleared,omitempty"`
	// TransitCS is the code selector (hex) that the firmware gate's
	// switches of GDT, IDT and CS pass through, valid in both worlds'
	// GDTs so that an NMI between two loads is survivable: the firmware's
	// own CS where ptilab's GDT has room for its descriptor, else a free
	// index (FirmwareGDTCopy: the firmware's calls then run on a copy of
	// its GDT that adds it there, and the way back gives the firmware its
	// own). Absent where none could be placed (the firmware's CS is not
	// 64-bit ring-0 code, or no index is free in both): an NMI in the
	// gate's switches is then not survivable, which boot warns about.
	TransitCS       string `json:"transit_cs,omitempty"`
	FirmwareGDTCopy bool   `json:"firmware_gdt_copy,omitempty"`
	// Prefetchers is MSR_MISC_FEATURE_CONTROL (1A4H) [3:0] read as
	// enabled (true) or disabled by the firmware, by prefetcher: "l2_hw"
	// (L2 streamer), "l2_adjacent" (L2 adjacent line), "dcu" (L1 data
	// next line), "dcu_ip" (L1 data stride); absent where the MSR was not
	// read (not Intel family 6 model 1AH or later) or raised #GP.
	// EnergyPerfBias is IA32_ENERGY_PERF_BIAS[3:0] (1B0H, where
	// CPUID.06H:ECX[3]: 0 performance ... 15 energy saving) and C1E
	// MSR_POWER_CTL[1] (1FCH, Intel), absent where not read.
	Prefetchers    map[string]bool `json:"prefetchers,omitempty"`
	EnergyPerfBias *int            `json:"energy_perf_bias,omitempty"`
	C1E            *bool           `json:"c1e,omitempty"`
}

// Vulnerabilities is the CPU's vulnerability table, printed once at boot
// after the cpu-state record: what Linux (the version in Linux) would print
// in /sys/devices/system/cpu/vulnerabilities on this CPU with its default
// options, decided from CPUID, IA32_ARCH_CAPABILITIES and the
// family/model/stepping tables (package cpustate, Vulns). Table maps each
// sysfs file name (meltdown, spectre_v2, mds, tsx_async_abort,
// mmio_stale_data, retbleed, l1tf, srbds, gather_data_sampling,
// reg_file_data_sampling) to its line; the BHI state is part of
// spectre_v2's line, as Linux prints it, and also in BHI.
type Vulnerabilities struct {
	Linux    string `json:"linux"`
	Vendor   string `json:"vendor"`
	Family   int    `json:"family"`
	Model    int    `json:"model"`
	Stepping int    `json:"stepping"`
	// ArchCapabilities is IA32_ARCH_CAPABILITIES (10AH) as hex, or
	// "unsupported" (CPUID.(07H,0):EDX[29] clear, or the read raised #GP):
	// Linux then decides as if it read 0.
	ArchCapabilities string `json:"arch_capabilities"`
	Hypervisor       bool   `json:"hypervisor"` // CPUID.01H:ECX[31]
	// SMT is whether the core has siblings, as the cpu-state record's
	// smt, and SMTSource what said so (its smt_source).
	SMT       bool   `json:"smt"`
	SMTSource string `json:"smt_source"`
	// PTINeeded is whether Linux enables page-table isolation (the
	// Meltdown bug is set); PTIWhy says what decided it: "RDCL_NO",
	// "whitelisted model", or "affected".
	PTINeeded bool              `json:"pti_needed"`
	PTIWhy    string            `json:"pti_why"`
	BHI       string            `json:"bhi"`
	Table     map[string]string `json:"table"`
	// FRED and LASS: CPUID.(EAX=07H,ECX=1):EAX[17] and [6], which no
	// entry of Linux 6.6's table reflects: a FRED kernel enters by FRED,
	// and LASS faults user accesses to the kernel's half before the page
	// walk (the lass mode).
	FRED bool `json:"fred,omitempty"`
	LASS bool `json:"lass,omitempty"`
}

// PState is what the run did to the core's P-state (plan key pstate):
// the mode, the MSR written and its value and the firmware's (hex; absent
// when nothing was written), why, and how the clock settled. The
// firmware's value is given back at the end (an msr-restore record).
type PState struct {
	Mode     string  `json:"mode"`
	MSR      string  `json:"msr,omitempty"`
	Value    string  `json:"value,omitempty"`
	Firmware string  `json:"firmware,omitempty"`
	Ratio    int     `json:"ratio,omitempty"`
	Why      string  `json:"why"`
	Applied  bool    `json:"applied"`
	Settled  bool    `json:"settled"`
	SettleMs float64 `json:"settle_ms,omitempty"`
	CoreMHz  float64 `json:"core_mhz,omitempty"`
	// MPERFPerTSC is dMPERF/dTSC over the settle wait (or a busy interval
	// of its own when nothing was requested), where the CPU has APERF and
	// MPERF; MPERFScaled whether the core clocks and core cycles of every
	// figure are scaled by it (cpustate.MPERFScale: it is further than
	// 0.05% from 1).
	MPERFPerTSC float64 `json:"mperf_per_tsc,omitempty"`
	MPERFScaled bool    `json:"mperf_scaled,omitempty"`
}

// Baseline is the disturbance baseline, measured before the benchmarks
// on the clock they will run at: a tight loop that reads the TSC for Ms
// milliseconds with interrupts masked, as Linux's hwlat tracer
// (kernel/trace/trace_hwlat.c). Each step between two reads longer than
// GapThresholdUs is time the CPU spent elsewhere, in SMM or an NMI
// handler: Gaps of them (GapsPerS a second, GapTotalUs in all), the
// longest MaxGapUs. SMIs is MSR_SMI_COUNT's change over the loop (with
// SMICount "msr"; "unsupported" where the CPU has none), NMIs ptilab's
// handlers' count. CoreClock is what APERF/MPERF did over the loop:
// "aperf/mperf" with the core's average clock CoreMHz, "unsupported", or
// "not counting" when the MSRs read but did not advance over a busy loop
// (an emulator that reads MSRs it lacks as 0, broken firmware): the
// figures then carry no core clock. An MSR_SMI_COUNT that reads 0 (no SMI
// since reset, which a PC's firmware does not do) is warned about: a quiet
// machine's count does not move either, so only 0 itself gives it away.
// Warnings say what would disturb the figures (rates above 10 a second; the likely cause on a PC is a USB
// keyboard or mouse, whose legacy emulation the firmware runs in SMM);
// none under an emulator, whose gaps are the host's.
type Baseline struct {
	Ms    float64 `json:"ms"`
	Reads uint64  `json:"reads"`
	NMIs  uint64  `json:"nmis"`
	BaselineSMIs
	BaselineGaps
	CoreClock string   `json:"core_clock"`
	CoreMHz   float64  `json:"core_mhz,omitempty"`
	Emulated  bool     `json:"emulated,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// BaselineSMIs are the baseline's SMI count (Baseline; fields flat in
// its JSON).
type BaselineSMIs struct {
	SMICount string  `json:"smi_count"`
	SMIs     uint64  `json:"smis"`
	SMIsPerS float64 `json:"smis_per_s"`
}

// BaselineGaps are the baseline's gaps in the TSC reads (Baseline;
// fields flat in its JSON).
type BaselineGaps struct {
	GapThresholdUs float64 `json:"gap_threshold_us"`
	Gaps           uint64  `json:"gaps"`
	GapsPerS       float64 `json:"gaps_per_s"`
	GapTotalUs     float64 `json:"gap_total_us"`
	MaxGapUs       float64 `json:"max_gap_us"`
}

// MSRRestore is the MSRs ptilab wrote, given back the values they had
// before its first write to each (cpustate.Saved, the one registry every
// way out of a run replays), on the way out At names: "end" (after the
// benchmarks), or the kernel's reason when it ends a run the program did
// not bring to its end ("exit": a Go panic, or an exit before the end;
// "fault", "deadlock", "out of memory"). MSRs are in the order they were
// first written; they are written back in the reverse order.
type MSRRestore struct {
	At   string        `json:"at"`
	MSRs []RestoredMSR `json:"msrs"`
}

// RestoredMSR is one MSR of an MSRRestore: its SDM name and address
// (hex), the value read before ptilab's first write (hex), the MSR the
// value was written back through where that is another (IA32_A_PMCx for
// IA32_PMCx: a full-width write), whether that write took (false: it
// raised #GP), and the value read back after it (hex; absent when the
// read raised #GP).
type RestoredMSR struct {
	Name     string `json:"name"`
	MSR      string `json:"msr"`
	Firmware string `json:"firmware"`
	Via      string `json:"via,omitempty"`
	Restored bool   `json:"restored"`
	ReadBack string `json:"read_back,omitempty"`
}

// FirmwareMSR is an MSR's SDM name, address and value (hex) as the
// firmware left it.
type FirmwareMSR struct {
	Name  string `json:"name"`
	MSR   string `json:"msr"`
	Value string `json:"value"`
}

// PMUFirmware is the performance-monitoring MSRs as the firmware left
// them, read before ptilab's first write to any (bench's startPMU): every
// MSR ptilab then writes, with its value; and the counters the firmware
// left enabled (IA32_PERFEVTSELx.EN, an enable field of
// IA32_FIXED_CTR_CTRL: what Linux's check_hw_exists calls "the BIOS has
// corrupted hw-PMU resources"), each as "MSR = value: what is enabled".
type PMUFirmware struct {
	MSRs  []FirmwareMSR `json:"msrs"`
	InUse []string      `json:"in_use,omitempty"`
}

// PlanError is a line of the plan file the run could not use, and what
// it did instead.
type PlanError struct {
	Line        int    `json:"line"`
	Text        string `json:"text"`
	Error       string `json:"error"`
	Consequence string `json:"consequence"`
}

// SyscallCounts are the system calls the Go runtime made, by name.
type SyscallCounts struct {
	Counts   map[string]uint64 `json:"counts"`
	Distinct int               `json:"distinct"`
	Total    uint64            `json:"total"`
	ENOSYS   uint64            `json:"enosys"`
}

// Fault is a fatal CPU exception (written by the kernel, goos/fault.go):
// its vector and name, error code, RIP (and, in the image, its address in
// the ELF), CR2 for #PF, and where it struck.
type Fault struct {
	Vector uint64 `json:"vector"`
	Name   string `json:"name"`
	Error  uint64 `json:"error"`
	RIP    string `json:"rip"`
	CR2    string `json:"cr2,omitempty"`
	In     string `json:"in"`
	ELFRIP string `json:"elf_rip,omitempty"`
}

// OutOfMemory is the kernel's frame pool used up (goos/fault.go): its
// size and the address the runtime touched.
type OutOfMemory struct {
	PoolBytes uint64 `json:"pool_bytes"`
	Address   string `json:"address"`
}

// End is the PTILAB-END line: the run's status ("ok", "failed", or the
// kernel's reason when it ended the run) and exit status, the counts of
// records and checks, the failed checks and benchmarks, and figures of
// the run. The kernel's own END line (a run it ended) has only Status,
// Exit, Syscalls and UptimeMs.
type End struct {
	Status  string `json:"status"`
	Exit    int    `json:"exit"`
	Records int    `json:"records"`
	// Checks is the self-checks run and Passed those that passed;
	// FailedBenchmarks the benchmarks (and setups) that failed, counted
	// apart; Failed names the failed checks and benchmarks together.
	Checks           int      `json:"checks"`
	Passed           int      `json:"passed"`
	FailedBenchmarks int      `json:"failed_benchmarks"`
	Failed           []string `json:"failed"`
	ElapsedMs        int64    `json:"elapsed_ms,omitempty"`
	PlanErrors       int      `json:"plan_errors"`
	UptimeMs         int64    `json:"uptime_ms,omitempty"`
	SinceEntryMs     int64    `json:"since_entry_ms,omitempty"`
	BootMs           int64    `json:"boot_ms,omitempty"`
	PoolPeakMiB      uint64   `json:"pool_peak_mib,omitempty"`
	ThreadSwitches   uint64   `json:"thread_switches,omitempty"`
	Syscalls         uint64   `json:"syscalls,omitempty"`
	// NMIs is how many non-maskable interrupts arrived during the run
	// (counted and resumed, never fatal: goos.NMICount).
	NMIs uint64 `json:"nmis"`
	// ResultsFile is the results file on the boot volume; absent from
	// the kernel's own END line.
	ResultsFile *ResultsFile `json:"results_file,omitempty"`
}

// ResultsFile says where the run's copy of its serial record went on the
// boot volume (ptilab-results/<date>-<time>-<cpu>.log): its path from the
// volume's root, and the error that kept it from being created or
// written to the end ("read-only file system", "writing: volume full"),
// empty when it holds the whole run.
//
// Bytes, Flushes and WriteMs are what the file had cost when PTILAB-END
// was printed: the bytes written before that line, the flushes (one per
// record) and the milliseconds spent in the firmware's file calls, all
// between measurements.
type ResultsFile struct {
	Path    string  `json:"path,omitempty"`
	Error   string  `json:"error,omitempty"`
	Bytes   uint64  `json:"bytes,omitempty"`
	Flushes uint64  `json:"flushes,omitempty"`
	WriteMs float64 `json:"write_ms,omitempty"`
}

func (Syscall) Kind() string         { return "syscall" }
func (PingPong) Kind() string        { return "pingpong" }
func (Messaging) Kind() string       { return "messaging" }
func (Phases) Kind() string          { return "phases" }
func (Probe) Kind() string           { return "probe" }
func (Retention) Kind() string       { return "retention" }
func (FlushCost) Kind() string       { return "flushcost" }
func (TLBSweep) Kind() string        { return "tlbsweep" }
func (Seed) Kind() string            { return "seed" }
func (Ladder) Kind() string          { return "ladder" }
func (Unsupported) Kind() string     { return "unsupported" }
func (SeedUnsupported) Kind() string { return "seed-unsupported" }
func (Error) Kind() string           { return "error" }
func (Check) Kind() string           { return "check" }
func (Deadlock) Kind() string        { return "deadlock" }
func (Machine) Kind() string         { return "machine" }
func (Timing) Kind() string          { return "timing" }
func (CPUState) Kind() string        { return "cpu-state" }
func (PState) Kind() string          { return "pstate" }
func (MSRRestore) Kind() string      { return "msr-restore" }
func (PMUFirmware) Kind() string     { return "pmu-firmware" }
func (Baseline) Kind() string        { return "baseline" }
func (Vulnerabilities) Kind() string { return "vulnerabilities" }
func (PlanError) Kind() string       { return "plan-error" }
func (SyscallCounts) Kind() string   { return "syscalls" }
func (Fault) Kind() string           { return "fault" }
func (OutOfMemory) Kind() string     { return "oom" }
func (End) Kind() string             { return "end" }

// The leak oracle's kinds.
func (OracleCalibration) Kind() string { return "oracle-calibration" }
func (Oracle) Kind() string            { return "oracle" }

// The probe's list of what each mode's user table maps beyond on's.
func (Exposure) Kind() string { return "exposure" }

// The kinds of `ptilab linux` runs.
func (Linux) Kind() string     { return "linux" }
func (PerfBench) Kind() string { return "perf-bench" }

// kinds makes an empty record of each kind, for Decode.
var kinds = map[string]func() Record{}

func init() {
	for _, r := range []Record{Syscall{}, PingPong{}, Messaging{}, Phases{}, Probe{}, Retention{}, FlushCost{}, Seed{}, Unsupported{},
		SeedUnsupported{}, Error{}, Check{}, Deadlock{}, Machine{}, Timing{}, PlanError{}, SyscallCounts{},
		Fault{}, OutOfMemory{}, End{}, CPUState{}, PState{}, Baseline{}, Vulnerabilities{}, OracleCalibration{}, Oracle{},
		TLBSweep{}, Exposure{}, Ladder{}, MSRRestore{}, PMUFirmware{}, Linux{}, PerfBench{}} {
		kinds[r.Kind()] = newOf(r)
	}
}

// Kinds lists the record kinds Decode knows.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	return out
}

// Encode returns a record's JSON object with its kind first.
func Encode(r Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("contract: a %s record is not a JSON object", r.Kind())
	}
	out := fmt.Appendf(nil, `{"kind":%q`, r.Kind())
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// Decode decodes a record line's JSON object (kind included; for the
// PTILAB-END line, kind "end") into the type of its kind; numbers decode
// into the fields' types. An unknown kind or a malformed object is an
// error.
func Decode(kind string, raw []byte) (Record, error) {
	mk, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("contract: unknown record kind %q", kind)
	}
	p := mk()
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("contract: a %s record: %w", kind, err)
	}
	return deref(p), nil
}

// newOf returns a function making a pointer to a new zero record of r's
// type.
func newOf(r Record) func() Record {
	t := reflect.TypeOf(r)
	return func() Record { return reflect.New(t).Interface().(Record) }
}

// deref returns the record a pointer made by newOf points at.
func deref(p Record) Record { return reflect.ValueOf(p).Elem().Interface().(Record) }
