package linuxrun

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/host/report"
)

// TestMain lets the test binary be its own worker processes, as
// cmd/ptilab is.
func TestMain(m *testing.M) {
	MaybeWorker()
	os.Exit(m.Run())
}

func TestPTIState(t *testing.T) {
	flags := func(f ...string) cpuInfo {
		return cpuInfo{Vendor: "GenuineIntel", Flags: append([]string{"pge"}, f...)}
	}
	rs := true
	for _, c := range []struct {
		name       string
		cpu        cpuInfo
		cmdline    string
		randstruct *bool
		mode       experiment.Mode
		text       bool // the kernel text beyond the entry text global
	}{
		{"no PTI", flags("pcid"), "", nil, experiment.Off, true},
		{"PTI with PCIDs", flags("pti", "pcid", "invpcid"), "", nil, experiment.OnPCID, false},
		{"PTI, nopcid", flags("pti"), "nopcid", nil, experiment.On, true},
		{"PTI, pti=on", flags("pti"), "ro pti=on quiet", nil, experiment.On, false},
		{"PTI, pti=on then pti=auto: the last wins", flags("pti"), "pti=on pti=auto", nil, experiment.On, true},
		{"PTI, randstruct", flags("pti"), "", &rs, experiment.On, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, why := ptiState(c.cpu, "Mitigation: PTI", c.cmdline)
			assert.Equal(t, c.mode, m, why)
			assert.Contains(t, why, "meltdown: Mitigation: PTI")
			entry, text, gwhy := globalState(c.cpu, m, c.cmdline, c.randstruct)
			assert.True(t, entry, "with PGE the entry text is global in every mode: %s", gwhy)
			assert.Equal(t, c.text, text, gwhy)
		})
	}
}

// fakeSys is a machine's /proc and /sys as a Skylake with PTI on and
// PCIDs would show them.
func fakeSys() fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	return fstest.MapFS{
		"proc/cpuinfo": file("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 94\nmodel name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz\n" +
			"stepping\t: 3\nmicrocode\t: 0xf0\nflags\t\t: fpu pge constant_tsc nonstop_tsc pcid invpcid pti rdtscp\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n"),
		"proc/sys/kernel/osrelease":                            file("6.1.0-28-amd64\n"),
		"proc/cmdline":                                         file("BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n"),
		"proc/sys/kernel/perf_event_paranoid":                  file("2\n"),
		"sys/devices/system/cpu/vulnerabilities/meltdown":      file("Mitigation: PTI\n"),
		"sys/devices/system/cpu/vulnerabilities/spectre_v2":    file("Mitigation: IBRS; IBPB: conditional; STIBP: conditional; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected\n"),
		"sys/devices/system/cpu/intel_pstate/no_turbo":         file("0\n"),
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": file("powersave\n"),
		"sys/devices/system/cpu/smt/control":                   file("on\n"),
		"sys/devices/system/cpu/online":                        file("0-3,6\n"),
	}
}

func TestKernelRecord(t *testing.T) {
	sys := fakeSys()
	c, err := readCPUInfo(sys)
	require.NoError(t, err)
	assert.Equal(t, uint32(94), c.Model, "the first processor's block")
	require.NotNil(t, c.Microcode)
	assert.Equal(t, uint32(0xf0), *c.Microcode)
	k, v := kernelRecord(sys, c, "")
	assert.Equal(t, "on+pcid", k.PTI)
	assert.True(t, k.Global, "the entry text: %s", k.GlobalWhy)
	assert.False(t, k.KernelTextGlobal, k.GlobalWhy)
	assert.Equal(t, "on", k.Boost, "intel_pstate's no_turbo 0")
	assert.Equal(t, 5, k.CPUs, "0-3,6")
	assert.Equal(t, "powersave", k.Governor)
	require.NotNil(t, k.PerfEventParanoid)
	assert.Equal(t, 2, *k.PerfEventParanoid)
	assert.True(t, v.PTINeeded)
	assert.Equal(t, "Not affected", v.BHI)
	assert.Equal(t, "Mitigation: PTI", v.Table["meltdown"])
	assert.True(t, v.SMT)
	_, err = readCPUInfo(fstest.MapFS{"proc/cpuinfo": &fstest.MapFile{Data: []byte("processor : 0\nBogoMIPS : 50\n")}})
	assert.ErrorContains(t, err, "no vendor_id", "an ARM machine's cpuinfo")
}

