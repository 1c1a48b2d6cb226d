package test

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/image"
	"github.com/ptilab/ptilab/host/qemu"
)

const mib = 1 << 20

// checkNames are the self-checks of the image, in the order it runs them.
var checkNames = []string{"goroutines", "maps", "fmt", "segments", "sleep", "alloc", "gc", "mmap", "preempt"}

// checkNames32 are the checks of the 32-bit world's benchmark probe32, in
// the default plan after the self-checks.
var checkNames32 = []string{"kernel32 probe", "kernel32 fault", "kernel32 double fault", "kernel32 round trips"}

// requireOK checks that a run ended normally: status 0 through the
// debug-exit device, no fault dump, and PTILAB-END status "ok" with every
// check passed: the self-checks and any a benchmark made.
func requireOK(t *testing.T, res *qemu.Result) {
	t.Helper()
	require.True(t, res.DebugExit, "QEMU status %d: not through the debug-exit device", res.QEMUStatus)
	assert.Equal(t, 0, res.ImageStatus)
	requireEndOK(t, res)
}

// requireEndOK checks the image's own verdict: no fault dump, and
// PTILAB-END status "ok" with exit 0 and every check passed; and that a
// run whose benchmarks ran (a timing record) measured the disturbance
// baseline first, emulated.
func requireEndOK(t *testing.T, res serialLog) {
	t.Helper()
	if line, ok := res.Fault(); ok {
		assert.Fail(t, "unexpected fault dump", line)
	}
	e := ended(t, res)
	assert.Equal(t, "ok", e.Status)
	assert.Equal(t, contract.StatusOK, e.Exit)
	assert.GreaterOrEqual(t, e.Checks, len(checkNames))
	assert.Equal(t, e.Checks, e.Passed)
	assert.Zero(t, e.FailedBenchmarks)
	assert.Empty(t, e.Failed)
	if len(recordsOf[contract.Timing](t, res)) > 0 {
		b := recordsOf[contract.Baseline](t, res)
		require.Len(t, b, 1, "the disturbance baseline")
		assert.True(t, b[0].Emulated)
		assert.Positive(t, b[0].Ms)
		assert.Positive(t, b[0].Reads)
		assert.Empty(t, b[0].Warnings, "no warnings under an emulator")
		assert.Contains(t, []string{"unsupported", "aperf/mperf"}, b[0].CoreClock, "the emulators' APERF/MPERF count where they have them")
	}
}

