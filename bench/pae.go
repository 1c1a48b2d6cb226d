package bench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
)

// The 32-bit world (package i386pae): the null system call of a 32-bit PAE
// kernel entered by SYSENTER and by INT 0x80, under PTI off and on; PCID
// rows say "not in PAE".

// Measurement32 is one 32-bit configuration's figure: cycles per call over
// R repeats of N calls.
type Measurement32 struct {
	Config i386pae.Config
	Bench  string // "null32", "work32" or "lseek32"
	WorkNs int64  // for "work32": the time the call spends in the kernel
	N, R   int
	Stats  Stats   // cycles per call, loop overhead subtracted
	Empty  float64 // cycles per iteration of the empty loop
	// Phases are the instrumented trampoline's cycles per call in each
	// phase (layout.Phase*), with Config.Stamps.
	Phases [layout.PhaseCount]float64
	// PhaseCall is the whole call over the same calls as Phases: every
	// repeat, warm-up included, less the empty loop.
	PhaseCall float64
	Unsup     error
	Failure   error
}

func (m *Measurement32) ok() bool { return m.Unsup == nil && m.Failure == nil }

// Call32 is the system call a 32-bit timing loop makes: its number, its
// argument (EBX; ECX and EDX are 0), the file size when the loop needs a
// file at descriptor i386pae.FileFD (0: none, and no tasks kernel), and
// the result it must return.
type Call32 struct {
	Nr, Arg, File, Want uint32
}

// runLoop32 runs the 32-bit timing loop (or the empty loop) for r repeats
// of n iterations under c and returns how it ended, with the r cycle
// counts.
func runLoop32(c i386pae.Config, empty bool, n, r int, nr, arg, file uint32) (i386pae.Result, error) {
	res, err := i386pae.Run(c, i386pae.Syscalls, i386pae.Params{
		N: uint32(n), R: uint32(r), Nr: nr, Arg: arg, Empty: empty, NoRDTSCP: !amd64.Features.RDTSCP, File: file,
	})
	if err != nil {
		return res, err
	}
	if res.Reason != layout.ReasonExit || res.Status != 0 {
		return res, fmt.Errorf("the 32-bit ring-3 loop ended with %v", res)
	}
	return res, nil
}

// Measure32 times the 32-bit system call call under c as Measure does in
// 64-bit mode: warm-up repeats, then r repeats of n calls, less the empty
// loop's median cost per iteration; a run whose last call did not return
// call.Want fails. With c.Stamps it also gives the phases' cycles per
// call, over every call of the run.
func Measure32(c i386pae.Config, call Call32, n, r, warmup int) Measurement32 {
	m := Measurement32{Config: c, N: n, R: r}
	if err := i386pae.Supported(c); err != nil {
		m.Unsup = err
		return m
	}
	if r+warmup > layout.MaxRepeats {
		m.Failure = fmt.Errorf("%d repeats: the 32-bit task holds at most %d", r+warmup, layout.MaxRepeats)
		return m
	}
	empty, err := runLoop32(c, true, n, r+warmup, call.Nr, call.Arg, call.File)
	if err != nil {
		m.Failure = err
		return m
	}
	m.Empty = Summarize(PerOp(empty.Cycles[warmup:], n, 0)).Median
	calls, err := runLoop32(c, false, n, r+warmup, call.Nr, call.Arg, call.File)
	if err != nil {
		m.Failure = err
		return m
	}
	if n > 0 && calls.Value != call.Want {
		m.Failure = fmt.Errorf("system call %d returned %d, want %d", call.Nr, int32(calls.Value), int32(call.Want))
		return m
	}
	m.Stats = Summarize(PerOp(calls.Cycles[warmup:], n, m.Empty))
	if c.Stamps {
		all := float64(n * (r + warmup))
		for i, sum := range calls.Phases {
			m.Phases[i] = float64(sum) / all
		}
		var total uint64
		for _, c := range calls.Cycles {
			total += c
		}
		m.PhaseCall = float64(total)/all - m.Empty
	}
	return m
}

// getppid32 is the null call: getppid returns 1.
var getppid32 = Call32{Nr: layout.SysGetppid, Want: 1}

