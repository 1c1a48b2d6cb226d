package test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/host/qemu"
	"github.com/ptilab/ptilab/pathlength"
)

// cpuStateOf checks that a run printed one cpu-state record, with its
// human lines, before the first benchmark's line and record, that the
// firmware's state in it is long mode's, its core clock coreClock
// ("unsupported" under QEMU's TCG, "aperf/mperf" under Bochs 3.1), and
// no CPUID limit found or cleared (no emulator models
// IA32_MISC_ENABLE[22]: its max leaf unchanged and above 2); it returns
// the record.
func cpuStateOf(t *testing.T, res serialLog, coreClock string) contract.CPUState {
	t.Helper()
	s := onlyRecordOf[contract.CPUState](t, res)
	lines := res.Lines()
	at := lineIndex(t, lines, `PTILAB {"kind":"cpu-state"`)
	assert.Less(t, lineIndex(t, lines, "ptilab cpu-state: firmware at entry: CR0 "), at)
	lineIndex(t, lines, "ptilab cpu-state: MSRs: ")
	for i, l := range lines {
		if strings.HasPrefix(l, `PTILAB {"kind":"timing"`) || strings.HasPrefix(l, `PTILAB {"kind":"syscall"`) {
			assert.Greater(t, i, at, "cpu-state before the benchmarks")
			break
		}
	}
	for _, k := range []string{"cs", "ss", "ds", "es", "fs", "gs", "tr"} {
		assert.Contains(t, s.Selectors, k)
	}
	assert.Equal(t, "0x38", s.Selectors["cs"], "OVMF's 64-bit code selector")
	assert.True(t, hexBit(t, s.CR0, 31), "CR0.PG at entry: %s", s.CR0)
	assert.True(t, hexBit(t, s.EFER, 10), "EFER.LMA at entry: %s", s.EFER)
	assert.True(t, hexBit(t, s.CR4, 5), "CR4.PAE at entry: %s", s.CR4)
	assert.NotEqual(t, "unsupported", s.MSRs["IA32_PAT"], "QEMU has PAT")
	assert.Equal(t, coreClock, s.CoreClock)
	if s.CPUIDLimit != nil {
		assert.False(t, *s.CPUIDLimit, "no emulator sets the CPUID limit")
	}
	assert.False(t, s.CPUIDLimitCleared)
	assert.Equal(t, s.MaxLeafAtEntry, s.MaxLeaf)
	assert.Greater(t, s.MaxLeaf, uint32(2))
	lineIndex(t, lines, fmt.Sprintf("ptilab cpu-state: CPUID max leaf %#x (limit IA32_MISC_ENABLE[22] ", s.MaxLeaf))
	return s
}

// vulnsOf checks that a run printed one vulnerabilities record right
// after the cpu-state record, with its human lines (the heading and one
// line per sysfs entry) before it, every entry filled, and the PTI verdict
// agreeing with the meltdown entry; it returns the record.
func vulnsOf(t *testing.T, res serialLog) contract.Vulnerabilities {
	t.Helper()
	v := onlyRecordOf[contract.Vulnerabilities](t, res)
	lines := res.Lines()
	at := lineIndex(t, lines, `PTILAB {"kind":"vulnerabilities"`)
	assert.Greater(t, at, lineIndex(t, lines, `PTILAB {"kind":"cpu-state"`))
	head := lineIndex(t, lines, "ptilab vulnerabilities: as Linux ")
	assert.Less(t, head, at)
	assert.Equal(t, cpustate.LinuxLogic, v.Linux)
	assert.True(t, v.Hypervisor, "QEMU sets CPUID.01H:ECX[31]")
	for i, n := range cpustate.VulnNames {
		require.NotEmpty(t, v.Table[n], n)
		assert.Equal(t, fmt.Sprintf("ptilab vulnerabilities: %-22s %s", n, v.Table[n]), lines[head+1+i])
	}
	assert.Equal(t, v.PTINeeded, v.Table["meltdown"] == "Mitigation: PTI", "%+v", v)
	return v
}

func hexBit(t *testing.T, s string, bit uint) bool {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	require.NoError(t, err, s)
	return v&(1<<bit) != 0
}

// requireCoreUnsupported checks QEMU's figures and pstate record: no
// core clock anywhere; the SMI count as smi says ("unsupported", or "msr"
// where QEMU's Intel models emulate MSR_SMI_COUNT); no disturbance and no
// P-state write (requireEmulatorCore).
func requireCoreUnsupported(t *testing.T, res serialLog, smi string) {
	t.Helper()
	for _, c := range requireEmulatorCore(t, res, smi) {
		assert.Equal(t, "unsupported", c.CoreClock)
		assert.Zero(t, c.CoreMHz)
		assert.Zero(t, c.CoreMean)
	}
	lineIndex(t, res.Lines(), "core clock: unsupported (no APERF/MPERF)")
}