// TestDefaultBoot boots with 256 MiB and QEMU's default CPU and checks the
// machine line, every self-check, the system-call table and the end line.
func TestDefaultBoot(t *testing.T) {
	res := boot(t, qemu.Options{Memory: "256M"})
	requireOK(t, res)
	lines := res.Lines()

	// The machine line and record.
	lineIndex(t, lines, "ptilab machine:")
	raw := record(t, res, "machine")
	for _, k := range []string{"vendor", "brand", "family", "model", "stepping", "tsc_hz", "tsc_source", "pcid", "invpcid", "pge", "smep", "smap", "rdrand", "ram_bytes", "firmware_vendor", "board", "relocated"} {
		assert.Contains(t, raw, k, "the machine record carries %s", k)
	}
	machines := recordsOf[contract.Machine](t, res)
	require.Len(t, machines, 1)
	m := machines[0]
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{12}(\+dirty)?$`, m.PtilabCommit, "the commit the image was built from")
	assert.Equal(t, strings.TrimSuffix(image.Commit(t.Context(), root), "+dirty"), strings.TrimSuffix(m.PtilabCommit, "+dirty"))
	lineIndex(t, lines, "ptilab machine: ptilab "+m.PtilabCommit+" | ")
	assert.NotEmpty(t, m.Vendor)
	assert.Positive(t, m.Family)
	assert.Positive(t, m.TSCHz)
	assert.Contains(t, []string{"cpuid-15h", "cpuid-15h-model", "acpi-pm-timer", "pit"}, m.TSCSource)
	// QEMU's default CPU has no leaf 15H: the PM timer's figure, measured
	// over half a second, is the TSC frequency.
	assert.Equal(t, "acpi-pm-timer", m.TSCMeasuredBy)
	assert.Equal(t, m.TSCHz, m.TSCMeasuredHz)
	assert.Empty(t, m.TSCPMTimerError)
	// q35's HPET (QEMU hw/timer/hpet.c: 10 ns a tick, at 0FED00000H,
	// halted until a driver sets ENABLE_CNF) over the same half second:
	// started for it, the two figures within 1000 ppm of each other; the
	// PIT not tried.
	requireHPETFigure(t, m)
	assert.Nil(t, m.TSCPITRetries, "the PIT is measured only where the PM timer and the HPET gave nothing")
	assert.Empty(t, m.TSCPITError)
	assert.GreaterOrEqual(t, m.RAMBytes, uint64(200*mib))
	assert.LessOrEqual(t, m.RAMBytes, uint64(256*mib))
	assert.Equal(t, "EDK II", m.FirmwareVendor)
	assert.Equal(t, "qemu", m.Board)
	assert.True(t, m.Relocated, "image base %#x: the firmware did not relocate the image", m.ImageBase)
	// Every figure carries the microcode revision of the machine record.
	require.NotNil(t, m.Microcode, "QEMU's CPUs have IA32_BIOS_SIGN_ID")
	figs := 0
	for _, s := range subjectsOf(t, res) {
		assert.Equal(t, fmt.Sprintf("%#x", *m.Microcode), s.Microcode, "%s: the machine's microcode", s.Bench)
		figs++
	}
	assert.Positive(t, figs)

	// The cpu-state record, and the core clock and SMIs unsupported: QEMU's
	// default CPU is not Intel's.
	st := cpuStateOf(t, res, "unsupported")
	assert.Equal(t, "unsupported", st.SMICount)
	assert.Equal(t, "unsupported", st.MSRs["MSR_SMI_COUNT"])
	// Not Intel: IA32_MISC_ENABLE and MSR_CORE_THREAD_COUNT are not read.
	assert.Nil(t, st.CPUIDLimit)
	assert.Equal(t, "cpuid", st.SMTSource)
	assert.Zero(t, st.ThreadCount)
	// The vulnerabilities table: qemu64 is AMD family 0FH, whitelisted
	// against Meltdown, MDS and MMIO; retpolines for Spectre v2, no IBPB
	// or STIBP enumerated.
	vul := vulnsOf(t, res)
	assert.Equal(t, "AuthenticAMD", vul.Vendor)
	assert.False(t, vul.PTINeeded)
	assert.Equal(t, "whitelisted model", vul.PTIWhy)
	assert.Equal(t, "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected", vul.Table["spectre_v2"])
	for _, n := range []string{"meltdown", "mds", "tsx_async_abort", "mmio_stale_data", "retbleed", "l1tf"} {
		assert.Equal(t, "Not affected", vul.Table[n], n)
	}
	requireCoreUnsupported(t, res, "unsupported")
	requirePMUUnsupported(t, res, exactly(pmuAMD))

	// One check record per self-check, in order, each passed, and its
	// human line.
	byName := map[string]map[string]any{}
	var names []string
	for _, c := range recordsOf[contract.Check](t, res) {
		names = append(names, c.Name)
		byName[c.Name] = c.Data
		assert.True(t, c.OK, "check %s failed: %s", c.Name, c.Detail)
	}
	require.Equal(t, append(append([]string{}, checkNames...), checkNames32...), names)
	assert.Equal(t, len(checkNames)+len(checkNames32), ended(t, res).Checks)
	for _, name := range checkNames {
		re := regexp.MustCompile(`^check\s+` + name + `\s+ok(\s|$)`)
		found := false
		for _, l := range lines {
			found = found || re.MatchString(l)
		}
		assert.True(t, found, "no human line matching %s", re)
	}

	sleep := byName["sleep"]
	tscNs, pmNs := integer(t, sleep, "tsc_ns"), integer(t, sleep, "pmtimer_ns")
	assert.GreaterOrEqual(t, tscNs, int64(10*time.Millisecond))
	diff := tscNs - pmNs
	if diff < 0 {
		diff = -diff
	}
	assert.LessOrEqual(t, float64(diff), 0.02*float64(pmNs)+2e5, "TSC %d ns vs PM timer %d ns", tscNs, pmNs)
	assert.GreaterOrEqual(t, integer(t, byName["alloc"], "pages_backed"), int64(16384))
	assert.Positive(t, integer(t, byName["gc"], "pages_released"))

	// The system calls the runtime made.
	scs := recordsOf[contract.SyscallCounts](t, res)
	require.Len(t, scs, 1)
	sc := scs[0]
	called := func(name string) bool { return sc.Counts[name] > 0 }
	for _, name := range []string{"mmap", "clone", "futex", "clock_gettime", "rt_sigaction", "sigaltstack", "arch_prctl", "sched_getaffinity", "write"} {
		assert.True(t, called(name), "no %s in %v", name, sc.Counts)
	}
	assert.True(t, called("munmap") || called("madvise"), "neither munmap nor madvise in %v", sc.Counts)
	assert.Zero(t, sc.ENOSYS)
}

// requireHPETFigure checks a machine record of QEMU's q35 for the HPET's
// TSC figure, measured over the PM timer's window.
func requireHPETFigure(t *testing.T, m contract.Machine) {
	t.Helper()
	t.Logf("TSC %d Hz (%s): %s", m.TSCHz, m.TSCSource, m.TSCEvidence())
	assert.Empty(t, m.TSCHPETError)
	assert.Equal(t, uint64(0xfed00000), m.HPETBase)
	assert.Equal(t, uint32(10_000_000), m.HPETPeriodFs, "QEMU's HPET ticks every 10 ns")
	assert.True(t, m.HPETStarted, "OVMF leaves the HPET halted")
	assert.True(t, m.HPETRestored, "halted again, its configuration and count as found")
	require.NotNil(t, m.TSCHPETvsPMPPM)
	assert.InDelta(t, 0, *m.TSCHPETvsPMPPM, 1000, "HPET %d Hz, PM timer %d Hz", m.TSCHPETHz, m.TSCMeasuredHz)
	assert.Positive(t, m.TSCHPETHz)
}

// modelsPlan is the default plan's benchmarks, in both worlds, at small
// sizes: every path runs under each model, in a third of the default
// plan's time under TCG.
const modelsPlan = "n = 100\npingpong_n = 20\nmessaging_groups = 1\nmessaging_loops = 2\nwork_n = 20\nr = 3\nwarmup = 1\n"

// TestModels boots with more memory and with named CPU models, each
// running the default plan's benchmarks at small sizes (modelsPlan).
func TestModels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  qemu.Options
		model int64 // 0: not checked (QEMU's default CPU)
		check func(t *testing.T, m contract.Machine)
	}{
		{"4G", qemu.Options{Memory: "4G"}, 0, func(t *testing.T, m contract.Machine) {
			assert.Greater(t, m.RAMBytes, uint64(3<<30))
		}},
		{"Nehalem", qemu.Options{CPU: "Nehalem"}, 0x1a, func(t *testing.T, m contract.Machine) {
			assert.False(t, m.RDTSCP, "Nehalem has no RDTSCP: the timing code must fall back")
		}},
		// Without its HPET (and ACPI HPET table): the reason in the
		// record, the PM timer's figure all the same.
		{"IvyBridge", qemu.Options{CPU: "IvyBridge", NoHPET: true}, 0x3a, nil},
		{"Skylake-Client", qemu.Options{CPU: "Skylake-Client"}, 0x5e, func(t *testing.T, m contract.Machine) {
			assert.True(t, m.SMEP)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Plan = []byte(modelsPlan)
			res := boot(t, tt.opts)
			requireOK(t, res)
			ms := recordsOf[contract.Machine](t, res)
			require.Len(t, ms, 1)
			m := ms[0]
			assert.True(t, m.Relocated, "image base %#x", m.ImageBase)
			if tt.model != 0 {
				assert.Equal(t, "GenuineIntel", m.Vendor)
				assert.EqualValues(t, tt.model, m.Model)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
			assert.Equal(t, "acpi-pm-timer", m.TSCMeasuredBy)
			assert.Nil(t, m.TSCPITRetries, "the PIT not tried")
			if tt.opts.NoHPET {
				assert.Equal(t, "no HPET table", m.TSCHPETError)
				assert.Zero(t, m.TSCHPETHz)
				assert.Zero(t, m.HPETPeriodFs)
				assert.False(t, m.HPETStarted)
				assert.Nil(t, m.TSCHPETvsPMPPM)
				assert.Contains(t, res.Lines()[lineIndex(t, res.Lines(), "ptilab machine:")], ", HPET: no HPET table")
			} else {
				requireHPETFigure(t, m)
			}
			// QEMU's Intel models: no APERF/MPERF, MSR_PLATFORM_INFO reads 0
			// (TCG reads an MSR it lacks as 0), MSR_SMI_COUNT is QEMU's own
			// count of the SMIs it delivered.
			st := cpuStateOf(t, res, "unsupported")
			smi := "unsupported"
			if tt.model != 0 {
				smi = "msr"
				assert.Equal(t, 0, st.MaxNonTurboRatio)
			}
			assert.Equal(t, smi, st.SMICount)
			if tt.model != 0 {
				// QEMU's TCG has IA32_MISC_ENABLE (limit bit clear)
				// and MSR_CORE_THREAD_COUNT: one thread on one core
				// (-smp 1), which decides SMT in both records.
				require.NotNil(t, st.CPUIDLimit, "IA32_MISC_ENABLE read on an Intel model")
				assert.False(t, *st.CPUIDLimit)
				assert.Equal(t, "msr", st.SMTSource)
				assert.Equal(t, 1, st.ThreadCount)
				assert.Equal(t, 1, st.CoreCount)
				assert.False(t, st.SMT)
				lines := res.Lines()
				assert.Contains(t, lines[lineIndex(t, lines, "ptilab cpu-state: core clock ")], "| SMT siblings no (1 thread on 1 core enabled, MSR_CORE_THREAD_COUNT")
			}
			requireCoreUnsupported(t, res, smi)
			pmuWhy := pmuAMD
			if tt.model != 0 {
				pmuWhy = pmuNoArch
			}
			requirePMUUnsupported(t, res, exactly(pmuWhy))
			vul := vulnsOf(t, res)
			assert.Equal(t, st.SMT, vul.SMT)
			assert.Equal(t, st.SMTSource, vul.SMTSource)
			if tt.name == "Skylake-Client" {
				// SKYLAKE (06_5EH) without ARCH_CAPABILITIES under a
				// hypervisor: Meltdown, PTI; BHI assumed, covered by
				// retpolines; MDS without MD_CLEAR.
				assert.Equal(t, 0x5e, vul.Model)
				assert.True(t, vul.PTINeeded)
				assert.Equal(t, "affected", vul.PTIWhy)
				assert.Equal(t, "Mitigation: PTI", vul.Table["meltdown"])
				assert.Equal(t, "Retpoline", vul.BHI)
				assert.Equal(t, "Vulnerable: Clear CPU buffers attempted, no microcode; SMT Host state unknown", vul.Table["mds"])
				assert.Equal(t, "Vulnerable", vul.Table["retbleed"])
			}
		})
	}
}

// dumpRegisters are the registers the fault dump shows as 16 hex digits.
var dumpRegisters = []string{"RIP", "RSP", "CR2", "RAX", "RBX", "RCX", "RDX", "RSI", "RDI", "RBP",
	"R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15"}

// TestFault makes the image fault on purpose and checks the register dump,
// the fault record, the Go traceback and the fault status.
func TestFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		plan   string
		vector int64
		first  string // the PTILAB-FAULT line
		panic  string // what the panic line starts with
		dump   []string
	}{
		{"pf", 14, "PTILAB-FAULT #PF page fault in Go code, error 0x0 [not present, read]",
			"panic: ptilab: CPU exception #PF page fault", []string{"CR2 0x0000000000000010"}},
		{"gp", 13, "PTILAB-FAULT #GP general protection in Go code, error 0x0",
			"panic: ptilab: CPU exception #GP general protection", nil},
	}
	for _, tt := range tests {
		t.Run(tt.plan, func(t *testing.T) {
			res := boot(t, qemu.Options{Plan: []byte("fault = " + tt.plan + "\n")})
			require.True(t, res.DebugExit, "QEMU status %d: not through the debug-exit device", res.QEMUStatus)
			assert.Equal(t, 3, res.ImageStatus)
			checkGoFault(t, res, tt.vector, tt.first, tt.panic, tt.dump)
		})
	}
}

// checkGoFault checks the output of a deliberate CPU exception in Go code
// (plan key fault): the PTILAB-FAULT line first and the register dump
// (holding the strings dump), the fault record with vector, the Go
// traceback from a panic line starting with panicLine through amd64.Load
// and its caller, and PTILAB-END with the fault status.
func checkGoFault(t *testing.T, res serialLog, vector int64, first, panicLine string, dump []string) {
	t.Helper()
	lines := res.Lines()

	// The dump: the PTILAB-FAULT line and seven register lines.
	got, ok := res.Fault()
	require.True(t, ok, "no PTILAB-FAULT line")
	assert.Equal(t, first, got)
	at := lineIndex(t, lines, "PTILAB-FAULT")
	require.Greater(t, len(lines), at+7, "register dump cut short")
	regs := lines[at+1 : at+8]
	assert.Regexp(t, `^\s+RIP 0x[0-9a-f]{16}\b.*\sCS 0x10\s`, regs[0])
	assert.Regexp(t, `^\s+RSP 0x[0-9a-f]{16}\s+SS 0x[0-9a-f]+\s+CR2 0x[0-9a-f]{16}\s+CR3 0x[0-9a-f]+$`, regs[1])
	regText := strings.Join(regs, "\n")
	for _, r := range dumpRegisters {
		assert.Regexp(t, `\b`+r+`\s+0x[0-9a-f]{16}\b`, regText)
	}
	for _, s := range dump {
		assert.Contains(t, regText, s)
	}

	fs := recordsOf[contract.Fault](t, res)
	require.Len(t, fs, 1)
	f := fs[0]
	assert.EqualValues(t, vector, f.Vector)
	assert.Equal(t, "Go code", f.In)
	assert.NotEmpty(t, f.ELFRIP, "the faulting RIP is in the image")
	assert.Empty(t, recordsOf[contract.Check](t, res), "the run went on after the fault")

	// The Go traceback through the faulting function.
	p := lineIndex(t, lines, "panic: ptilab: CPU exception")
	assert.True(t, strings.HasPrefix(lines[p], panicLine), lines[p])
	assert.Greater(t, p, at, "panic before the dump")
	g := lineIndex(t, lines, "goroutine 1 [running]")
	load := lineIndex(t, lines, "github.com/ptilab/ptilab/amd64.Load(")
	caller := lineIndex(t, lines, "main.deliberateFault(")
	assert.Less(t, p, g)
	assert.Less(t, g, load)
	assert.Less(t, load, caller)

	e := ended(t, res)
	assert.Equal(t, "fault", e.Status)
	assert.Equal(t, contract.StatusFault, e.Exit)
	assert.Less(t, e.UptimeMs, int64(10000), "dump and exit within 10 s of boot")
	assert.Greater(t, lineIndex(t, lines, "PTILAB-END"), caller, "PTILAB-END before the traceback")
}

// TestBadPlan boots with a plan whose bad lines are reported, by line
// number, while the run goes on with the defaults.
func TestBadPlan(t *testing.T) {
	plan := strings.Join([]string{
		"# ptilab test plan", // 1
		"",                   // 2
		"colour = blue",      // 3: unknown key
		"no equals sign",     // 4: no '='
		"  # indented",       // 5
		"end = sometimes",    // 6: bad value
		"screen = off",       // 7: valid
		"benchmarks = null",  // 8: valid (a short run: the plan's lines are the test)
		"n = 100",            // 9
		"r = 3",              // 10
		"",
	}, "\n")
	res := boot(t, qemu.Options{Plan: []byte(plan)})
	requireOK(t, res)
	assert.Equal(t, 3, ended(t, res).PlanErrors, "PTILAB-END counts the ignored lines")
	lines := res.Lines()
	assert.Contains(t, lines, fmt.Sprintf("ptilab: plan /ptilab.plan (%d bytes)", len(plan)))

	want := []struct {
		line      int64
		text, err string
	}{
		{3, "colour = blue", `unknown key "colour"`},
		{4, "no equals sign", "expected key = value"},
		{6, "end = sometimes", "end must be auto, return, key, poweroff or reset"},
	}
	errs := recordsOf[contract.PlanError](t, res)
	require.Len(t, errs, len(want))
	for i, w := range want {
		assert.EqualValues(t, w.line, errs[i].Line)
		assert.Equal(t, w.text, errs[i].Text)
		assert.Equal(t, w.err, errs[i].Error)
		assert.Contains(t, lines, fmt.Sprintf("ptilab: plan line %d %q: %s; using the default", w.line, w.text, w.err))
		assert.Equal(t, "using the default", errs[i].Consequence)
	}
}

// TestKernelFault makes the kernel fault in kernel mode (inside the
// system-call handler): a register dump and the kernel's call chain, no Go
// traceback, and the run ends at once with the fault status.
func TestKernelFault(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		plan   string
		vector int64
		first  string
	}{
		{"kernel-pf", 14, "PTILAB-FAULT #PF page fault in kernel, error 0x0 [not present, read]"},
		{"kernel-gp", 13, "PTILAB-FAULT #GP general protection in kernel, error 0x0"},
	} {
		t.Run(tt.plan, func(t *testing.T) {
			res := boot(t, qemu.Options{Plan: []byte("fault = " + tt.plan + "\n")})
			require.True(t, res.DebugExit, "QEMU status %d: not through the debug-exit device", res.QEMUStatus)
			assert.Equal(t, 3, res.ImageStatus)
			first, ok := res.Fault()
			require.True(t, ok, "no PTILAB-FAULT line")
			assert.Equal(t, tt.first, first)
			lines := res.Lines()
			at := lineIndex(t, lines, "PTILAB-FAULT")
			require.Greater(t, len(lines), at+8, "register dump cut short")
			dump := strings.Join(lines[at+1:at+8], "\n")
			for _, r := range dumpRegisters {
				assert.Regexp(t, `\b`+r+`\s+0x[0-9a-f]{16}\b`, dump)
			}
			assert.Regexp(t, `^\s+kernel call chain \(ELF\):( 0x[0-9a-f]+)+$`, lines[at+8])
			fs := recordsOf[contract.Fault](t, res)
			require.Len(t, fs, 1)
			assert.EqualValues(t, tt.vector, fs[0].Vector)
			assert.Equal(t, "kernel", fs[0].In)
			for _, l := range lines {
				assert.NotContains(t, l, "goroutine ", "no Go traceback for a kernel fault")
			}
			e := ended(t, res)
			assert.Equal(t, "fault", e.Status)
			assert.Equal(t, contract.StatusFault, e.Exit)
			assert.Less(t, e.UptimeMs, int64(10000))
		})
	}
}

// TestEndKey: with end = key (what end = auto does on a PC; end =
// return skips only the wait, board's TestWaitsForKey) the run,
// after PTILAB-END, says it waits for a key and waits: a key pressed
// (Return typed on the serial line, which OVMF's console input reads
// through its serial terminal) ends the wait, and so does end_wait
// without one;
// either way the image then returns to the firmware, whose boot manager
// goes on. A key typed during the run does not count.
//
// The timeout run boots the test image that plays a firmware whose code
// selector collides with ptilab's GDT (oddFirmware: its calls run on a
// copy of its GDT): the boot manager goes on only if the way back gave
// the firmware its own GDT and CS, not the copy in the image's memory.
func TestEndKey(t *testing.T) {
	const plan = "end = key\nbenchmarks = null\nflavours = minimal\nglobal = off\nn = 100\nr = 3\n"
	t.Run("timeout", func(t *testing.T) {
		_, image := taggedImage(t, oddFirmware...)
		after := returnRun(t, image, plan+"end_wait = 1\n", "ptilab: booting")
		assert.Contains(t, after, "ptilab: the run is over; press a key to return to the firmware (or wait 1 s)")
		assert.Contains(t, after, "ptilab: no key in 1 s; returning to the firmware", "the key typed during the run ended the wait")
	})
	t.Run("key", func(t *testing.T) {
		// end_wait bounds the test: a key not seen ends the wait too, and
		// the test fails on its line.
		after := returnRun(t, "", plan+"end_wait = 60\n", "press a key to return to the firmware")
		assert.Contains(t, after, "ptilab: the run is over; press a key to return to the firmware (or wait 60 s)")
		assert.Contains(t, after, "ptilab: key pressed; returning to the firmware")
		assert.NotContains(t, after, "no key in")
	})
}

// returnRun boots plan on image (empty: the product's), whose run
// returns to the firmware, types Return on the serial line once the
// serial output shows typeAt, and returns the lines after PTILAB-END: the
// run ended ok, not through QEMU's debug exit, and the firmware's boot
// manager went on without an exception, which shows that its state
// (stack, registers, GDT, IDT, CR3, CR4, memory) came back intact.
func returnRun(t *testing.T, image, plan, typeAt string) string {
	w := newSerialWatch(typeAt)
	in, keys := io.Pipe()
	defer keys.Close()
	go func() {
		select {
		case <-w.seen[0]:
			keys.Write([]byte("\r"))
		case <-t.Context().Done():
		}
	}()
	res := boot(t, qemu.Options{
		Image:    image,
		Plan:     []byte(plan),
		SerialIn: in,
		Echo:     w,
		StopAt:   regexp.MustCompile(`(?s)PTILAB-END.*(BdsDxe: (loading|starting) Boot|Exception Type)`),
	})
	require.True(t, res.Stopped, "the firmware did not go on after ptilab returned")
	assert.False(t, res.DebugExit)
	lines := res.Lines()
	e := lineIndex(t, lines, "PTILAB-END")
	require.GreaterOrEqual(t, e, 0)
	assert.Equal(t, "ok", ended(t, res).Status)
	after := strings.Join(lines[e+1:], "\n")
	assert.Contains(t, after, "BdsDxe: ", "the boot manager goes on")
	assert.NotContains(t, after, "Exception Type", "the firmware crashed after ptilab returned")
	return after
}

// TestFREDUnsupported: a plan that names the FRED entry and the lass mode
// on a CPU with neither (QEMU's TCG) gets their rows, each unsupported
// with the CPUID bit, beside SYSCALL's measured ones; the run passes.
func TestFREDUnsupported(t *testing.T) {
	res := boot(t, qemu.Options{Plan: []byte("benchmarks = null\nmodes = off,on,lass\nentries = syscall,fred\nflavours = minimal\nglobal = off\nn = 10\nr = 1\nwarmup = 0\n")})
	requireOK(t, res)
	un := recordsOf[contract.Unsupported](t, res)
	require.Len(t, un, 4, "fred under off, on and lass; syscall under lass")
	for _, u := range un {
		if u.Entry == "fred" {
			assert.Contains(t, u.Reason, "no FRED (CPUID.(EAX=07H,ECX=1):EAX[17])")
		} else {
			assert.Equal(t, "lass", u.Mode)
			assert.Contains(t, u.Reason, "no LASS (CPUID.(EAX=07H,ECX=1):EAX[6])")
		}
	}
	assert.Len(t, recordsOf[contract.Syscall](t, res), 2, "syscall under off and on")
	lineIndex(t, res.Lines(), "mode     entry    flavour  global")
}

// uBootTimeout bounds TestUBoot's boot: 4.3 s alone here, U-Boot's
// 2-second autoboot countdown and its disk scan included; 45 s is 4 times
// a run slowed down to 11 s by a loaded machine.
const uBootTimeout = 45 * time.Second

// TestUBoot boots the image under U-Boot's x86-64 UEFI (Debian's
// u-boot-qemu, which starts EFI/BOOT/BOOTX64.EFI from the AHCI disk with
// SSE off: CR0 0x80000011, CR4 0x20) with a short plan that ends with
// end = poweroff, which U-Boot's UEFI cannot do (ResetSystem hangs
// without its poweroff command). It checks that the entry code enabled
// SSE before any Go code and says so in the cpu-state record and line;
// that the run passes both worlds' null call; that each line reaches
// the serial port once (U-Boot's one text output, on its root node,
// writes to that port too: not a screen); that the run says it returns
// to U-Boot instead of powering off; and that U-Boot goes on after the
// return (its boot script's next line), which needs the firmware's state
// back (a firmware FS selector its GDT no longer holds stays null).
func TestUBoot(t *testing.T) {
	const plan = "benchmarks = null,null32\nmodes = off\nflavours = minimal\nglobal = off\nn = 100\nr = 2\nwarmup = 1\nend = poweroff\n"
	res := boot(t, qemu.Options{
		UBoot:   true,
		Plan:    []byte(plan),
		Timeout: uBootTimeout,
		StopAt:  regexp.MustCompile(`(?s)PTILAB-END.*EFI LOAD FAILED: continuing`),
	})
	require.True(t, res.Stopped, "U-Boot did not go on after ptilab returned (QEMU status %d)", res.QEMUStatus)
	requireEndOK(t, res)

	ms := recordsOf[contract.Machine](t, res)
	require.Len(t, ms, 1)
	assert.Equal(t, "Das U-Boot", ms[0].FirmwareVendor)

	sts := recordsOf[contract.CPUState](t, res)
	require.Len(t, sts, 1)
	st := sts[0]
	assert.Equal(t, "0x80000011", st.CR0, "U-Boot's CR0 at entry: PG, ET, PE")
	assert.Equal(t, "0x20", st.CR4, "U-Boot's CR4 at entry: PAE alone")
	assert.Equal(t, "0x2", st.CR0Fixed, "CR0.MP set")
	assert.Equal(t, "0x600", st.CR4Fixed, "CR4.OSFXSR and CR4.OSXMMEXCPT set")
	assert.Equal(t, "0x37f", st.FCW)
	assert.Equal(t, "0x1f80", st.MXCSR)
	assert.False(t, st.PCIDECleared)
	lines := res.Lines()
	lineIndex(t, lines, "ptilab cpu-state: firmware: SSE off at entry (contrary to UEFI 2.10, 2.3.4): ptilab set CR0.MP, set CR4.OSFXSR, set CR4.OSXMMEXCPT; x87 control word 0x37f, MXCSR 0x1f80 at entry | ")

	for _, w := range []int{64, 32} {
		rows := inWorld[contract.Syscall](t, res, w)
		require.NotEmpty(t, rows, "the %d-bit null call", w)
		for _, r := range rows {
			assert.Positive(t, r.Mean, "%s", r.Key())
		}
	}

	count := func(prefix string) int {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 1, count("ptilab: booting"), "each line once on the serial port")
	assert.Equal(t, 1, count("PTILAB-END "), "each line once on the serial port")
	e := lineIndex(t, lines, "PTILAB-END ")
	after := strings.Join(lines[e+1:], "\n")
	assert.Contains(t, after, "ptilab: end = poweroff: U-Boot's UEFI powers off only when built with its poweroff command")
	assert.Contains(t, after, "EFI LOAD FAILED: continuing", "U-Boot's boot script goes on after the image returned")
}

// TestUBootNoSSE boots the image under U-Boot on a CPU model without
// SSE2 (qemu64,-sse2), where the Go runtime cannot run: the entry code,
// before any Go code, writes why on the firmware's console and returns
// EFI_UNSUPPORTED, which U-Boot reports before its boot script goes on.
func TestUBootNoSSE(t *testing.T) {
	res := boot(t, qemu.Options{
		UBoot:   true,
		CPU:     "qemu64,-sse2",
		Timeout: uBootTimeout,
		StopAt:  regexp.MustCompile(`EFI LOAD FAILED: continuing`),
	})
	require.True(t, res.Stopped, "U-Boot did not go on after ptilab returned (QEMU status %d)", res.QEMUStatus)
	lines := res.Lines()
	at := lineIndex(t, lines, "ptilab: cannot run: SSE cannot be enabled, and the Go runtime needs it (CPUID.01H:EDX lacks FXSR, SSE or SSE2")
	require.Greater(t, len(lines), at+1)
	assert.Equal(t, "## Application failed, r = 3", lines[at+1], "U-Boot's report of EFI_UNSUPPORTED")
	_, ended := res.End()
	assert.False(t, ended, "no Go code ran: no PTILAB-END")
}