// configs32 lists the 32-bit configurations of p: its modes, both
// entries, its flavours (linux with REP MOVSL), its global settings.
func (p SyscallParams) configs32() []i386pae.Config {
	var cs []i386pae.Config
	for _, m := range p.Modes {
		for _, e := range []i386pae.Entry{i386pae.Sysenter, i386pae.Int80} {
			for _, f := range p.Flavours {
				for _, g := range p.Globals {
					cs = append(cs, i386pae.Config{Mode: m, Entry: e, Flavour: f, Global: g})
				}
			}
		}
	}
	return cs
}

func find32(ms []Measurement32, c i386pae.Config) *Measurement32 {
	for i := range ms {
		if ms[i].Config == c {
			return &ms[i]
		}
	}
	return nil
}

// measurement32 writes m's PTILAB line.
func (r *Reporter) measurement32(m Measurement32, clk Clock, ratio float64) {
	f := map[string]any{
		"bench": m.Bench, "width": 32, "mode": m.Config.Mode.String(), "entry": m.Config.Entry.String(),
		"flavour": m.Config.Flavour.String(), "global": m.Config.Global, "N": m.N, "R": m.R, "emulated": clk.Emulated, "icount": clk.Icount,
	}
	if m.Config.Flavour == pti.Linux {
		f["copy"] = m.Config.Copy.String()
	}
	if m.Bench == "work32" {
		f["work_ns"] = m.WorkNs
	}
	if r.notMeasured(m.Bench+" "+m.Config.String(), f, m.Unsup, m.Failure) {
		return
	}
	addStats(f, m.Stats, clk, ratio)
	f["ns_per_call"] = round(clk.Ns(m.Stats.Mean))
	f["empty_loop_cycles"] = round(m.Empty)
	if m.Config.Stamps {
		f["stamps"] = true
		phases := map[string]any{}
		for i, c := range m.Phases {
			phases[phaseNames[i]] = round(c)
		}
		f["phases"] = phases
		f["phase_call"] = round(m.PhaseCall)
	}
	r.Record("syscall", f)
}

// NullSyscall32 measures the null system call (getppid, i386 number 64)
// of the 32-bit PAE kernel in every configuration of p's modes and global
// settings, by SYSENTER and by INT 0x80, and prints the table as it goes:
// cycles and ns per call, the spread, and the ratio to PTI off with the
// same entry and global pages.
func NullSyscall32(r *Reporter, p SyscallParams, clk Clock) []Measurement32 {
	r.Printf("")
	r.Printf("32-bit PAE kernel: null system call (getppid), per call: %s, empty-loop overhead subtracted;", repeats(p.R, p.N, p.Warmup))
	r.Printf("%s; ± as perf stat --repeat (stddev of the mean); %s", clk.unitNote(), clk.header())
	r.Printf("%-8s %-8s %-8s %-6s %12s %7s %12s %12s %10s %7s", "mode", "entry", "flavour", "global", clk.perCall(), "±%", "median", "min", "ns/call", "vs off")
	var ms []Measurement32
	for _, c := range p.configs32() {
		m := Measure32(c, getppid32, p.N, p.R, p.Warmup)
		m.Bench = "null32"
		ms = append(ms, m)
		ratio := 0.0
		off := c
		off.Mode = pti.Off
		if base := find32(ms, off); base != nil && base.ok() && m.ok() {
			ratio = m.Stats.Mean / base.Stats.Mean
		}
		r.syscallRow(fmt.Sprintf("%-8s %-8s %-8s %-6s", c.Mode, c.Entry, c.Flavour, yn(c.Global)), m.Stats, clk, ratio, m.Unsup, m.Failure)
		r.measurement32(m, clk, ratio)
	}
	return ms
}

