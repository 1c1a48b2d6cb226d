package linuxrun

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/linuxrun/timed"
)

// loopResult is a timed system-call loop's figures: units per call of
// each measured repeat, less the empty loop's per iteration (its median
// over the repeats), that overhead, and the counters per call.
type loopResult struct {
	perCall []float64
	empty   float64
	pmu     *contract.PMUCounts
}

// timeLoop runs warmup + r repeats of n calls of nr(a0, a1, a2) by
// SYSCALL on a locked thread (pinned where the plan says), each repeat
// followed by the empty loop, and returns the measured repeats' figures;
// want checks the last call's return value.
func (x *runner) timeLoop(nr, a0, a1, a2 uintptr, want func(ret uintptr) error) (loopResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := x.pin()
	if err != nil {
		return loopResult{}, err
	}
	defer restore()
	ctr := openCounters(x.cpu, x.plan)
	defer ctr.close()
	n, reps := x.plan.N, x.plan.R
	var calls, empties []uint64
	var before, after []reading
	for i := range x.plan.Warmup + reps {
		if err := x.ctx.Err(); err != nil {
			return loopResult{}, err
		}
		if i == x.plan.Warmup {
			before = ctr.read()
		}
		t := x.clk.now()
		c, ret, err := timed.Syscalls(timed.Native, 0, nr, a0, a1, a2, uintptr(n))
		if !x.clk.tsc {
			c = x.clk.since(t)
		}
		if err == nil {
			err = want(ret)
		}
		if err != nil {
			return loopResult{}, err
		}
		t = x.clk.now()
		e, _, _ := timed.Syscalls(timed.Empty, 0, nr, a0, a1, a2, uintptr(n))
		if !x.clk.tsc {
			e = x.clk.since(t)
		}
		if i >= x.plan.Warmup {
			calls, empties = append(calls, c), append(empties, e)
		}
	}
	after = ctr.read()
	return perCall(calls, empties, n, ctr.perOp(before, after, float64(n*reps))), nil
}

// perCall turns repeats of n calls and of n empty iterations into units
// per call less the empty loop's median per iteration.
func perCall(calls, empties []uint64, n int, pmu *contract.PMUCounts) loopResult {
	e := make([]float64, len(empties))
	for i, v := range empties {
		e[i] = float64(v) / float64(n)
	}
	empty := bench.Summarize(e).Median
	return loopResult{perCall: bench.PerOp(calls, n, empty), empty: empty, pmu: pmu}
}

// equals checks a call's return value against v.
func equals(what string, v uintptr) func(uintptr) error {
	return func(ret uintptr) error {
		if ret != v {
			return fmt.Errorf("%s returned %d, want %d", what, int64(ret), int64(v))
		}
		return nil
	}
}

// syscallRecord is the record of a system-call loop's figures.
func (x *runner) syscallRecord(s contract.Subject, l loopResult) contract.Syscall {
	st := x.clk.stats(l.perCall, l.pmu)
	return contract.Syscall{Subject: s, N: x.plan.N, R: x.plan.R, Warmup: x.plan.Warmup, Stats: st,
		NsPerCall: bench.Round(x.clk.Ns(st.Mean)), EmptyLoopCycles: bench.Round(l.empty)}
}

// null times getppid, as the image's null row, and getpid, as libMicro's
// (bench "getpid").
func (x *runner) null() error {
	for _, c := range []struct {
		bench string
		nr    uintptr
		want  int
	}{{"null", sysGetppid, os.Getppid()}, {"getpid", syscall.SYS_GETPID, os.Getpid()}} {
		s := x.subject(c.bench, "")
		l, err := x.timeLoop(c.nr, 0, 0, 0, equals(c.bench, uintptr(c.want)))
		if err != nil {
			return err
		}
		x.record(x.syscallRecord(s, l))
	}
	return x.compat()
}

// lseek times will-it-scale's lseek1: lseek(fd, 0, SEEK_SET) on a file
// of the run's own (a page of data, in the temporary directory).
func (x *runner) lseek() error {
	f, err := os.CreateTemp("", "ptilab-lseek-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, os.Getpagesize())); err != nil {
		return err
	}
	l, err := x.timeLoop(syscall.SYS_LSEEK, f.Fd(), 0, 0 /* SEEK_SET */, equals("lseek", 0))
	if err != nil {
		return err
	}
	x.record(x.syscallRecord(x.subject("lseek", ""), l))
	return nil
}

// errRefused is the 32-bit program's own answer that its entry cannot be
// timed here (a kernel without the 32-bit vDSO: no AT_SYSINFO): an
// unsupported row, not a failure.
type errRefused string

func (e errRefused) Error() string { return string(e) }

// compat32Program is the 386 build of cmd/ptilab-linux32, beside the
// running program (make builds both into build/).
const compat32Program = "ptilab-linux386"