func TestParsePlan(t *testing.T) {
	p, errs := ParsePlan(nil)
	assert.Empty(t, errs)
	assert.Equal(t, Benchmarks, p.Benchmarks, "the Linux default")
	assert.Equal(t, -1, p.CPU)
	assert.Equal(t, 1000, p.N, "the image's default")
	p, errs = ParsePlan([]byte("r = 3\ncpu = 1\nmodes = off,on\nbenchmarks = null\nperf = off\n"))
	assert.Empty(t, errs)
	assert.Equal(t, 3, p.R)
	assert.Equal(t, 1, p.CPU)
	assert.Equal(t, []string{"null"}, p.Benchmarks)
	assert.Equal(t, "off", p.Perf)
	require.Len(t, p.Ignored, 1)
	assert.Contains(t, p.Ignored[0], "plan line 3: modes")
	_, errs = ParsePlan([]byte("n = 10\ncpu = two\nflavor = linux\nn = 20\nperf = maybe\n"))
	require.Len(t, errs, 4)
	lines := []int{errs[0].Line, errs[1].Line, errs[2].Line, errs[3].Line}
	assert.Equal(t, []int{2, 3, 4, 5}, lines, "every bad line with its number, in order")
	assert.Contains(t, errs[0].Err, "cpu must be none or a CPU number")
	assert.Contains(t, errs[1].Err, "did you mean flavours?")
	assert.Contains(t, errs[2].Err, "already set on line 1")

	// The image's own keys and benchmarks are noted with their lines and
	// skipped; a plan with no Linux benchmark left, or a CPU the process
	// may not use, is an error on its line.
	p, errs = ParsePlan([]byte("pstate = nominal\nbenchmarks = null32, lseek, tlbsweep\ntlbsweep_n = 5\n"))
	assert.Empty(t, errs)
	assert.Equal(t, []string{"lseek"}, p.Benchmarks)
	assert.Equal(t, []string{"plan line 1: pstate: the bare-metal image's alone, skipped", "plan line 3: tlbsweep_n: the bare-metal image's alone, skipped",
		"plan line 2: benchmarks null32, tlbsweep: the bare-metal image's alone, skipped"}, p.Ignored)
	_, errs = ParsePlan([]byte("n = 5\nbenchmarks = tlbsweep\ncpu = 4095\n"))
	require.Len(t, errs, 2)
	assert.Equal(t, 2, errs[0].Line)
	assert.Contains(t, errs[0].Err, "names no benchmark a Linux run has")
	assert.Equal(t, 3, errs[1].Line)
	assert.Contains(t, errs[1].Err, "CPU 4095 is not one this process may run on")
}

func TestPerfField(t *testing.T) {
	syscall := perfField(`([0-9.]+) usecs/op`, 1000)
	v, err := syscall("# Running 'syscall/basic' benchmark:\n# Executed 1000000 getppid() calls\n     Total time: 0.243 [sec]\n\n       0.243463 usecs/op\n        4107398 ops/sec\n")
	require.NoError(t, err)
	assert.InDelta(t, 243.463, v, 1e-9)
	msg := perfField(`Total time: ([0-9.]+) \[sec\]`, 1)
	_, err = msg("# 20 sender and receiver processes per group\n# 2 groups == 80 processes run\n\n     Total time: 0.000 [sec]\n")
	assert.ErrorContains(t, err, "0 at its precision")
	_, err = msg("perf: 'bench' is not a perf-command\n")
	assert.Error(t, err)
}