// requireCoreCountsInstructions checks the figures of Bochs 3.1, which
// implements IA32_APERF and IA32_MPERF and advances both, as its TSC, by
// one per instruction: every figure's core clock is "aperf/mperf" at the
// TSC's rate, a syscall figure's core cycles per call are its TSC figure;
// no SMI count (no MSR_SMI_COUNT); no disturbance and no P-state write
// (requireEmulatorCore: MSR_PLATFORM_INFO is missing).
func requireCoreCountsInstructions(t *testing.T, res serialLog) {
	t.Helper()
	for _, c := range requireEmulatorCore(t, res, "unsupported") {
		assert.Equal(t, "aperf/mperf", c.CoreClock)
	}
	for _, r := range recordsOf[contract.Syscall](t, res) {
		assert.InDelta(t, float64(r.TSCHz)/1e6, r.CoreMHz, 0.001, "%s: core MHz (recorded to 1 kHz)", r.Key())
		assert.InDelta(t, r.Mean, r.CoreMean, 1e-6, "%s: core cycles per call", r.Key())
	}
	lineIndex(t, res.Lines(), "core clock: APERF/MPERF around every repeat; SMIs: unsupported (no MSR_SMI_COUNT)")
}

// requireEmulatorCore checks what an emulator's figures and pstate record
// share: the SMI count as smi says, no NMI counted in a repeat (none is
// injected) and no repeat disturbed, nothing written to a P-state MSR;
// it returns the figures' core fields.
func requireEmulatorCore(t *testing.T, res serialLog, smi string) []contract.Core {
	t.Helper()
	ps := onlyRecordOf[contract.PState](t, res)
	assert.Equal(t, "nominal", ps.Mode)
	assert.False(t, ps.Applied)
	assert.Empty(t, ps.MSR)
	assert.Contains(t, ps.Why, "unsupported")
	var cores []contract.Core
	for _, r := range recordsOf[contract.Syscall](t, res) {
		cores = append(cores, r.Core)
	}
	for _, r := range recordsOf[contract.PingPong](t, res) {
		cores = append(cores, r.Core)
	}
	for _, r := range recordsOf[contract.Messaging](t, res) {
		cores = append(cores, r.Core)
	}
	require.NotEmpty(t, cores)
	for _, c := range cores {
		assert.Equal(t, smi, c.SMICount)
		assert.Zero(t, c.NMIs, "no NMI inside a repeat")
		assert.Zero(t, c.Disturbed, "no SMI or NMI inside a repeat")
		assert.Nil(t, c.Undisturbed)
		assert.Equal(t, "all", c.Headline)
	}
	return cores
}

// Why the performance counters do not count under QEMU's TCG: its
// default CPU (qemu64) is AMD's, its Intel models report CPUID.0AH:EAX = 0.
const (
	pmuAMD    = "AMD: its core performance counters (AMD APM Vol. 2, 13.2) are not programmed by ptilab"
	pmuNoArch = "no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)"
)

// pmuNoMSRs is Bochs's: its models list a version in CPUID.0AH but have
// none of the MSRs, and the first read (IA32_PERF_GLOBAL_CTRL, saved
// before the first write) raises #GP.
var pmuNoMSRs = regexp.MustCompile(`^CPUID\.0AH lists architectural performance monitoring version [1-9][0-9]*, but RDMSR 0x38f raised #GP$`)

// exactly matches s alone.
func exactly(s string) *regexp.Regexp { return regexp.MustCompile("^" + regexp.QuoteMeta(s) + "$") }

// requirePMUUnsupported checks that every syscall, pingpong and messaging
// record of both worlds carries pmu unsupported, with a reason reason
// matches (the CPU's: the 32-bit world's sample call reads the counters
// too), that every null call whose path length is exact carries the
// cross-check "not available" with that reason and the others none, that
// the PMU line says so, and that no table gained the counters' columns.
func requirePMUUnsupported(t *testing.T, res serialLog, reason *regexp.Regexp) {
	t.Helper()
	check := func(c contract.Core, what string) {
		require.NotNil(t, c.PMU, "%s: no pmu", what)
		assert.Regexp(t, reason, c.PMU.Unsupported, what)
		assert.Nil(t, c.PMU.PerOp, what)
	}
	checked := 0
	for _, r := range recordsOf[contract.Syscall](t, res) {
		want, exact := pathlength.Exact(r.Key())
		if !exact {
			assert.Nil(t, r.PMUCheck, "%s: no cross-check", r.Key())
			continue
		}
		require.NotNil(t, r.PMUCheck, r.Key())
		assert.Equal(t, want, r.PMUCheck.Expected)
		why, ok := strings.CutPrefix(r.PMUCheck.Status, "not available: ")
		assert.True(t, ok, "%s: %s", r.Key(), r.PMUCheck.Status)
		assert.Regexp(t, reason, why, r.Key())
		checked++
	}
	t.Logf("cross-checks not available: %d", checked)
	n := 0
	for _, r := range recordsOf[contract.Syscall](t, res) {
		check(r.Core, r.Bench+" "+r.Mode)
		n++
	}
	for _, r := range recordsOf[contract.PingPong](t, res) {
		check(r.Core, r.Bench+" "+r.Mode)
		n++
	}
	for _, r := range recordsOf[contract.Messaging](t, res) {
		check(r.Core, r.Bench+" "+r.Mode)
		n++
	}
	require.NotZero(t, n)
	lines := 0
	for _, l := range res.Lines() {
		assert.NotContains(t, l, "inst/op", "no counter columns without counts")
		if r, ok := strings.CutPrefix(l, "ptilab: PMU: unsupported: "); ok {
			assert.Regexp(t, reason, r)
			lines++
		}
	}
	assert.Equal(t, 1, lines, "one PMU line")
}