// WorkCurve32 is WorkCurve in the 32-bit world: the work call (i386 number
// 127, ptilab's) by SYSENTER, minimal trampoline, no global pages, under
// p's modes (on+pcid: not in PAE).
func WorkCurve32(r *Reporter, p SyscallParams, clk Clock) []Measurement32 {
	r.Printf("")
	r.Printf("32-bit PAE kernel: system call spending a given time in the kernel (SYSENTER, minimal, no global pages), ns per call: %s;", repeats(p.R, p.WorkN, p.Warmup))
	r.Printf("0 ns is the work call with nothing to do (two RDTSCs), not the null call; %s", clk.header())
	rows := workRows(r, p, clk, func(mode pti.Mode, ns int64, cycles uint64) *Measurement32 {
		m := Measure32(i386pae.Config{Mode: mode, Entry: i386pae.Sysenter}, Call32{Nr: layout.SysWork, Arg: uint32(min(cycles, 1<<32-1))}, p.WorkN, p.R, p.Warmup)
		m.Bench, m.WorkNs = "work32", ns
		return &m
	}, func(m *Measurement32, ratio float64) { r.measurement32(*m, clk, ratio) })
	ms := make([]Measurement32, len(rows))
	for i, m := range rows {
		ms[i] = *m
	}
	return ms
}

// Lseek32 is Lseek in the 32-bit world: lseek(fd, 0, SEEK_SET) on a kernel
// file of the 32-bit tasks kernel (in Go compiled for 386), through the
// linux trampolines (SYSENTER with Linux 4.19's entry, and INT 0x80), in
// p's modes (on+pcid: not in PAE), global pages off and on.
func Lseek32(r *Reporter, p SyscallParams, clk Clock) []Measurement32 {
	r.Printf("")
	r.Printf("32-bit PAE kernel: lseek(fd, 0, SEEK_SET) on a kernel file, linux trampolines: %s; ± as perf; %s", repeats(p.R, p.N, p.Warmup), clk.header())
	r.Printf("%-8s %-8s %-6s %12s %7s %10s %14s %7s %14s", "mode", "entry", "global", clk.perCall(), "±%", "ns/call", "ops/s", "vs off", "global gain")
	var ms []Measurement32
	for _, entry := range []i386pae.Entry{i386pae.Sysenter, i386pae.Int80} {
		for _, mode := range p.Modes {
			for _, g := range []bool{false, true} {
				c := i386pae.Config{Mode: mode, Entry: entry, Flavour: pti.Linux, Global: g}
				if entry == i386pae.Sysenter {
					c.Copy = i386pae.Direct
				}
				m := Measure32(c, Call32{Nr: layout.SysLseek, Arg: i386pae.FileFD, File: 1 << 20}, p.N, p.R, p.Warmup)
				m.Bench = "lseek32"
				ms = append(ms, m)
				head := fmt.Sprintf("%-8s %-8s %-6s", mode, entry, yn(g))
				off := c
				off.Mode = pti.Off
				ratio := 0.0
				if base := find32(ms, off); base != nil && base.ok() && m.ok() {
					ratio = m.Stats.Mean / base.Stats.Mean
				}
				var nonGlobal workPoint
				ngc := c
				ngc.Global = false
				if ng := find32(ms, ngc); g && ng != nil {
					nonGlobal = ng
				}
				r.lseekRow(head, &m, nonGlobal, clk, ratio)
				r.measurement32(m, clk, ratio)
			}
		}
	}
	return ms
}

var phaseNames = [layout.PhaseCount]string{
	layout.PhaseCR3In: "cr3_in", layout.PhaseCopyIn: "copy_in", layout.PhaseDispatch: "dispatch",
	layout.PhaseCopyOut: "copy_out", layout.PhaseCR3Out: "cr3_out",
}