// TestRun runs `ptilab linux` on this machine with a small plan: every
// benchmark ends with its records, counted messages and sane figures
// (positive, finite, the repeats asked for); the run beside perf records
// its ratios where perf is installed, and fails only on absurd ones.
// Timings are not tested: the machine is shared.
func TestRun(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the runner is the amd64 build's")
	}
	compat := filepath.Join(t.TempDir(), compat32Program)
	build := exec.Command("go", "build", "-o", compat, "github.com/ptilab/ptilab/cmd/ptilab-linux32")
	build.Env = append(os.Environ(), "GOARCH=386")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	plan, errs := ParsePlan([]byte("n = 200\nr = 4\nwarmup = 1\npingpong_n = 50\nmessaging_groups = 1\nmessaging_loops = 100\nperf_rounds = 2\n"))
	require.Empty(t, errs)
	var log bytes.Buffer
	code := Run(context.Background(), &log, plan, Options{Commit: "test", Compat32: compat})
	require.Equal(t, contract.StatusOK, code, log.String())

	run, err := report.Parse("linux.log", log.Bytes())
	require.NoError(t, err)
	require.NotNil(t, run.End)
	assert.Empty(t, run.Damaged)
	require.NotNil(t, run.Machine)
	assert.Equal(t, "linux", run.Machine.Board)
	assert.False(t, run.Emulated())
	var linux *contract.Linux
	benches := map[string]int{}
	var perf []contract.PerfBench
	for _, rec := range run.Records {
		switch v := rec.Record.(type) {
		case contract.Linux:
			linux = &v
		case contract.Syscall:
			benches[v.Bench+"/"+v.Entry]++
			checkStats(t, v.Key(), v.Stats, v.R)
			assert.Equal(t, 200, v.N)
		case contract.PingPong:
			benches["pingpong/"+v.Tasks]++
			checkStats(t, v.Key(), v.Stats, v.R)
			assert.Equal(t, uint64(50*5), v.RoundTrips, "warm-up included")
		case contract.Messaging:
			benches["messaging/"+v.Tasks]++
			checkStats(t, v.Key(), v.Stats, v.R)
			assert.Equal(t, uint64(20*20*100), v.Messages, "every message of a group counted")
			assert.True(t, v.ChecksumsOK, v.Key())
			assert.Positive(t, v.Switches, "%s: context switches", v.Key())
		case contract.PerfBench:
			perf = append(perf, v)
		case contract.Error:
			t.Errorf("error record: %+v", v)
		}
	}
	require.NotNil(t, linux)
	checkHostTools(t, run, log.Bytes())
	mode, err := experiment.ParseMode(linux.PTI)
	require.NoError(t, err, "the kernel's PTI is a mode of the model")
	for _, b := range []string{"null/syscall", "getpid/syscall", "lseek/syscall", "pingpong/processes", "pingpong/threads", "messaging/processes", "messaging/threads"} {
		assert.Equal(t, 1, benches[b], b)
	}
	if linux.Compat32 == "native" {
		assert.Equal(t, 1, benches["null/int80"], "the compat INT 0x80 row")
	}
	for _, rec := range run.Records {
		if s, ok := rec.Record.(interface{ About() contract.Subject }); ok && s.About().Bench != "" {
			assert.Equal(t, mode.String(), s.About().Mode, "every row is keyed by the kernel's PTI state")
		}
	}
	if _, err := exec.LookPath("perf"); err != nil {
		t.Logf("no perf on the PATH: the perf comparison is not tested here")
		return
	}
	require.Len(t, perf, 3, "getppid, sched-messaging processes and threads")
	for _, p := range perf {
		require.Empty(t, p.Error, p.Command)
		assert.Len(t, p.Perf, 2, p.Command)
		assert.True(t, p.Ratio > 0.2 && p.Ratio < 5, "%s: ratio %.3f (ptilab %v, perf %v)", p.Command, p.Ratio, p.Ptilab, p.Perf)
		t.Logf("%s: perf %v %s, ptilab %v, ratio %.3f", p.Command, p.Perf, p.Unit, p.Ptilab, p.Ratio)
	}
}