// TestMSRRestore boots the test image whose probe (ptilab_msr_probe,
// cmd/ptilab-efi/msrprobe.go) saves IA32_TSC_AUX in the registry of saved
// MSRs and changes it, and saves IA32_EFER to be written back
// through VM_HSAVE_PA, whose WRMSR raises #GP: no emulator has the PMU's or the P-state's
// MSRs, which go through the same registry. Each way out gives
// IA32_TSC_AUX its value back, which reads back as before, and survives
// the other write's #GP, with one msr-restore record (and its line)
// before PTILAB-END: the program's end after the benchmarks, and a kernel
// #GP, whose handler restores from IST1 (a nested #GP there must not land
// on the handler's frames: goos's restoreMSRs lowers IST1).
func TestMSRRestore(t *testing.T) {
	t.Parallel()
	_, image := taggedImage(t, "ptilab_msr_probe")
	for _, tt := range []struct {
		name, plan, at, status string
		exit                   int
	}{
		{"end", "benchmarks = null\nmodes = off\nn = 100\nr = 2\nwarmup = 0\n", "end", "ok", contract.StatusOK},
		{"kernel-gp", "fault = kernel-gp\n", "fault", "fault", contract.StatusFault},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := boot(t, qemu.Options{Image: image, Plan: []byte(tt.plan)})
			lines := res.Lines()
			probe := lines[lineIndex(t, lines, "ptilab: MSR probe (test image, ptilab_msr_probe): ")]
			rs := recordsOf[contract.MSRRestore](t, res)
			require.Len(t, rs, 1, "one way out restores, the next finds nothing left")
			r := rs[0]
			assert.Equal(t, tt.at, r.At)
			require.Len(t, r.MSRs, 2)
			aux, cs := r.MSRs[0], r.MSRs[1]
			assert.Equal(t, "IA32_TSC_AUX", aux.Name)
			assert.Equal(t, "0xc0000103", aux.MSR)
			assert.True(t, aux.Restored)
			assert.Equal(t, aux.Firmware, aux.ReadBack, "IA32_TSC_AUX reads back as the firmware left it")
			fw, err := strconv.ParseUint(strings.TrimPrefix(aux.Firmware, "0x"), 16, 64)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("ptilab: MSR probe (test image, ptilab_msr_probe): IA32_TSC_AUX saved %#x, now %#x; IA32_EFER saved %s, to be written back through 0xc0010117",
				fw, fw^0x5a5a, cs.Firmware), probe, "the probe changed IA32_TSC_AUX")
			assert.Empty(t, aux.Via)
			assert.Equal(t, "IA32_EFER", cs.Name)
			assert.Equal(t, cs.Firmware, cs.ReadBack, "IA32_EFER untouched")
			assert.Equal(t, "0xc0010117", cs.Via)
			assert.False(t, cs.Restored, "WRMSR 0xc0010117 raised #GP, and the run went on")
			assert.NotEmpty(t, cs.ReadBack)

			line := lineIndex(t, lines, "ptilab: MSRs given back their values from before the run ("+tt.at+"): IA32_TSC_AUX "+aux.Firmware+", IA32_EFER "+cs.Firmware+"; IA32_EFER: WRMSR 0xc0010117 raised #GP")
			rec := lineIndex(t, lines, `PTILAB {"kind":"msr-restore"`)
			end := lineIndex(t, lines, "PTILAB-END")
			assert.Equal(t, line+1, rec, "the line, then its record")
			assert.Less(t, rec, end, "restored before PTILAB-END")
			if tt.at == "fault" {
				assert.Greater(t, line, lineIndex(t, lines, "PTILAB-FAULT"), "restored by the kernel's way out, after the dump")
				dumps := 0
				for _, l := range lines {
					if strings.HasPrefix(l, "PTILAB-FAULT") {
						dumps++
					}
				}
				assert.Equal(t, 1, dumps, "the deliberate fault's dump alone: the restore's #GP was fixed up")
			}
			e := ended(t, res)
			assert.Equal(t, tt.status, e.Status)
			assert.Equal(t, tt.exit, e.Exit)
		})
	}
}
