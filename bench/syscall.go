package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tasks"
)

// The null system call under each isolation mode: the figure the Linux
// threads measured as getppid at 0.079 µs without PTI and 0.203 µs with it.

// Clock converts cycles to nanoseconds and says where its frequency came
// from; Emulated marks timings from an emulator (QEMU's TCG), which are
// not the hardware's; Icount marks QEMU's -icount, under which the TSC
// counts instructions.
type Clock struct {
	Hz       uint64
	Source   string
	Emulated bool
	Icount   bool
}

// unit names what the figures count, for records.
func (c Clock) unit() string {
	if c.Icount {
		return "instructions"
	}
	return "tsc_cycles"
}

// perCall is the heading of the per-call column.
func (c Clock) perCall() string {
	if c.Icount {
		return "insns/call"
	}
	return "tsc/call"
}

// unitNote says what the figures count, for table headings.
func (c Clock) unitNote() string {
	if c.Icount {
		return "INSTRUCTIONS (QEMU -icount: the TSC counts instructions; ns are virtual)"
	}
	return "TSC cycles (not core cycles)"
}

// Ns converts cycles to nanoseconds.
func (c Clock) Ns(cycles float64) float64 { return cycles * 1e9 / float64(c.Hz) }

func (c Clock) header() string {
	s := fmt.Sprintf("TSC %.3f GHz (%s)", float64(c.Hz)/1e9, c.Source)
	switch {
	case c.Icount:
		s += "; EMULATED with -icount: path lengths, not timings"
	case c.Emulated:
		s += "; EMULATED (QEMU TCG): these are not hardware timings"
	}
	return s
}

// Measurement is one configuration's figure: cycles per call over R
// repeats of N calls.
type Measurement struct {
	Config  pti.Config
	Bench   string // "null" or "work"
	WorkNs  int64  // for "work": the time the call spends in the kernel
	N, R    int
	Stats   Stats   // cycles per call, loop overhead subtracted
	Empty   float64 // cycles per iteration of the empty loop
	Unsup   error   // the CPU cannot run the configuration
	Failure error   // the run went wrong (an exception in the loop)
}

// rdtscpFlag is the user loop's argument choosing how it ends a timed
// region: 0 with RDTSCP where the CPU has it, 1 with LFENCE; RDTSC; LFENCE.
func rdtscpFlag() uint64 {
	if amd64.Features.RDTSCP {
		return 0
	}
	return 1
}

// execFunc runs program p of the main process alone in ring 3 under c with
// arguments args: pti.Exec, or execWithFile.
type execFunc func(c pti.Config, p pti.Program, args [6]uint64) (pti.Result, error)

// runLoop runs program p (pti.Syscalls or pti.Empty) for r repeats of n
// iterations under c with exec and returns the r cycle counts.
func runLoop(exec execFunc, c pti.Config, p pti.Program, n, r int, nr, arg uint64) ([]uint64, error) {
	if r*8 > len(pti.MainProcess().DataPages()) {
		return nil, fmt.Errorf("%d repeats do not fit in the task's data pages", r)
	}
	res, err := exec(c, p, [6]uint64{uint64(n), uint64(r), pti.UserData, nr, arg, rdtscpFlag()})
	if err != nil {
		return nil, err
	}
	if res.Reason != pti.ReasonExit || res.Status != 0 {
		return nil, fmt.Errorf("the ring-3 loop ended with %v", res)
	}
	d := pti.MainProcess().DataPages()
	out := make([]uint64, r)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(d[8*i:])
	}
	return out, nil
}

// Measure times system call nr with argument arg under c: warm-up repeats,
// then r repeats of n calls, less the empty loop's cost per iteration
// (median of its repeats, measured the same way).
func Measure(c pti.Config, nr, arg uint64, n, r, warmup int) Measurement {
	return measure(pti.Exec, c, nr, arg, n, r, warmup)
}