// CopyMethods32 measures the linux SYSENTER trampoline with each way of
// copying pt_regs (REP MOVSL, REP MOVSB, the exit copy trimmed to 8 bytes,
// and Linux 4.19's shape: no copy in, the trimmed exit), under p's modes, global pages off, and prints the table: the
// Linux thread found that REP MOVSL for REP MOVSB and the trimmed exit
// copy barely helped, the CR3 switch dominating. Then the instrumented
// trampolines' phase breakdown: cycles per call in each phase (the CR3
// switch in, the copy in, the dispatch, the copy out, the CR3 switch out)
// and their shares of the whole call, so the "25% of cycles in
// entry_SYSENTER_32 with PTI" finding can be read off: the entry path is
// everything but the dispatch.
//
// A configuration measured already in have (the null32 table's linux
// REP MOVSL rows) is reused, not measured and recorded again.
func CopyMethods32(r *Reporter, p SyscallParams, clk Clock, have []Measurement32) []Measurement32 {
	var ms []Measurement32
	r.Printf("")
	r.Printf("32-bit PAE kernel, linux SYSENTER trampoline: pt_regs copy methods, per null call: %s;", repeats(p.R, p.N, p.Warmup))
	r.Printf("%s; global pages off", clk.unitNote())
	r.Printf("%-8s %-8s %12s %7s %12s %12s %10s %7s", "mode", "copy", clk.perCall(), "±%", "median", "min", "ns/call", "vs off")
	copies := []i386pae.Copy{i386pae.Movsl, i386pae.Movsb, i386pae.Trim, i386pae.Direct}
	for _, stamps := range []bool{false, true} {
		if stamps {
			r.Printf("")
			r.Printf("phase breakdown (instrumented trampoline: RDTSC at each boundary, its own cost inside the phases), %s per call and %% of the call", clk.unit())
			r.Printf("%-8s %-8s %16s %16s %16s %16s %16s %16s %10s", "mode", "copy", "cr3 in", "copy in", "dispatch", "copy out", "cr3 out", "rest", "call")
		}
		for _, mode := range p.Modes {
			if mode == pti.OnPCID {
				continue // not in PAE: the table above says so
			}
			for _, cp := range copies {
				c := i386pae.Config{Mode: mode, Entry: i386pae.Sysenter, Flavour: pti.Linux, Copy: cp, Stamps: stamps}
				var m Measurement32
				old := find32(have, c)
				if old != nil {
					m = *old
				} else {
					m = Measure32(c, getppid32, p.N, p.R, p.Warmup)
					m.Bench = "null32"
				}
				ms = append(ms, m)
				off := c
				off.Mode = pti.Off
				ratio := 0.0
				if base := find32(ms, off); base != nil && base.ok() && m.ok() {
					ratio = m.Stats.Mean / base.Stats.Mean
				}
				head := fmt.Sprintf("%-8s %-8s", mode, cp)
				if !stamps || !m.ok() {
					r.syscallRow(head, m.Stats, clk, ratio, m.Unsup, m.Failure)
				} else {
					line := head
					call := m.PhaseCall
					rest := call
					for _, ph := range m.Phases {
						line += fmt.Sprintf(" %8.1f %5.1f%%", ph, 100*ph/call)
						rest -= ph
					}
					line += fmt.Sprintf(" %8.1f %5.1f%% %10.1f", rest, 100*rest/call, call)
					r.Printf("%s", line)
				}
				if old == nil {
					r.measurement32(m, clk, ratio)
				}
			}
		}
	}
	r.Printf("(phases over every call of the run, warm-up included; rest: SYSENTER and SYSEXIT, the register saves and restores, the vsyscall routine; the entry path is the call less the dispatch)")
	return ms
}

