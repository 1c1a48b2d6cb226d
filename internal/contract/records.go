package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
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
	Mode  string `json:"mode"`  // "off", "on", "on+pcid"
	// Entry is the way into the kernel: "syscall" (64-bit), "sysenter"
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
	Target string `json:"target,omitempty"` // the probe's target
	// WorkNs is the work curve's point: ns the call spends in the kernel.
	WorkNs *int64 `json:"work_ns,omitempty"`
	// Emulated: the figures come from an emulator, not the hardware.
	Emulated bool `json:"emulated"`
	// Icount: the TSC counted instructions (QEMU -icount shift=0, Bochs).
	Icount bool `json:"icount"`
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
}

// Syscall is a timed system-call loop: units per call over R repeats of N
// calls, the empty loop's cost per iteration subtracted.
type Syscall struct {
	Subject
	N, R int
	Stats
	NsPerCall       float64 `json:"ns_per_call"`
	EmptyLoopCycles float64 `json:"empty_loop_cycles"`
	// Phases are the instrumented trampoline's units per call in each
	// phase ("cr3_in", "copy_in", "dispatch", "copy_out", "cr3_out"), and
	// PhaseCall the whole call over the same calls (with Stamps).
	Phases    map[string]float64 `json:"phases,omitempty"`
	PhaseCall float64            `json:"phase_call,omitempty"`
}

// PingPong is the ping-pong: units per round trip (two writes, two reads,
// two context switches), and what the tasks kernel counted over the run,
// warm-up included.
type PingPong struct {
	Subject
	N, R int
	Stats
	NsPerRoundTrip float64 `json:"ns_per_round_trip"`
	RoundTrips     uint64  `json:"round_trips"`
	Switches       uint64  `json:"switches"`
	CR3Loads       uint64  `json:"cr3_loads"`
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
}

// Workload is sched-messaging's shape: groups of 20 senders and 20
// receivers, messages from each sender to each receiver (loops), bytes per
// message, and the IPC ("pipe").
type Workload struct {
	Groups int    `json:"groups"`
	Loops  int    `json:"loops"`
	Size   int    `json:"size"`
	IPC    string `json:"ipc,omitempty"`
}

// Phases is where a sched-messaging run's units went, from the
// instrumented SYSENTER entry: each phase's share of the run in %, the
// entry path's (all but the dispatch), the run's units and messages.
type Phases struct {
	Subject
	Workload
	Unit         string             `json:"unit"`
	PhasePct     map[string]float64 `json:"phase_pct"`
	EntryPathPct float64            `json:"entry_path_pct"`
	RunCycles    uint64             `json:"run_cycles"`
	Messages     uint64             `json:"messages"`
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
	N       int    `json:"N,omitempty"`
	R       int    `json:"R,omitempty"`
	Warmup  int    `json:"warmup,omitempty"`
	Address string `json:"address,omitempty"` // the probe's
	Reason  string `json:"reason"`
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
	N int `json:"N,omitempty"`
	R int `json:"R,omitempty"`
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
	Vendor           string  `json:"vendor"`
	Brand            string  `json:"brand"`
	Family           uint32  `json:"family"`
	Model            uint32  `json:"model"`
	Stepping         uint32  `json:"stepping"`
	Microcode        *uint32 `json:"microcode,omitempty"`
	TSCHz            uint64  `json:"tsc_hz"`
	TSCSource        string  `json:"tsc_source"`
	TSCInvariant     bool    `json:"tsc_invariant"`
	PCID             bool    `json:"pcid"`
	INVPCID          bool    `json:"invpcid"`
	PGE              bool    `json:"pge"`
	SMEP             bool    `json:"smep"`
	SMAP             bool    `json:"smap"`
	RDRAND           bool    `json:"rdrand"`
	RDSEED           bool    `json:"rdseed"`
	RDTSCP           bool    `json:"rdtscp"`
	NX               bool    `json:"nx"`
	PerfMonVersion   uint32  `json:"perfmon_version"`
	RAMBytes         uint64  `json:"ram_bytes"`
	FreeAtBootBytes  uint64  `json:"free_at_boot_bytes"`
	PoolBytes        uint64  `json:"pool_bytes"`
	FirmwareVendor   string  `json:"firmware_vendor"`
	FirmwareRevision uint32  `json:"firmware_revision"`
	Board            string  `json:"board"`
	Hypervisor       string  `json:"hypervisor"`
	// Emulator names the emulator the run is on ("qemu-tcg", "bochs");
	// absent on hardware and hardware virtual machines.
	Emulator   string `json:"emulator,omitempty"`
	ImageBase  uint64 `json:"image_base"`
	ImageBytes uint64 `json:"image_bytes"`
	Relocated  bool   `json:"relocated"`
	Serial     bool   `json:"serial"`
	// SerialPorts are the serial consoles the record was written to:
	// "io 0x3f8" or "mmio 0xfe032000/4" (4-byte registers), the baud rate
	// ("115200 baud", or "firmware's baud"), "(spcr)" for the UART the
	// ACPI SPCR table names, "(stuck)" for one given up because it never
	// drained.
	SerialPorts []string `json:"serial_ports,omitempty"`
	Screens     int      `json:"screens"`
	Random      string   `json:"random"`
	RTC         bool     `json:"rtc"`
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
	Status         string   `json:"status"`
	Exit           int      `json:"exit"`
	Records        int      `json:"records"`
	Checks         int      `json:"checks"`
	Passed         int      `json:"passed"`
	Failed         []string `json:"failed"`
	ElapsedMs      int64    `json:"elapsed_ms,omitempty"`
	PlanErrors     int      `json:"plan_errors"`
	UptimeMs       int64    `json:"uptime_ms,omitempty"`
	SinceEntryMs   int64    `json:"since_entry_ms,omitempty"`
	BootMs         int64    `json:"boot_ms,omitempty"`
	PoolPeakMiB    uint64   `json:"pool_peak_mib,omitempty"`
	ThreadSwitches uint64   `json:"thread_switches,omitempty"`
	Syscalls       uint64   `json:"syscalls,omitempty"`
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
func (Seed) Kind() string            { return "seed" }
func (Unsupported) Kind() string     { return "unsupported" }
func (SeedUnsupported) Kind() string { return "seed-unsupported" }
func (Error) Kind() string           { return "error" }
func (Check) Kind() string           { return "check" }
func (Deadlock) Kind() string        { return "deadlock" }
func (Machine) Kind() string         { return "machine" }
func (Timing) Kind() string          { return "timing" }
func (PlanError) Kind() string       { return "plan-error" }
func (SyscallCounts) Kind() string   { return "syscalls" }
func (Fault) Kind() string           { return "fault" }
func (OutOfMemory) Kind() string     { return "oom" }
func (End) Kind() string             { return "end" }

// kinds makes an empty record of each kind, for Decode.
var kinds = map[string]func() Record{}

func init() {
	for _, r := range []Record{Syscall{}, PingPong{}, Messaging{}, Phases{}, Probe{}, Seed{}, Unsupported{},
		SeedUnsupported{}, Error{}, Check{}, Deadlock{}, Machine{}, Timing{}, PlanError{}, SyscallCounts{},
		Fault{}, OutOfMemory{}, End{}} {
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