// measure is Measure with the loops run by exec.
func measure(exec execFunc, c pti.Config, nr, arg uint64, n, r, warmup int) Measurement {
	m := Measurement{Config: c, N: n, R: r}
	if err := pti.Supported(c); err != nil {
		m.Unsup = err
		return m
	}
	empty, err := runLoop(exec, c, pti.Empty, n, r+warmup, nr, arg)
	if err != nil {
		m.Failure = err
		return m
	}
	m.Empty = Summarize(PerOp(empty[warmup:], n, 0)).Median
	calls, err := runLoop(exec, c, pti.Syscalls, n, r+warmup, nr, arg)
	if err != nil {
		m.Failure = err
		return m
	}
	m.Stats = Summarize(PerOp(calls[warmup:], n, m.Empty))
	return m
}

// SyscallParams are the null-syscall and work-curve benchmarks' knobs.
type SyscallParams struct {
	Modes    []pti.Mode
	Flavours []pti.Flavour
	Globals  []bool
	N, R     int
	Warmup   int
	WorkN    int     // calls per repeat for the work curve
	WorkNs   []int64 // the work curve's points, ns spent in the kernel per call
}

// configs lists the configurations of p, modes outermost.
func (p SyscallParams) configs() []pti.Config {
	var cs []pti.Config
	for _, m := range p.Modes {
		for _, f := range p.Flavours {
			for _, g := range p.Globals {
				cs = append(cs, pti.Config{Mode: m, Flavour: f, Global: g})
			}
		}
	}
	return cs
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// record writes m's PTILAB line.
func (r *Reporter) measurement(m Measurement, clk Clock, ratio float64) {
	f := map[string]any{
		"bench": m.Bench, "mode": m.Config.Mode.String(), "flavour": m.Config.Flavour.String(),
		"global": m.Config.Global, "N": m.N, "R": m.R, "emulated": clk.Emulated, "icount": clk.Icount,
	}
	if m.Bench == "work" {
		f["work_ns"] = m.WorkNs
	}
	if r.notMeasured(m.Bench+" "+m.Config.String(), f, m.Unsup, m.Failure) {
		return
	}
	addStats(f, m.Stats, clk, ratio)
	f["ns_per_call"] = round(clk.Ns(m.Stats.Mean))
	f["empty_loop_cycles"] = round(m.Empty)
	r.Record("syscall", f)
}

// notMeasured records a configuration the CPU cannot run (an
// "unsupported" record with the reason) or whose run failed (an error
// named name), with the fields f, and reports whether it was either.
func (r *Reporter) notMeasured(name string, f map[string]any, unsup, failure error) bool {
	switch {
	case unsup != nil:
		f["reason"] = unsup.Error()
		r.Record("unsupported", f)
	case failure != nil:
		f["error"] = failure.Error()
		r.Error(name, f)
	default:
		return false
	}
	return true
}

// addStats adds the fields every measured record carries: the unit, the
// statistics of s, the TSC frequency and, when there is one, the ratio to
// off.
func addStats(f map[string]any, s Stats, clk Clock, ratio float64) {
	f["unit"] = clk.unit()
	f["mean"], f["stddev"], f["stddev_pct"] = round(s.Mean), round(s.Stddev), round(s.StddevPct())
	f["perf_pm_pct"] = round(s.PerfPct())
	f["median"], f["min"], f["max"] = round(s.Median), round(s.Min), round(s.Max)
	f["tsc_hz"] = clk.Hz
	if ratio > 0 {
		f["ratio_to_off"] = round(ratio)
	}
}

func round(x float64) float64 {
	if x < 0 {
		return -round(-x)
	}
	return float64(int64(x*1000+0.5)) / 1000
}

// NullSyscall measures the null system call (getppid) in every
// configuration of p and prints the table as it goes, a row per
// configuration: cycles and ns per call, the spread, and the ratio to PTI
// off with the same flavour and global pages.
func NullSyscall(r *Reporter, p SyscallParams, clk Clock) []Measurement {
	r.Printf("")
	r.Printf("null system call (getppid), per call: %s, empty-loop overhead subtracted;", repeats(p.R, p.N, p.Warmup))
	r.Printf("%s; ± as perf stat --repeat (stddev of the mean); %s", clk.unitNote(), clk.header())
	r.Printf("%-8s %-8s %-6s %12s %7s %12s %12s %10s %7s", "mode", "flavour", "global", clk.perCall(), "±%", "median", "min", "ns/call", "vs off")
	var ms []Measurement
	for _, c := range p.configs() {
		m := Measure(c, pti.SysGetppid, 0, p.N, p.R, p.Warmup)
		m.Bench = "null"
		ms = append(ms, m)
		ratio := 0.0
		if base := find(ms, pti.Config{Mode: pti.Off, Flavour: c.Flavour, Global: c.Global}); base != nil && base.ok() && m.ok() {
			ratio = m.Stats.Mean / base.Stats.Mean
		}
		r.syscallRow(fmt.Sprintf("%-8s %-8s %-6s", c.Mode, c.Flavour, yn(c.Global)), m.Stats, clk, ratio, m.Unsup, m.Failure)
		r.measurement(m, clk, ratio)
	}
	r.Printf("reference (docs/references.md: Linux 5.10 getppid loop, 64-bit): off %.1f ns, on %.1f ns per call, on vs off %.2f",
		RefNullOffNs, RefNullOnNs, RefNullOnNs/RefNullOffNs)
	r.Printf("(the linux flavour has Linux's entry shape, not its speculation mitigations: no VERW, IBRS or RSB stuffing)")
	return ms
}

// syscallRow prints a row of a per-call table: head, then the reason the
// configuration is unsupported, its failure, or cycles per call, the
// spread, median, minimum, ns per call and the ratio to off.
func (r *Reporter) syscallRow(head string, s Stats, clk Clock, ratio float64, unsup, failure error) {
	switch {
	case unsup != nil:
		r.Printf("%s %s", head, "unsupported: "+reasonOf(unsup))
	case failure != nil:
		r.Printf("%s FAILED: %v", head, failure)
	default:
		r.Printf("%s %12.1f %7s %12.1f %12.1f %10.1f %7.2f", head, s.Mean, spread(s), s.Median, s.Min, clk.Ns(s.Mean), ratio)
	}
}

// spread formats the perf-style ± of s; with one repeat there is none.
func spread(s Stats) string {
	if s.N < 2 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", s.PerfPct())
}

// repeats describes the repetitions of a measurement of calls in words.
func repeats(r, n, warmup int) string { return repeatsOf(r, n, warmup, "call", "calls") }

// repeatsOf describes r repeats of n operations (one, many: their name)
// after warmup repeats.
func repeatsOf(r, n, warmup int, one, many string) string {
	plural := func(k int, one, many string) string {
		if k == 1 {
			return fmt.Sprintf("%d %s", k, one)
		}
		return fmt.Sprintf("%d %s", k, many)
	}
	return fmt.Sprintf("%s of %s after %s", plural(r, "repeat", "repeats"), plural(n, one, many), plural(warmup, "warm-up repeat", "warm-up repeats"))
}

// Reference figures (docs/references.md, from the Linux kernel mailing-list threads
// that motivated ptilab): the null system call on a 64-bit Linux 5.10
// kernel without and with PTI, and what a 2 µs system call pays.
const (
	RefNullOffNs     = 79.2
	RefNullOnNs      = 202.5
	RefWork2usPctPTI = 6
)

func (m *Measurement) ok() bool { return m.Unsup == nil && m.Failure == nil }

func find(ms []Measurement, c pti.Config) *Measurement {
	for i := range ms {
		if ms[i].Config == c {
			return &ms[i]
		}
	}
	return nil
}

func findWork(ms []Measurement, mode pti.Mode, ns int64) *Measurement {
	for i := range ms {
		if ms[i].Config.Mode == mode && ms[i].WorkNs == ns {
			return &ms[i]
		}
	}
	return nil
}

// reasonOf shortens an unsupported configuration's error to its cause.
func reasonOf(err error) string {
	s := err.Error()
	if i := strings.Index(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// WorkCurve measures a system call that spends a given time in the kernel,
// minimal flavour without global pages, in every mode, and prints the
// overhead of isolation against the call's length, a row per length as it
// goes: the reference figures have +150% for a null call and about 6% for
// a 2 µs one.
func WorkCurve(r *Reporter, p SyscallParams, clk Clock) []Measurement {
	r.Printf("")
	r.Printf("system call spending a given time in the kernel (minimal flavour, no global pages), ns per call: %s;", repeats(p.R, p.WorkN, p.Warmup))
	r.Printf("0 ns is the work call with nothing to do (two RDTSCs), not the null call; %s", clk.header())
	rows := workRows(r, p, clk, func(mode pti.Mode, ns int64, cycles uint64) *Measurement {
		m := Measure(pti.Config{Mode: mode, Flavour: pti.Minimal}, pti.SysWork, cycles, p.WorkN, p.R, p.Warmup)
		m.Bench, m.WorkNs = "work", ns
		return &m
	}, func(m *Measurement, ratio float64) { r.measurement(*m, clk, ratio) })
	ms := make([]Measurement, len(rows))
	for i, m := range rows {
		ms[i] = *m
	}
	r.Printf("reference (docs/references.md: Linux threads): a null call pays +%.0f%% under PTI, a 2 µs call about %d%%",
		100*(RefNullOnNs/RefNullOffNs-1), RefWork2usPctPTI)
	return ms
}

// lseekRow prints a row of an lseek table: head, then cycles and ns per
// call, operations per second, the ratio to off and, for a row with
// global pages, the gain over nonGlobal's row (nil: none).
func (r *Reporter) lseekRow(head string, m, nonGlobal workPoint, clk Clock, ratio float64) {
	s, unsup, failure := m.result()
	switch {
	case unsup != nil:
		r.Printf("%s unsupported: %s", head, reasonOf(unsup))
	case failure != nil:
		r.Printf("%s FAILED: %v", head, failure)
	default:
		gain := "-"
		if nonGlobal != nil && nonGlobal.ok() {
			ng, _, _ := nonGlobal.result()
			gain = fmt.Sprintf("%+.2f%%", 100*(ng.Mean/s.Mean-1))
		}
		ns := clk.Ns(s.Mean)
		r.Printf("%s %12.1f %7s %10.1f %14.0f %7.2f %14s", head, s.Mean, spread(s), ns, 1e9/ns, ratio, gain)
	}
}

// workPoint is a measurement of a work-curve point, 64-bit or 32-bit.
type workPoint interface {
	ok() bool
	result() (s Stats, unsup, failure error)
}

func (m *Measurement) result() (Stats, error, error)   { return m.Stats, m.Unsup, m.Failure }
func (m *Measurement32) result() (Stats, error, error) { return m.Stats, m.Unsup, m.Failure }

// workRows prints the work curve's table: for each point of p.WorkNs a
// row of ns per call under each of p.Modes, measured by measure, and the
// overhead of each mode against off; record writes a measurement's PTILAB
// line with its ratio to off. It returns the measurements, modes
// innermost.
func workRows[M workPoint](r *Reporter, p SyscallParams, clk Clock, measure func(mode pti.Mode, ns int64, cycles uint64) M, record func(M, float64)) []M {
	hdr := fmt.Sprintf("%-10s", "work (ns)")
	for _, mode := range p.Modes {
		hdr += fmt.Sprintf(" %12s", mode)
	}
	for _, mode := range p.Modes[1:] {
		hdr += fmt.Sprintf(" %14s", mode.String()+" vs off")
	}
	r.Printf("%s", hdr)
	var ms []M
	for _, ns := range p.WorkNs {
		cycles := uint64(float64(ns) * float64(clk.Hz) / 1e9)
		row := make([]M, len(p.Modes))
		for i, mode := range p.Modes {
			row[i] = measure(mode, ns, cycles)
		}
		line := fmt.Sprintf("%-10d", ns)
		for _, m := range row {
			s, unsup, failure := m.result()
			switch {
			case errors.Is(unsup, i386pae.ErrNotInPAE):
				line += fmt.Sprintf(" %12s", "not in PAE")
			case unsup != nil:
				line += fmt.Sprintf(" %12s", "unsupported")
			case failure != nil:
				line += fmt.Sprintf(" %12s", "FAILED")
			default:
				line += fmt.Sprintf(" %12.1f", clk.Ns(s.Mean))
			}
		}
		base := row[0] // modes start with off
		bs, _, _ := base.result()
		ratio := func(m M) float64 {
			if s, _, _ := m.result(); m.ok() && base.ok() {
				return s.Mean / bs.Mean
			}
			return 0
		}
		for _, m := range row[1:] {
			if q := ratio(m); q > 0 {
				line += fmt.Sprintf(" %+13.1f%%", 100*(q-1))
			} else {
				line += fmt.Sprintf(" %14s", "-")
			}
		}
		r.Printf("%s", line)
		for _, m := range row {
			record(m, ratio(m))
		}
		ms = append(ms, row...)
	}
	return ms
}

// Probe results: what a ring-3 read of an address did.
type ProbeResult struct {
	Mode    pti.Mode
	Target  string
	Address uint64
	Unsup   error // the CPU cannot run the mode
	Failure error // the run could not be made
	Faulted bool
	Result  pti.Result
}

// Present reports whether the fault was a protection violation (the page
// was present: P=1 in the page-fault error code) rather than a missing
// mapping.
func (p ProbeResult) Present() bool { return p.Result.ErrorCode&amd64.PF_P != 0 }

// ProbeTarget is an address the isolation probe reads from ring 3.
type ProbeTarget struct {
	Name    string
	Address uint64
}

// IsolationProbe reads each target from ring 3 under each mode and prints
// what happened: under off a kernel address faults as a protection
// violation (present, supervisor-only), under isolation as not present;
// the entry area is present and supervisor-only in every mode; the task's
// own page reads.
func IsolationProbe(r *Reporter, modes []pti.Mode, targets []ProbeTarget) []ProbeResult {
	var out []ProbeResult
	for _, t := range targets {
		for _, mode := range modes {
			c := pti.Config{Mode: mode}
			pr := ProbeResult{Mode: mode, Target: t.Name, Address: t.Address}
			if err := pti.Supported(c); err != nil {
				pr.Unsup = err
				out = append(out, pr)
				continue
			}
			res, err := pti.Exec(c, pti.Probe, [6]uint64{t.Address, pti.UserData + 8*1024})
			if err != nil {
				pr.Failure = err
				out = append(out, pr)
				continue
			}
			pr.Result = res
			pr.Faulted = res.Reason == pti.ReasonFault
			out = append(out, pr)
		}
	}
	r.Printf("")
	r.Printf("isolation probe: a ring-3 read of each address (#PF error code: P=1 protection, P=0 not mapped)")
	hdr := fmt.Sprintf("%-14s %-18s", "target", "address")
	for _, m := range modes {
		hdr += fmt.Sprintf(" %-22s", m)
	}
	r.Printf("%s", strings.TrimRight(hdr, " "))
	for _, t := range targets {
		line := fmt.Sprintf("%-14s %#-18x", t.Name, t.Address)
		for _, p := range out {
			if p.Target != t.Name {
				continue
			}
			var cell string
			switch {
			case p.Unsup != nil:
				cell = "unsupported"
			case p.Failure != nil:
				cell = "FAILED"
			case !p.Faulted:
				cell = "read"
			case p.Result.Vector == amd64.VectorPF:
				cell = fmt.Sprintf("#PF P=%d (error %#x)", p.Result.ErrorCode&1, p.Result.ErrorCode)
			default:
				cell = amd64.VectorName(p.Result.Vector)
			}
			line += fmt.Sprintf(" %-22s", cell)
			f := map[string]any{"mode": p.Mode.String(), "target": p.Target, "address": fmt.Sprintf("%#x", p.Address)}
			if p.Unsup != nil {
				f["reason"] = p.Mode.String() + ": " + reasonOf(p.Unsup)
				r.Record("unsupported", f)
				continue
			}
			if p.Failure != nil {
				f["error"] = p.Failure.Error()
				r.Error("probe "+p.Target+" "+p.Mode.String(), f)
				continue
			}
			f["faulted"] = p.Faulted
			if p.Faulted {
				f["vector"] = p.Result.Vector
				f["error_code"] = p.Result.ErrorCode
				f["present"] = p.Present()
				f["cr2"] = fmt.Sprintf("%#x", p.Result.CR2)
				f["user"] = p.Result.FromUser()
			}
			r.Record("probe", f)
		}
		r.Printf("%s", strings.TrimRight(line, " "))
	}
	return out
}

// Lseek measures a real system call through the Linux-shaped trampoline:
// lseek(fd, 0, SEEK_SET) on a kernel file object, in every mode, with
// global pages off and on, and prints cycles and ns per call, operations
// per second and what global pages change (the reference: +1.72% ops/s on
// Skylake with PCID under PTI, for will-it-scale's lseek1), a row as each
// configuration finishes.
//
// The file is a kernel object of package tasks, descriptor lseekFD of the
// task's process: each loop runs alone under the tasks kernel
// (execWithFile).
func Lseek(r *Reporter, p SyscallParams, clk Clock) []Measurement {
	r.Printf("")
	r.Printf("lseek(fd, 0, SEEK_SET) on a kernel file, linux flavour: %s; ± as perf; %s", repeats(p.R, p.N, p.Warmup), clk.header())
	r.Printf("%-8s %-6s %12s %7s %10s %14s %7s %14s", "mode", "global", clk.perCall(), "±%", "ns/call", "ops/s", "vs off", "global gain")
	var ms []Measurement
	for _, mode := range p.Modes {
		for _, g := range []bool{false, true} {
			c := pti.Config{Mode: mode, Flavour: pti.Linux, Global: g}
			m := measure(execWithFile, c, tasks.SysLseek, lseekFD, p.N, p.R, p.Warmup)
			m.Bench = "lseek"
			ms = append(ms, m)
			head := fmt.Sprintf("%-8s %-6s", mode, yn(g))
			ratio := 0.0
			if base := find(ms, pti.Config{Mode: pti.Off, Flavour: pti.Linux, Global: g}); base != nil && base.ok() && m.ok() {
				ratio = m.Stats.Mean / base.Stats.Mean
			}
			var nonGlobal workPoint
			if ng := find(ms, pti.Config{Mode: mode, Flavour: pti.Linux}); g && ng != nil {
				nonGlobal = ng
			}
			r.lseekRow(head, &m, nonGlobal, clk, ratio)
			r.measurement(m, clk, ratio)
		}
	}
	r.Printf("reference (docs/references.md): global pages for the entry text under PTI, Skylake with PCID: lseek1 15 783 951 -> 16 054 688 ops/s (+%.2f%%)", RefLseekGlobalPct)
	return ms
}

// lseekFD is the descriptor of lseek's file, and lseekFileSize its size.
const (
	lseekFD       = 3
	lseekFileSize = 1 << 20
)

// execWithFile runs program p of the main process alone under the tasks
// kernel, its descriptor lseekFD open on a kernel file of lseekFileSize
// bytes (as i386pae.Run with Params.File).
func execWithFile(c pti.Config, p pti.Program, args [6]uint64) (pti.Result, error) {
	run, err := tasks.NewRun(c)
	if err != nil {
		return pti.Result{}, err
	}
	proc, err := run.AddProcess(pti.MainProcess(), lseekFD+1)
	if err != nil {
		return pti.Result{}, err
	}
	if _, err := run.AddFile(proc, lseekFD, lseekFileSize); err != nil {
		return pti.Result{}, err
	}
	if _, err := run.AddTask(proc, p, pti.UserStackTop, args); err != nil {
		return pti.Result{}, err
	}
	return run.RunTasks()
}

// RefLseekGlobalPct is the reference gain of global entry pages for
// will-it-scale's lseek1 under PTI on Skylake with PCID.
const RefLseekGlobalPct = 100 * (16054688.0/15783951.0 - 1)