// Probe32 is the 32-bit world's isolation probe and checks: a ring-3 read
// of the kernel stack (kernel only: present and supervisor-only without
// isolation, not mapped with it), of the entry area (present and
// supervisor-only in both modes) and of the task's own page (read), under
// off and on; then a deliberate page fault in the 32-bit kernel, which
// must come back as a record while the run goes on; then rounds trips
// long mode -> 32-bit -> long mode, which must all come back. It returns
// false when a check failed.
func Probe32(r *Reporter, roundTrips int) bool {
	ok := true
	targets := []struct {
		name    string
		addr    uint32
		present [2]bool // the P bit expected under off and on
		reads   bool
	}{
		{"kernel stack", layout.KernelStack, [2]bool{true, false}, false},
		{"entry area", layout.CPU, [2]bool{true, true}, false},
		{"own page", layout.UserData + 2048, [2]bool{}, true},
	}
	r.Printf("")
	r.Printf("32-bit isolation probe: a ring-3 read of each address (#PF error code: P=1 protection, P=0 not mapped)")
	r.Printf("%-14s %-12s %-22s %s", "target", "address", "off", "on")
	for _, t := range targets {
		line := fmt.Sprintf("%-14s %#-12x", t.name, t.addr)
		for i, mode := range []pti.Mode{pti.Off, pti.On} {
			f := map[string]any{"width": 32, "mode": mode.String(), "target": t.name, "address": fmt.Sprintf("%#x", t.addr)}
			res, err := i386pae.Run(i386pae.Config{Mode: mode, Entry: i386pae.Int80}, i386pae.Probe, i386pae.Params{Addr: t.addr})
			if err != nil {
				f["error"] = err.Error()
				r.Error("probe32 "+t.name+" "+mode.String(), f)
				line += fmt.Sprintf(" %-22s", "FAILED")
				ok = false
				continue
			}
			faulted := res.Reason == layout.ReasonFault
			present := res.ErrorCode&amd64.PF_P != 0
			cell := "read"
			if faulted {
				cell = fmt.Sprintf("#PF P=%d (error %#x)", res.ErrorCode&1, res.ErrorCode)
				if res.Vector != amd64.VectorPF {
					cell = amd64.VectorName(uint64(res.Vector))
				}
				f["vector"], f["error_code"], f["present"] = res.Vector, res.ErrorCode, present
				f["cr2"], f["user"] = fmt.Sprintf("%#x", res.CR2), res.FromUser()
			}
			f["faulted"] = faulted
			want := t.reads && !faulted ||
				!t.reads && faulted && res.Vector == amd64.VectorPF && res.FromUser() && res.CR2 == t.addr && present == t.present[i]
			f["as_expected"] = want
			if !want {
				ok = false
				cell += " UNEXPECTED"
			}
			r.Record("probe", f)
			line += fmt.Sprintf(" %-22s", cell)
		}
		r.Printf("%s", strings.TrimRight(line, " "))
	}

	r.Check("kernel32 probe", ok, "the ring-3 reads faulted (P bit as the mode maps the page) or read as expected", nil)

	// A page fault in the 32-bit kernel (a read of address 0 in the
	// dispatcher): a record, and the run goes on.
	res, err := i386pae.Run(i386pae.Config{Mode: pti.On, Entry: i386pae.Int80}, i386pae.Syscalls,
		i386pae.Params{N: 1, R: 1, Nr: layout.SysKernelFault, NoRDTSCP: !amd64.Features.RDTSCP})
	good := err == nil && res.Reason == layout.ReasonFault && res.Vector == amd64.VectorPF && !res.FromUser() && res.CR2 == 0
	detail := fmt.Sprintf("%v", res)
	if err != nil {
		detail = err.Error()
	}
	r.Check("kernel32 fault", good, "a #PF in the 32-bit kernel came back as: "+detail,
		map[string]any{"vector": res.Vector, "error_code": res.ErrorCode, "eip": fmt.Sprintf("%#x", res.EIP), "cr2": fmt.Sprintf("%#x", res.CR2)})
	ok = ok && good

	// A double fault in the 32-bit kernel (a #PF whose frame cannot be
	// pushed on an unmapped stack): the #DF task's record, and the run
	// goes on (with CR0.TS clear, or the Go side's next SSE instruction
	// would fault).
	res, err = i386pae.Run(i386pae.Config{Mode: pti.On, Entry: i386pae.Int80}, i386pae.Syscalls,
		i386pae.Params{N: 1, R: 1, Nr: layout.SysKernelDoubleFault, NoRDTSCP: !amd64.Features.RDTSCP})
	good = err == nil && res.Reason == layout.ReasonFault && res.Vector == amd64.VectorDF && !res.FromUser() && res.ESP == 0x1000
	detail = fmt.Sprintf("%v, ESP %#x", res, res.ESP)
	if err != nil {
		detail = err.Error()
	}
	r.Check("kernel32 double fault", good, "a #DF in the 32-bit kernel came back through its task gate as: "+detail,
		map[string]any{"vector": res.Vector, "eip": fmt.Sprintf("%#x", res.EIP), "cs": res.CS, "esp": fmt.Sprintf("%#x", res.ESP)})
	ok = ok && good

	// Round trips: a task that exits at once, roundTrips times, alternating
	// the modes.
	var failed []string
	for i := 0; i < roundTrips; i++ {
		c := i386pae.Config{Mode: pti.Mode(i % 2), Entry: i386pae.Sysenter}
		res, err := i386pae.Run(c, i386pae.Syscalls, i386pae.Params{N: 0, R: 1, NoRDTSCP: !amd64.Features.RDTSCP})
		if err != nil || res.Reason != layout.ReasonExit || res.Status != 0 {
			failed = append(failed, fmt.Sprintf("trip %d: %v %v", i, res, err))
			break
		}
	}
	good = len(failed) == 0
	r.Check("kernel32 round trips", good, fmt.Sprintf("%d round trips long mode -> 32-bit PAE (off and on) -> long mode %s", roundTrips, map[bool]string{true: "came back", false: "failed: " + strings.Join(failed, "; ")}[good]),
		map[string]any{"round_trips": roundTrips})
	return ok && good
}