// compat times getppid through the 64-bit kernel's compat entries from
// the 386 program: INT 0x80, and CALL __kernel_vsyscall, SYSENTER on the
// CPUs whose 32-bit vDSO uses it (the entry sysenter), keyed
// kernel=64-compat; or records each as unsupported with the reason.
func (x *runner) compat() error {
	prog, why := x.compatProg, x.kernel.Compat32
	for _, e := range []struct{ entry, flag string }{{"int80", "int80"}, {"sysenter", "vsyscall"}} {
		s := x.subject("null", e.entry)
		reason := ""
		switch {
		case prog == "":
			reason = "no 32-bit rows: " + why
		case !x.clk.tsc:
			reason = "the TSC is not invariant: the 32-bit program's TSC counts cannot stand beside this run's ns"
		case e.entry == "sysenter" && (x.cpu.Vendor == "AuthenticAMD" || x.cpu.Vendor == "HygonGenuine"):
			// X86_FEATURE_SYSCALL32 comes first in the vDSO's ALTERNATIVE_2.
			reason = "the 32-bit vDSO enters by SYSCALL on " + x.cpu.Vendor + " CPUs, not by SYSENTER (arch/x86/entry/vdso/vdso32/system_call.S)"
		}
		if reason != "" {
			x.record(contract.Unsupported{Subject: s, N: x.plan.N, R: x.plan.R, Warmup: x.plan.Warmup, Reason: reason})
			continue
		}
		res, err := x.runCompat(prog, e.flag)
		var refused errRefused
		if errors.As(err, &refused) {
			x.record(contract.Unsupported{Subject: s, N: x.plan.N, R: x.plan.R, Warmup: x.plan.Warmup, Reason: refused.Error()})
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.entry, err)
		}
		l := perCall(res.Calls[x.plan.Warmup:], res.Empty[x.plan.Warmup:], x.plan.N,
			&contract.PMUCounts{Unsupported: "not counted in the 32-bit program"})
		x.record(x.syscallRecord(s, l))
	}
	return nil
}

// compat32 returns the 386 program's path where the kernel runs it
// natively, or "" and why not.
func (x *runner) compat32() (string, string) {
	prog := x.opts.Compat32
	if prog == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", err.Error()
		}
		prog = filepath.Join(filepath.Dir(exe), compat32Program)
	}
	if _, err := os.Stat(prog); err != nil {
		return "", fmt.Sprintf("no %s (make builds it beside build/ptilab)", prog)
	}
	if err := checkELF386(prog); err != nil {
		return "", err.Error()
	}
	// A kernel without IA32 emulation (or a PVM guest's) refuses every
	// i386 program with ENOEXEC.
	if err := exec.Command(prog, "-n", "1", "-reps", "1").Run(); errors.Is(err, syscall.ENOEXEC) {
		return "", "the kernel runs no i386 programs: " + err.Error()
	} else if err != nil {
		return "", fmt.Sprintf("%s: %v", prog, err)
	}
	return prog, "native"
}

// sysGetppid is getppid's number (x86-64: 110).
const sysGetppid = syscall.SYS_GETPPID

// checkELF386 checks that prog is an i386 ELF program, and that the
// kernel would run it itself: a binfmt_misc entry for i386 (qemu-user's)
// would run it under qemu-i386, whose figures are not the kernel's.
func checkELF386(prog string) error {
	f, err := elf.Open(prog)
	if err != nil {
		return fmt.Errorf("%s: %w", prog, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS32 || f.Machine != elf.EM_386 {
		return fmt.Errorf("%s is a %v %v program, not an i386 one", prog, f.Class, f.Machine)
	}
	if b, err := os.ReadFile("/proc/sys/fs/binfmt_misc/qemu-i386"); err == nil && bytes.HasPrefix(b, []byte("enabled")) {
		return errors.New("i386 programs run under qemu-i386 here (binfmt_misc's qemu-i386 entry is enabled)")
	}
	return nil
}

// runCompat runs the 386 program for entry flag with the plan's calls and
// repeats, pinned as the plan says (the child inherits the locked,
// pinned thread's affinity), and checks what it returns.
func (x *runner) runCompat(prog, flag string) (timed.Result, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var res timed.Result
	restore, err := x.pin()
	if err != nil {
		return res, err
	}
	defer restore()
	reps := x.plan.Warmup + x.plan.R
	cmd := exec.Command(prog, "-entry", flag, "-n", strconv.Itoa(x.plan.N), "-reps", strconv.Itoa(reps))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return res, fmt.Errorf("%s: %w %s", prog, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("%s: %w in %q", prog, err, out)
	}
	switch {
	case res.Error != "":
		return res, errRefused(res.Error)
	case res.Arch != "386":
		return res, fmt.Errorf("%s is a %s build", prog, res.Arch)
	case res.Ret != int64(res.PPid):
		return res, fmt.Errorf("getppid returned %d in the 32-bit program, want %d", res.Ret, res.PPid)
	case len(res.Calls) != reps || len(res.Empty) != reps:
		return res, fmt.Errorf("%s gave %d and %d repeats, want %d", prog, len(res.Calls), len(res.Empty), reps)
	}
	return res, nil
}
