// Package linuxrun is `ptilab linux`: ptilab's benchmarks run as an
// ordinary program on the running Linux kernel (no root needed), with the
// image's plan keys, statistics and records, so that the kernel's own
// figures stand beside the bare-metal ones in `ptilab report`, `compare`
// and `plot`, and beside perf's own benchmarks in the same run.
//
// The benchmarks: null (getppid by SYSCALL, and getpid as libMicro's),
// lseek (will-it-scale's lseek1), the ping-pong and perf's
// sched-messaging, processes and threads; and from the 386 build of
// cmd/ptilab-linux32, getppid through the 64-bit kernel's compat entries
// (kernel=64-compat). Every record's mode is the kernel's isolation as it
// runs (a plan cannot change it), its flavour linux, its entry syscall,
// its global the kernel's mapping of its entry text (kernel.go).
package linuxrun

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// Options are a run's inputs besides its plan.
type Options struct {
	// Commit is the ptilab commit of the running program (the machine
	// record's ptilab_commit).
	Commit string
	// Compat32 is the 386 program's path; empty: ptilab-linux386 beside
	// the running program.
	Compat32 string
	// Perf is the perf program; empty: "perf" on the PATH.
	Perf string
	// Sys is the root of /proc and /sys (tests give their own); nil: /.
	Sys fs.FS
}

// runner is a run in progress.
type runner struct {
	// ctx ends the run early (an interrupt): the benchmark running stops
	// between repeats, its worker processes killed.
	ctx    context.Context
	opts   Options
	plan   Plan
	rep    *bench.Reporter
	clk    clock
	cpu    cpuInfo
	kernel contract.Linux
	mode   experiment.Mode
	// compatProg is the 386 program the compat rows run, "" where they
	// cannot (the linux record's compat32 says why).
	compatProg string
}

// Run runs plan p, writing the console lines and the records to w (the
// image's format: a human line, `PTILAB {json}` records, a last
// PTILAB-END line), and returns the run's exit status (contract.StatusOK
// when every benchmark ran).
func Run(ctx context.Context, w io.Writer, p Plan, opts Options) int {
	start := time.Now()
	if opts.Sys == nil {
		opts.Sys = os.DirFS("/")
	}
	x := &runner{ctx: ctx, opts: opts, plan: p, rep: bench.NewReporter(w)}
	if err := x.setup(); err != nil {
		x.fail(contract.Error{Name: "linux setup", Error: err.Error()})
		return x.rep.End(contract.End{ElapsedMs: time.Since(start).Milliseconds()})
	}
	if why := x.noPerf(); p.Perf == "on" && why != "" { // asked for: fail before the benchmarks, not after
		x.fail(contract.Error{Name: "perf bench", Error: why})
		return x.rep.End(contract.End{ElapsedMs: time.Since(start).Milliseconds()})
	}
	for _, l := range p.Ignored {
		x.rep.Printf("ptilab linux: %s", l)
	}
	if p.CPU >= 0 {
		x.rep.Printf("ptilab linux: the timed loops, the workers and perf bench run on CPU %d (plan key cpu)", p.CPU)
	}
	x.rep.Record(contract.Timing{LFENCE: lfenceOrders(x.cpu), TSCHz: x.clk.Hz, TSCSource: x.clk.Source, TSCInvariant: x.clk.tsc,
		RDTSCP: x.cpu.has("rdtscp"), Modes: []string{x.mode.String()}, Entries: []string{experiment.Syscall.String()}})
	runs := map[string]func() error{"null": x.null, "lseek": x.lseek, "pingpong": x.pingPong, "messaging": x.messaging}
	for _, name := range p.Benchmarks {
		if ctx.Err() != nil {
			x.fail(contract.Error{Name: name, Error: ctx.Err().Error()})
			break
		}
		run, ok := runs[name]
		if !ok {
			x.rep.Printf("ptilab linux: benchmark %s: the bare-metal image's alone, left out", name)
			continue
		}
		if err := run(); err != nil {
			x.fail(contract.Error{Name: name, Error: err.Error(), N: p.N, R: p.R})
		}
	}
	if x.perfWanted() {
		x.perfBeside(ctx)
	}
	return x.rep.End(contract.End{ElapsedMs: time.Since(start).Milliseconds()})
}

// setup reads the machine and the kernel and writes their records.
func (x *runner) setup() error {
	var err error
	if x.cpu, err = readCPUInfo(x.opts.Sys); err != nil {
		return err
	}
	if err := checkCPU(x.plan.CPU); err != nil {
		return err
	}
	amd64.DetectFeatures() // CPUID only: the hypervisor's vendor, the PMU's version
	hv := hypervisor()
	x.kernel, err = x.kernelState(hv)
	if err != nil {
		return err
	}
	x.clk = newClock(x.cpu)
	m := x.machine(hv)
	x.rep.Printf("ptilab linux: %s %s, microcode %s; Linux %s; PTI %s (%s); global %s (%s); TSC %.3f GHz (%s)",
		m.Vendor, m.Brand, x.clk.Microcode, x.kernel.Release, x.kernel.PTI, x.kernel.PTIWhy, experiment.OnOff(x.kernel.Global),
		x.kernel.GlobalWhy, float64(x.clk.Hz)/1e9, x.clk.Source)
	if hv != "" {
		x.rep.Printf("ptilab linux: under the hypervisor %s: the figures are the guest's, not the bare machine's", hv)
	}
	x.rep.Record(m)
	return nil
}