// SeedNull prints the null system call in the shape of the reference
// thread's table: rows 32-bit PTI off and on (SYSENTER), 64-bit off, on
// and on+pcid (SYSCALL), columns the minimal and linux flavours, global
// pages off; each cell cycles per call ± (perf style) and the ratio to the
// same width's PTI-off row. A missing or unsupported configuration says
// so. It records one "seed" record per cell.
func SeedNull(r *Reporter, ms []Measurement, ms32 []Measurement32, clk Clock) {
	r.Printf("")
	r.Printf("null system call, 32-bit PAE (SYSENTER) vs 64-bit (SYSCALL), global pages off: %s per call ± (perf style), ratio to the same width's off", clk.unit())
	r.Printf("%-18s | %-28s | %s", "kernel", "minimal", "linux")
	type cell struct {
		s     Stats
		ok    bool
		unsup error
	}
	get32 := func(mode pti.Mode, f pti.Flavour) cell {
		if mode == pti.OnPCID {
			return cell{unsup: i386pae.Supported(i386pae.Config{Mode: mode})}
		}
		m := find32(ms32, i386pae.Config{Mode: mode, Entry: i386pae.Sysenter, Flavour: f})
		if m == nil {
			return cell{}
		}
		return cell{s: m.Stats, ok: m.ok(), unsup: m.Unsup}
	}
	get64 := func(mode pti.Mode, f pti.Flavour) cell {
		m := find(ms, pti.Config{Mode: mode, Flavour: f})
		if m == nil {
			return cell{}
		}
		return cell{s: m.Stats, ok: m.ok(), unsup: m.Unsup}
	}
	for _, width := range []int{32, 64} {
		get := get32
		if width == 64 {
			get = get64
		}
		for _, mode := range []pti.Mode{pti.Off, pti.On, pti.OnPCID} {
			line := fmt.Sprintf("%-18s", fmt.Sprintf("%d-bit PTI %v", width, mode))
			for _, f := range []pti.Flavour{pti.Minimal, pti.Linux} {
				c, base := get(mode, f), get(pti.Off, f)
				rec := map[string]any{"bench": "null", "width": width, "mode": mode.String(), "flavour": f.String(), "global": false}
				var text string
				switch {
				case c.unsup != nil:
					text = "unsupported by this CPU"
					if errors.Is(c.unsup, i386pae.ErrNotInPAE) {
						text = "not in PAE"
					}
					rec["reason"] = c.unsup.Error()
					r.Record("seed-unsupported", rec)
				case !c.ok:
					text = "not measured" // not in the plan, or failed (reported above)
				default:
					ratio := 0.0
					if base.ok {
						ratio = c.s.Mean / base.s.Mean
					}
					text = fmt.Sprintf("%9.1f ±%5.1f%% %7.2fx", c.s.Mean, c.s.PerfPct(), ratio)
					addStats(rec, c.s, clk, ratio)
					r.Record("seed", rec)
				}
				line += fmt.Sprintf(" | %-28s", text)
			}
			r.Printf("%s", strings.TrimRight(line, " "))
		}
	}
}
