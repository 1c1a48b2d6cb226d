package bench

import (
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
	Config  i386pae.Config
	Bench   string // "null32"
	N, R    int
	Stats   Stats   // cycles per call, loop overhead subtracted
	Empty   float64 // cycles per iteration of the empty loop
	Unsup   error
	Failure error
}

func (m *Measurement32) ok() bool { return m.Unsup == nil && m.Failure == nil }

// runLoop32 runs the 32-bit timing loop (or the empty loop) for r repeats
// of n iterations under c and returns the r cycle counts.
func runLoop32(c i386pae.Config, empty bool, n, r int, nr, arg uint32) ([]uint64, error) {
	res, err := i386pae.Run(c, i386pae.Syscalls, i386pae.Params{
		N: uint32(n), R: uint32(r), Nr: nr, Arg: arg, Empty: empty, NoRDTSCP: !amd64.Features.RDTSCP,
	})
	if err != nil {
		return nil, err
	}
	if res.Reason != layout.ReasonExit || res.Status != 0 {
		return nil, fmt.Errorf("the 32-bit ring-3 loop ended with %v", res)
	}
	return res.Cycles, nil
}

// Measure32 times 32-bit system call nr with argument arg under c as
// Measure does in 64-bit mode: warm-up repeats, then r repeats of n calls,
// less the empty loop's median cost per iteration.
func Measure32(c i386pae.Config, nr, arg uint32, n, r, warmup int) Measurement32 {
	m := Measurement32{Config: c, N: n, R: r}
	if err := i386pae.Supported(c); err != nil {
		m.Unsup = err
		return m
	}
	if r+warmup > layout.MaxRepeats {
		m.Failure = fmt.Errorf("%d repeats: the 32-bit task holds at most %d", r+warmup, layout.MaxRepeats)
		return m
	}
	empty, err := runLoop32(c, true, n, r+warmup, nr, arg)
	if err != nil {
		m.Failure = err
		return m
	}
	m.Empty = Summarize(PerOp(empty[warmup:], n, 0)).Median
	calls, err := runLoop32(c, false, n, r+warmup, nr, arg)
	if err != nil {
		m.Failure = err
		return m
	}
	m.Stats = Summarize(PerOp(calls[warmup:], n, m.Empty))
	return m
}

// configs32 lists the 32-bit configurations of p: its modes, both entries,
// its global settings (flavour minimal only, for now).
func (p SyscallParams) configs32() []i386pae.Config {
	var cs []i386pae.Config
	for _, m := range p.Modes {
		for _, e := range []i386pae.Entry{i386pae.Sysenter, i386pae.Int80} {
			for _, g := range p.Globals {
				cs = append(cs, i386pae.Config{Mode: m, Entry: e, Global: g})
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
		"flavour": "minimal", "global": m.Config.Global, "N": m.N, "R": m.R, "emulated": clk.Emulated, "icount": clk.Icount,
	}
	if r.notMeasured(m.Bench+" "+m.Config.String(), f, m.Unsup, m.Failure) {
		return
	}
	addStats(f, m.Stats, clk, ratio)
	f["ns_per_call"] = round(clk.Ns(m.Stats.Mean))
	f["empty_loop_cycles"] = round(m.Empty)
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
	r.Printf("%-8s %-8s %-6s %12s %7s %12s %12s %10s %7s", "mode", "entry", "global", clk.perCall(), "±%", "median", "min", "ns/call", "vs off")
	var ms []Measurement32
	for _, c := range p.configs32() {
		m := Measure32(c, layout.SysGetppid, 0, p.N, p.R, p.Warmup)
		m.Bench = "null32"
		ms = append(ms, m)
		ratio := 0.0
		if base := find32(ms, i386pae.Config{Mode: pti.Off, Entry: c.Entry, Global: c.Global}); base != nil && base.ok() && m.ok() {
			ratio = m.Stats.Mean / base.Stats.Mean
		}
		r.syscallRow(fmt.Sprintf("%-8s %-8s %-6s", c.Mode, c.Entry, yn(c.Global)), m.Stats, clk, ratio, m.Unsup, m.Failure)
		r.measurement32(m, clk, ratio)
	}
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
	r.Printf("%-14s %-12s %-22s %-22s", "target", "address", "off", "on")
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