// checkHostTools checks that the host tools take a Linux run: report
// renders its tables, plot draws its null calls, and compare sets it
// beside an emulated run (here the same records marked as QEMU's) with
// both figures in each row and why no test is made.
func checkHostTools(t *testing.T, run *report.Run, log []byte) {
	t.Helper()
	doc := report.Build(run).Doc()
	assert.NotEmpty(t, doc.Tables)
	plots, err := report.Plots(run)
	require.NoError(t, err)
	assert.NotEmpty(t, plots, "the null calls' plots")
	emu := bytes.ReplaceAll(log, []byte(`"emulated":false`), []byte(`"emulated":true`))
	emu = bytes.ReplaceAll(emu, []byte(`"board":"linux"`), []byte(`"board":"qemu","emulator":"qemu-tcg"`))
	// The image runs the ping-pong with global pages off only: its rows
	// pair with the Linux rows of the other global setting.
	lines := bytes.Split(emu, []byte("\n"))
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"kind":"pingpong"`)) {
			l = bytes.Replace(l, []byte(`"global":true`), []byte(`"global":x`), 1)
			l = bytes.Replace(l, []byte(`"global":false`), []byte(`"global":true`), 1)
			lines[i] = bytes.Replace(l, []byte(`"global":x`), []byte(`"global":false`), 1)
		}
	}
	emu = bytes.Join(lines, []byte("\n"))
	qemu, err := report.Parse("qemu.log", emu)
	require.NoError(t, err)
	cmp := report.Compare(run, qemu, false)
	require.Len(t, cmp.Tables, 1)
	rows, twins := 0, 0
	for _, row := range cmp.Tables[0].Rows {
		if strings.HasPrefix(row[0], "bench=pingpong") {
			twins++
			assert.Contains(t, row[0], "(B: global=", "the ping-pong beside its global twin")
		}
		if strings.HasPrefix(row[0], "bench=") && !strings.Contains(row[len(row)-1], "unsupported") {
			rows++
			assert.NotEqual(t, "absent", row[3], row)
			assert.Contains(t, row[len(row)-1], "not compared: A Linux", row)
			assert.Contains(t, row[len(row)-1], "B emulated (qemu-tcg)", row)
		}
	}
	assert.Positive(t, rows)
	assert.Equal(t, 2, twins, "processes and threads")
}

// checkStats checks a figure's statistics: positive, finite, the repeats
// asked for.
func checkStats(t *testing.T, key string, s contract.Stats, r int) {
	t.Helper()
	assert.Len(t, s.Repeats, r, key)
	for _, x := range []float64{s.Mean, s.Median, s.Min, s.Max} {
		assert.True(t, x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x), "%s: %v", key, s)
	}
	assert.LessOrEqual(t, s.Min, s.Median, key)
	assert.LessOrEqual(t, s.Median, s.Max, key)
}

// TestCompat32Refused: the 32-bit rows are "unsupported" with the reason
// where the program is not an i386 one or the kernel refuses to run it
// (a kernel without IA32 emulation answers ENOEXEC to every i386
// program; a header with no program headers stands in for it here).
func TestCompat32Refused(t *testing.T) {
	x := &runner{}
	x.opts.Compat32 = "/bin/true"
	prog, why := x.compat32()
	assert.Empty(t, prog)
	assert.Contains(t, why, "not an i386 one")

	hdr := make([]byte, 52) // an ELF32 header (System V ABI, 4.1)
	copy(hdr, "\x7fELF\x01\x01\x01")
	binary.LittleEndian.PutUint16(hdr[16:], uint16(elf.ET_EXEC))
	binary.LittleEndian.PutUint16(hdr[18:], uint16(elf.EM_386))
	binary.LittleEndian.PutUint32(hdr[20:], 1)
	binary.LittleEndian.PutUint16(hdr[40:], 52)
	x.opts.Compat32 = filepath.Join(t.TempDir(), compat32Program)
	require.NoError(t, os.WriteFile(x.opts.Compat32, hdr, 0o755))
	prog, why = x.compat32()
	assert.Empty(t, prog)
	assert.Contains(t, why, "exec format error")

	x.opts.Compat32 = filepath.Join(t.TempDir(), "absent")
	_, why = x.compat32()
	assert.Contains(t, why, "make builds it")
}

// TestRawEvents: the image's model events as perf raw events, event |
// umask << 8, at most one per programmable counter.
func TestRawEvents(t *testing.T) {
	skl := cpuInfo{Vendor: "GenuineIntel", Family: 6, Model: 0x5e, Stepping: 3}
	evs, skipped := rawEvents(skl, []string{"DTLB_LOAD_MISSES.WALK_COMPLETED", "NO.SUCH_EVENT"}, 4)
	require.Len(t, evs, 1)
	assert.Equal(t, uint64(0x0e08), evs[0].config, "SKL DTLB_LOAD_MISSES.WALK_COMPLETED: event 08H, umask 0EH")
	assert.Equal(t, []string{"NO.SUCH_EVENT: not in the Skylake (client) table"}, skipped)
	evs, skipped = rawEvents(skl, nil, 2)
	assert.Len(t, evs, 2)
	assert.NotEmpty(t, skipped, "the table's other events: 2 programmable counters")
	_, skipped = rawEvents(cpuInfo{Vendor: "AuthenticAMD", Family: 0x19}, nil, 6)
	assert.Equal(t, []string{"model events: Intel's event lists only (AuthenticAMD)"}, skipped)
}

// TestRunPinned: with cpu = 0 the timed loops and every worker, process
// or thread, run on CPU 0 and the run records it; a CPU the process may
// not run on is a setup error, not a hang.
func TestRunPinned(t *testing.T) {
	plan, errs := ParsePlan([]byte("cpu = 0\nperf = off\nbenchmarks = null, pingpong, messaging\nn = 100\nr = 2\nwarmup = 0\npingpong_n = 20\nmessaging_groups = 1\nmessaging_loops = 2\n"))
	require.Empty(t, errs)
	var log bytes.Buffer
	require.Equal(t, contract.StatusOK, Run(context.Background(), &log, plan, Options{Compat32: "/nonexistent"}), log.String())
	assert.Contains(t, log.String(), `"pinned":"cpu 0"`)
	assert.Contains(t, log.String(), `"checksums_ok":true`)

	plan.CPU = 4095
	log.Reset()
	assert.Equal(t, contract.StatusFailed, Run(context.Background(), &log, plan, Options{}))
	assert.Contains(t, log.String(), "CPU 4095 is not one this process may run on")
}

// TestWaitReady: a worker that never says it is ready fails the run at
// the deadline.
func TestWaitReady(t *testing.T) {
	r, w, err := pipe2()
	require.NoError(t, err)
	defer closeAll(r, w)
	require.NoError(t, writeAll(w, []byte{0, 0}))
	require.NoError(t, waitReady(context.Background(), r, 2, time.Now().Add(time.Second)))
	require.NoError(t, writeAll(w, []byte{0}))
	err = waitReady(context.Background(), r, 2, time.Now().Add(50*time.Millisecond))
	assert.ErrorContains(t, err, "1 of 2 workers ready")
}

// TestClockWithoutInvariantTSC: where the TSC is not invariant the loops
// are timed by CLOCK_MONOTONIC_RAW, in ns.
func TestClockWithoutInvariantTSC(t *testing.T) {
	c := newClock(cpuInfo{Vendor: "GenuineIntel", Flags: []string{"tsc"}})
	assert.False(t, c.tsc)
	assert.Equal(t, uint64(1e9), c.Hz)
	assert.Equal(t, "ns", c.unit())
	p, errs := ParsePlan([]byte("n = 200\nr = 3\nwarmup = 1\n"))
	require.Empty(t, errs)
	x := &runner{ctx: context.Background(), clk: c, plan: p}
	l, err := x.timeLoop(sysGetppid, 0, 0, 0, equals("getppid", uintptr(os.Getppid())))
	require.NoError(t, err)
	require.Len(t, l.perCall, 3)
	st := x.clk.stats(l.perCall, l.pmu)
	assert.Equal(t, "ns", st.Unit)
	assert.Positive(t, st.Median, "ns per getppid")
}

func TestNoPGE(t *testing.T) {
	entry, text, why := globalState(cpuInfo{Flags: []string{"pti"}}, experiment.On, "", nil)
	assert.False(t, entry || text, why)
}

// TestPerOp: counts per operation, and the counters left out with why:
// unread, not counting, multiplexed.
func TestPerOp(t *testing.T) {
	c := &counters{fds: []int{-1, -1, -1, -1}, names: []string{"instructions", "core_cycles", "a", "b"}, Scope: "kernel+user"}
	before := []reading{{100, 10, 10, true}, {5, 10, 10, true}, {7, 10, 10, true}, {1, 10, 10, true}}
	after := []reading{{2100, 20, 20, true}, {5, 20, 20, true}, {107, 20, 15, true}, {}}
	got := c.perOp(before, after, 1000)
	assert.Equal(t, map[string]float64{"instructions": 2}, got.PerOp)
	assert.Equal(t, []string{"core_cycles: not counting (read 0 over the loop)", "a: multiplexed (counted 50% of the loop): not reported",
		"b: the counter could not be read"}, got.Skipped)
	none := (&counters{Scope: "unsupported: perf_event_open instructions: no such file or directory (ENOENT)"}).perOp(nil, nil, 1)
	assert.Equal(t, "perf_event_open instructions: no such file or directory (ENOENT)", none.Unsupported)
}

// TestInterrupt: an interrupt (the command's context, cancelled on
// SIGINT or SIGTERM) ends a long benchmark between repeats, its worker
// processes killed, and the run fails saying so.
func TestInterrupt(t *testing.T) {
	plan, errs := ParsePlan([]byte("benchmarks = messaging\nperf = off\nr = 50\nwarmup = 0\nmessaging_groups = 1\nmessaging_loops = 2000\n"))
	require.Empty(t, errs)
	// Long enough for the run's start (the machine, the TSC against
	// CLOCK_MONOTONIC_RAW: 0.3 s on a loaded 2-core machine) to end
	// before it, short against the benchmark's 50 repeats of 2000 loops.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var log bytes.Buffer
	start := time.Now()
	assert.Equal(t, contract.StatusFailed, Run(ctx, &log, plan, Options{Compat32: "/nonexistent"}))
	assert.Less(t, time.Since(start), 20*time.Second, "ended soon after the interrupt")
	assert.Contains(t, log.String(), "messaging FAILED: processes: context deadline exceeded")
}