// kernelState reads the kernel's record and writes it with the kernel's
// vulnerability table.
func (x *runner) kernelState(hv string) (contract.Linux, error) {
	k, v := kernelRecord(x.opts.Sys, x.cpu, hv)
	var err error
	if x.mode, err = experiment.ParseMode(k.PTI); err != nil {
		return k, err
	}
	k.Pinned = "none"
	if x.plan.CPU >= 0 {
		k.Pinned = fmt.Sprintf("cpu %d", x.plan.CPU)
	}
	probe := openCounters(x.cpu, x.plan)
	k.Counters = probe.Scope
	probe.close()
	if out, err := exec.Command(x.perfProgram(), "version").Output(); err == nil {
		k.Perf = strings.TrimSpace(string(out))
	}
	x.compatProg, k.Compat32 = x.compat32()
	x.rep.Record(k)
	x.rep.Record(v)
	return k, nil
}

// machine is the machine record of a Linux run: the CPU as /proc/cpuinfo
// and CPUID give it, board "linux".
func (x *runner) machine(hv string) contract.Machine {
	c := x.cpu
	m := contract.Machine{PtilabCommit: x.opts.Commit, Vendor: c.Vendor, Brand: c.Brand, Family: c.Family, Model: c.Model,
		Stepping: c.Stepping, Microcode: c.Microcode, TSCHz: x.clk.Hz, TSCSource: x.clk.Source, TSCInvariant: x.clk.tsc,
		PCID: c.has("pcid"), INVPCID: c.has("invpcid"), PGE: c.has("pge"), SMEP: c.has("smep"), SMAP: c.has("smap"),
		RDRAND: c.has("rdrand"), RDSEED: c.has("rdseed"), RDTSCP: c.has("rdtscp"), NX: c.has("nx"), FRED: c.has("fred"),
		LASS: c.has("lass"), Board: "linux", Hypervisor: hv, Random: "getrandom"}
	if x.clk.tsc {
		m.TSCMeasuredHz, m.TSCMeasuredBy = x.clk.Hz, "clock_monotonic_raw"
	}
	m.PerfMonVersion = amd64.Features.PerfMonVersion
	var kib uint64
	if _, err := fmt.Sscanf(readLine(x.opts.Sys, "proc/meminfo"), "MemTotal: %d kB", &kib); err == nil {
		m.RAMBytes = kib << 10
	}
	if c.Microcode != nil {
		x.clk.Microcode = fmt.Sprintf("%#x", *c.Microcode)
	}
	return m
}

// hypervisor names the hypervisor from CPUID leaf 40000000H's vendor
// (amd64.Features, where CPUID.01H:ECX[31] is set), "" on bare metal.
func hypervisor() string {
	f := &amd64.Features
	if !f.Hypervisor {
		return ""
	}
	if v := f.HypervisorVendor(); v != "" {
		return v
	}
	return "unknown (CPUID 40000000H gives no vendor)"
}

// lfenceOrders says whether LFENCE orders RDTSC on this CPU: Intel's
// always does; AMD's (and Hygon's) from family 10H on, 11H aside, where
// Linux makes it dispatch-serializing (DE_CFG[1]) and sets
// X86_FEATURE_LFENCE_RDTSC, which /proc/cpuinfo does not show
// (arch/x86/kernel/cpu/amd.c, init_amd).
func lfenceOrders(c cpuInfo) string {
	switch {
	case c.Vendor == "GenuineIntel":
		return "yes (Intel)"
	case (c.Vendor == "AuthenticAMD" || c.Vendor == "HygonGenuine") && c.Family >= 0x10 && c.Family != 0x11 && c.has("sse2"):
		return fmt.Sprintf("yes (%s family %xh: the kernel makes it serializing, DE_CFG[1])", c.Vendor, c.Family)
	}
	return "not known (" + c.Vendor + ")"
}

// subject is a record's subject: bench under the kernel's mode, entry
// syscall, flavour linux and its global pages; a compat entry (int80,
// sysenter) makes it a 32-bit program's row on the 64-bit kernel
// (kernel=64-compat).
func (x *runner) subject(name, compatEntry string) contract.Subject {
	s := contract.Subject{Bench: name, Width: 64, Mode: x.mode.String(), Entry: experiment.Syscall.String(),
		Flavour: experiment.Linux.String(), Global: x.kernel.Global}
	if compatEntry != "" {
		s.Width, s.Entry, s.Kernel, s.Copy = 32, compatEntry, "64-compat", experiment.Direct.String()
	}
	return x.clk.Mark(s)
}

// fail reports a failure: a line a reader sees, and the error record
// that the PTILAB-END line counts.
func (x *runner) fail(e contract.Error) {
	x.rep.Printf("ptilab linux: %s FAILED: %s", e.Name, e.Error)
	x.rep.Fail(e)
}

// record writes a record.
func (x *runner) record(r contract.Record) { x.rep.Record(r) }

// onPinned runs f on a locked thread pinned as the plan says: a program
// it starts inherits the pinning (perf bench and its children, as
// ptilab's workers).
func (x *runner) onPinned(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := x.pin()
	if err != nil {
		return err
	}
	defer restore()
	return f()
}

// pin pins the calling (locked) thread to the plan's CPU, if any, and
// returns what gives the thread its affinity back, to run before it is
// unlocked: a pinned thread back in Go's pool would pin whatever runs on
// it next (perf bench's children, the garbage collector).
func (x *runner) pin() (restore func(), err error) {
	if x.plan.CPU < 0 {
		return func() {}, nil
	}
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, err
	}
	if err := pinTo(x.plan.CPU); err != nil {
		return nil, err
	}
	return func() { unix.SchedSetaffinity(0, &old) }, nil
}
