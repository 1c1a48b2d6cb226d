package test

import (
	"debug/elf"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/host/bochs"
	"github.com/ptilab/ptilab/pathlength"
)

// The Bochs boot tests. Bochs implements PCID with its #GP rules (QEMU's
// TCG has none), so these are the tests that execute ptilab's on+pcid
// paths; its TSC counts instructions, so its figures are path lengths.
// Bochs runs 35 to 46 million instructions per second: about 12 s of each
// boot is OVMF's start-up, and the plans are kept small.

// bochsModel is a Bochs CPU model the matrix runs on and what it has.
// With amd, Bochs runs with ignore_bad_msrs=1: OVMF reads AMD's
// SEV_STATUS (C001_0131H), which the model lacks, before it has an
// exception handler, and Bochs's msrs.def cannot name an MSR that high;
// the matrix then checks which MSRs the model lacks were read, and that
// no figure came from one.
type bochsModel struct {
	name                string
	pcid, invpcid, smap bool
	amd                 bool
}

// bochsModels are the Bochs CPU models the matrix runs on: the default
// (PCID, INVPCID, SMEP); the seeds' CPU class, Ivy Bridge (PCID without
// INVPCID, as the reference Xeon E5-1620 v2; no SMAP); and AMD family 17H
// (no PCID in the model, no MSR_SMI_COUNT, another PMU). SMAP is
// wildcat_lake's too (TestBochsFRED).
var bochsModels = []bochsModel{
	{name: bochs.DefaultCPU, pcid: true, invpcid: true},
	{name: "corei7_ivy_bridge_3770k", pcid: true},
	{name: "ryzen", smap: true, amd: true},
}

// Timeouts of the Bochs boots, 4 times or more their duration in the
// suite here (two boots at a time on two cores, with other emulators on
// the machine): a matrix boot took 32 to 96 s, a fault boot 30 to 50 s.
const (
	bochsMatrixTimeout = 8 * time.Minute
	bochsFaultTimeout  = 4 * time.Minute
)

// bochsPlan is the PCID matrix: the 64-bit benchmarks under off, on,
// on+pcid and the deferred modes' PCID variants (bochsDeferredPCID), the
// flush costs (PCID and INVPCID rows where the model has them), then the
// 32-bit world, entered after the on+pcid runs (leaving long mode with
// CR4.PCIDE set would be #GP: each run restores the Go world's CR4).
const bochsPlan = "benchmarks = null,lseek,pingpong,messaging,probe,flushcost,null32,messaging32,probe32\nmodes = " + bochsModes + "\n" + pathLengthSizes

// bochsModes are bochsPlan's modes.
const bochsModes = "off,on,on+pcid,on-defer+pcid,on-noswitch+pcid"

// bochsDeferredPCID are the deferred modes' PCID variants, which only
// Bochs runs.
var bochsDeferredPCID = []string{"on-defer+pcid", "on-noswitch+pcid"}

// bochsSockets boots sched-messaging over socket pairs in both worlds
// under off, on and on+pcid (64-bit only: not in PAE) on Bochs's default
// model, checks every message counted and checksummed and every figure
// held to the table (pathLengths), on+pcid's paths (which only Bochs
// runs) longer than on's, and returns the path lengths.
func bochsSockets(t *testing.T) map[string]float64 {
	res := bootBochs(t, bochs.Options{Plan: []byte(pathLengthSocketPlan("off,on,on+pcid")), Timeout: bochsMatrixTimeout})
	requireBochsOK(t, res)
	got, _ := pathLengths(t, res)
	require.Len(t, got, 10, "64-bit off, on, on+pcid and 32-bit off, on, processes and threads: %v", got)
	requireRows(t, got, func(f map[string]string) bool {
		return f["ipc"] == "socket" && (slices.Contains([]string{"off", "on"}, f["mode"]) || f["mode"] == "on+pcid" && f["width"] == "64")
	})
	for k := range got {
		if keyField(k, "mode") == "on+pcid" {
			assert.Greater(t, got[k], got[withField(k, "mode", "on")], k)
		}
	}
	return got
}

// repStrings are the REP string instructions per call of the paths that
// have them: the pt_regs copies of the 32-bit linux trampolines (in and
// out by REP MOVSL or REP MOVSB; trim8 copies out without one; direct
// copies nothing).
var repStrings = map[string]float64{
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=movsl global=off": 2,
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=movsl global=off":  2,
	"bench=null32 width=32 mode=off entry=int80 flavour=linux global=off":               2,
	"bench=null32 width=32 mode=on entry=int80 flavour=linux global=off":                2,
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=movsb global=off": 2,
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=movsb global=off":  2,
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=trim8 global=off": 1,
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=trim8 global=off":  1,
}

// bochsVsQEMU compares the figures both emulators measured. They count the
// same instructions but for two things, measured when the Bochs tests
// were written:
//   - a REP string instruction counts its iterations under Bochs and one
//     more under QEMU's icount (the 32-bit trampoline's copy-in phase, 17
//     REP MOVSL iterations and 10 other instructions, is 27 under Bochs,
//     28 under QEMU; the phases without REP agree);
//   - the timed interval itself (RDTSC to RDTSCP) counts one instruction
//     more under QEMU: the null and lseek figures subtract the empty loop,
//     which cancels it (its 100 calls cost 6.07 per call under Bochs, 6.08
//     under QEMU); the ping-pong does not, and differs by one instruction
//     per repeat, 1/pingpong_n per round trip. sched-messaging is timed in
//     the kernel and agrees; the 32-bit one's copies (copyBytes: REP MOVSL,
//     REP MOVSB) count about 2 more per message under QEMU.
//
// The instrumented trampolines (stamps) and the rows with global pages
// (which equal the others: bochsMatrix) are not compared.
func bochsVsQEMU(t *testing.T, q, b map[string]float64) {
	compared := 0
	for k, qv := range q {
		bv, ok := b[k]
		if !ok || keyField(k, "stamps") == "on" || keyField(k, "global") == "on" {
			continue
		}
		compared++
		bench, width := keyField(k, "bench"), keyField(k, "width")
		switch {
		case bench == "pingpong" && width == "64":
			assert.InDelta(t, 1.0/pathLengthPingPongN, qv-bv, 0.002, "%s: QEMU %v, Bochs %v", k, qv, bv)
		case bench == "messaging" && width == "64":
			assert.InDelta(t, qv, bv, 0.002, "%s", k)
		case bench == "messaging" && width == "32":
			assert.True(t, qv-bv > 1 && qv-bv < 4, "%s: QEMU %v, Bochs %v: the REP string instructions of the 32-bit kernel's copies per message", k, qv, bv)
		default:
			assert.Equal(t, repStrings[k], qv-bv, "%s: QEMU %v, Bochs %v, REP string instructions %v", k, qv, bv, repStrings[k])
		}
	}
	assert.Equal(t, 4+2+4+4+14+4, compared, "null, lseek, ping-pong, messaging, null32 and messaging32 (over pipes) under off and on")
}

// requireBochsOK checks that a Bochs run ended normally: the image powered
// Bochs off (status 1, its ACPI soft-off) after PTILAB-END status "ok"
// with every check passed.
func requireBochsOK(t *testing.T, res *bochs.Result) {
	t.Helper()
	status, ok := res.ImageStatus()
	require.True(t, ok, "no PTILAB-END line (Bochs status %d: %s)", res.BochsStatus, res.Message())
	assert.Equal(t, 0, status)
	assert.False(t, res.Stopped, "the image did not power Bochs off")
	assert.Equal(t, 1, res.BochsStatus, "Bochs exits 1 at the image's power-off: %s", res.Message())
	requireEndOK(t, res)
}

// unknownMSR matches Bochs's log line for an MSR its model lacks, which
// raises #GP (ignore_bad_msrs=0).
var unknownMSR = regexp.MustCompile(`(RD|WR)MSR: Unknown register (0x[0-9a-f]+)`)

// bochsMatrix boots bochsPlan on model and checks: the machine is named
// Bochs, with the model's PCID, INVPCID and SMAP, and its figures
// instructions; every 64-bit on+pcid row measured where the model has
// PCID, else unsupported with the reason; the flush costs' PCID and
// INVPCID rows likewise; the isolation probe's on+pcid rows as on's; the
// 32-bit world's checks after the on+pcid runs; every check passed; no MSR
// but the microcode probe's (which reads through the #GP-safe path) missing
// from the model, and on AMD (ignore_bad_msrs) no figure from one; and
// every path length held to the table (pathLengths: its bound, exact where
// the path is; every row of the plan's configurations measured).
// It returns the path lengths.
func bochsMatrix(t *testing.T, model bochsModel) map[string]float64 {
	res := bootBochs(t, bochs.Options{CPU: model.name, Plan: []byte(bochsPlan), Timeout: bochsMatrixTimeout, IgnoreBadMSRs: model.amd})
	requireBochsOK(t, res)

	ms := recordsOf[contract.Machine](t, res)
	require.Len(t, ms, 1)
	m := ms[0]
	assert.Equal(t, "bochs", m.Board)
	assert.Equal(t, "bochs", m.Emulator)
	assert.Equal(t, model.pcid, m.PCID, "PCID")
	assert.Equal(t, model.invpcid, m.INVPCID, "INVPCID")
	assert.Equal(t, model.smap, m.SMAP, "SMAP")
	assert.Equal(t, map[bool]string{false: "GenuineIntel", true: "AuthenticAMD"}[model.amd], m.Vendor)
	assert.Nil(t, m.Microcode, "the microcode revision MSR (8BH) is not in Bochs's models: unreadable, not 0")
	assert.InEpsilon(t, float64(bochs.IPS), float64(m.TSCHz), 1e-3, "Bochs's TSC ticks at its emulated instruction rate")
	timings := recordsOf[contract.Timing](t, res)
	require.Len(t, timings, 1)
	assert.True(t, timings[0].Emulated)
	assert.Equal(t, "bochs", timings[0].Emulator)
	assert.True(t, timings[0].Icount)
	probed := map[string]bool{"0x8b": true} // the microcode probe
	for _, msr := range cpustate.ProbedMSRs {
		probed[fmt.Sprintf("%#x", msr)] = true
	}
	// The PMU's start: its first read (#GP-safe, the value saved before
	// the first write), which Bochs's models, listing a version in
	// CPUID.0AH, refuse.
	probed[fmt.Sprintf("%#x", amd64.MSR_IA32_PERF_GLOBAL_CTRL)] = true
	if model.amd {
		// Read as 0 under ignore_bad_msrs: SEV_STATUS by OVMF; by ptilab,
		// the microcode probe (unreadable: Microcode nil above) and
		// DE_CFG (C001_1029H), whose LFENCE-serializing bit the write does
		// not set: "de_cfg not set", not "de_cfg".
		probed["0xc0010131"], probed["0xc0011029"] = true, true
		assert.Equal(t, "de_cfg not set", timings[0].LFENCE, "DE_CFG reads 0 and keeps no write")
	}
	for _, line := range unknownMSR.FindAllStringSubmatch(string(res.Log), -1) {
		assert.True(t, probed[line[2]], "only the microcode probe and the cpu-state's #GP-safe reads touch an MSR the model lacks: %s", line[0])
	}
	st := cpuStateOf(t, res, "aperf/mperf")
	assert.Equal(t, "unsupported", st.SMICount, "Bochs has no MSR_SMI_COUNT")
	requireCoreCountsInstructions(t, res)
	if model.amd {
		requirePMUUnsupported(t, res, exactly(pmuAMD))
	} else {
		requirePMUUnsupported(t, res, pmuNoMSRs)
	}

	// Every 64-bit row measured, on+pcid included where the model has
	// PCID; the flush costs' rows where it has PCID and INVPCID.
	flushUnsup := 0
	for _, f := range recordsOf[contract.Unsupported](t, res) {
		if f.Bench == "flushcost" {
			flushUnsup++
			if strings.HasPrefix(f.Target, "invpcid") && !model.invpcid {
				assert.Equal(t, "no INVPCID (CPUID.(EAX=07H,ECX=0):EBX[10])", f.Reason, f.Target)
				continue
			}
			assert.False(t, model.pcid, "%s: unsupported on a model with PCID: %s", f.Target, f.Reason)
			assert.Contains(t, []string{"no PCID (CPUID.01H:ECX[17])", "no INVPCID (CPUID.(EAX=07H,ECX=0):EBX[10])"}, f.Reason, f.Target)
			continue
		}
		if f.Width == 64 && !model.pcid && strings.HasSuffix(f.Mode, "+pcid") {
			assert.Contains(t, f.Reason, "PCID: not supported by this CPU", "%+v", f)
			continue
		}
		if f.Width == 64 {
			assert.Fail(t, "a 64-bit row unsupported under Bochs", "%+v", f)
			continue
		}
		if slices.Contains(bochsDeferredPCID, f.Mode) {
			assert.Contains(t, f.Reason, "isolation mode "+f.Mode+": not in PAE", "the deferred modes are the 64-bit world's")
			continue
		}
		assert.Equal(t, "on+pcid", f.Mode, "only the 32-bit world's PCID rows are unsupported")
		assert.Contains(t, f.Reason, "PCID: not in PAE")
	}
	pcid := map[string]int{}
	deferredPCID := map[string]int{}
	count := func(s contract.Subject, st contract.Stats) {
		if s.Mode == "on+pcid" {
			pcid[s.Bench]++
			assert.Positive(t, st.Mean, "%+v", s)
		}
		if slices.Contains(bochsDeferredPCID, s.Mode) {
			deferredPCID[s.Mode+" "+s.Bench]++
			assert.Positive(t, st.Mean, "%+v", s)
		}
	}
	for _, f := range recordsOf[contract.Syscall](t, res) {
		count(f.Subject, f.Stats)
	}
	for _, f := range recordsOf[contract.PingPong](t, res) {
		count(f.Subject, f.Stats)
	}
	for _, f := range recordsOf[contract.Messaging](t, res) {
		count(f.Subject, f.Stats)
	}
	wantFlush := map[[2]bool]int{{true, true}: 0, {true, false}: 4, {false, false}: 6}[[2]bool{model.pcid, model.invpcid}]
	assert.Equal(t, wantFlush, flushUnsup, "flush costs unsupported: the INVPCID rows without INVPCID, the MOV to CR3 PCID rows too without PCID")
	if !model.pcid {
		assert.Empty(t, pcid, "no PCID: no on+pcid row measured")
		assert.Empty(t, deferredPCID)
	} else {
		checkBochsPCIDRows(t, res, pcid, deferredPCID)
	}

	// The 32-bit world, entered after the on+pcid runs.
	checks := map[string]bool{}
	for _, f := range recordsOf[contract.Check](t, res) {
		checks[f.Name] = f.OK
	}
	for _, c := range checkNames32 {
		assert.True(t, checks[c], "check %s", c)
	}

	got, stamps := pathLengths(t, res)
	flush := map[string]float64{}
	for _, r := range recordsOf[contract.FlushCost](t, res) {
		flush[r.Key()] = r.PerOp.Mean
	}
	assert.Len(t, flush, 10-wantFlush, "every flush operation the model has measured")
	holdPathLengths(t, flush)
	maps.Copy(got, flush)
	modes := strings.Split(bochsModes, ",")
	if !model.pcid {
		modes = []string{"off", "on"}
	}
	requireRows(t, got, func(f map[string]string) bool {
		w64 := f["width"] == "64" && slices.Contains([]string{"null", "lseek", "pingpong", "messaging"}, f["bench"])
		w32 := f["width"] == "32" && slices.Contains([]string{"null32", "messaging"}, f["bench"])
		return (w64 || w32) && slices.Contains(modes, f["mode"]) && f["ipc"] != "socket"
	})
	with := withField
	for k := range got {
		if keyField(k, "bench") == "null" && keyField(k, "mode") == "on+pcid" {
			assert.Greater(t, got[k], got[with(k, "mode", "on")], k)
			assert.Greater(t, got[with(k, "mode", "on-defer+pcid")], got[k], "on-defer+pcid: on+pcid's switch and a dispatcher's call")
			assert.Less(t, got[with(k, "mode", "on-noswitch+pcid")], got[k], "on-noswitch+pcid's getppid writes no CR3")
			assert.LessOrEqual(t, got[with(k, "mode", "on-noswitch+pcid")], got[with(k, "mode", "off")], "on-noswitch+pcid's getppid is no longer than off's")
		}
		if keyField(k, "mode") == "on" {
			assert.Greater(t, got[k], got[with(k, "mode", "off")], k)
		}
		// Global pages change no path: those rows equal the others.
		if keyField(k, "global") == "on" {
			assert.Equal(t, got[with(k, "global", "off")], got[k], "%s: global pages change no path", k)
		}
	}
	checkStamps(t, stamps)
	t.Logf("instructions per call under Bochs (%s): %v", model.name, got)
	return got
}

// checkBochsPCIDRows checks a matrix run on a model with PCID: every
// on+pcid row of the plan measured (pcid: rows by benchmark), the deferred
// modes' PCID variants run every row on+pcid runs, and the isolation
// probe's on+pcid rows as on's.
func checkBochsPCIDRows(t *testing.T, res serialLog, pcid, deferredPCID map[string]int) {
	t.Helper()
	assert.Equal(t, map[string]int{"null": 4, "lseek": 2, "pingpong": 2, "messaging": 2}, pcid,
		"on+pcid: null 2 flavours x 2 global settings, lseek 2 global settings, ping-pong and messaging processes and threads")
	want := map[string]int{}
	for _, m := range bochsDeferredPCID {
		for b, n := range pcid {
			want[m+" "+b] = n
		}
	}
	assert.Equal(t, want, deferredPCID, "the deferred modes' PCID variants run every row on+pcid runs")

	// The probe: on+pcid maps as on does.
	probe := map[string]map[string]string{} // target -> mode -> outcome
	for _, f := range inWorld[contract.Probe](t, res, 64) {
		if probe[f.Target] == nil {
			probe[f.Target] = map[string]string{}
		}
		var present, vector any = nil, nil
		if f.ProbeFault != nil {
			present, vector = f.Present, f.Vector
		}
		probe[f.Target][f.Mode] = fmt.Sprintf("faulted %v present %v vector %v", f.Faulted, present, vector)
	}
	require.Len(t, probe, 5, "kernel text, entry area, own page, defer area, sensitive page")
	for target, modes := range probe {
		require.Contains(t, modes, "on+pcid", target)
		assert.Equal(t, modes["on"], modes["on+pcid"], "%s: on+pcid as on", target)
		for _, m := range bochsDeferredPCID {
			if target == "defer area" {
				assert.Equal(t, "faulted true present true vector 14", modes[m], "%s: the trampoline stack is mapped supervisor-only under %s", target, m)
				continue
			}
			assert.Equal(t, modes["on"], modes[m], "%s: %s as on", target, m)
		}
	}
	assert.Equal(t, "faulted true present false vector 14", probe["defer area"]["on+pcid"], "the trampoline stack is not mapped under on+pcid")
	assert.Equal(t, "faulted true present false vector 14", probe["kernel text"]["on+pcid"], "kernel text not mapped under on+pcid")
	assert.Equal(t, "faulted true present false vector 14", probe["sensitive page"]["on+pcid"], "the sensitive page not mapped under on+pcid")
	assert.Equal(t, "faulted true present true vector 14", probe["entry area"]["on+pcid"])
	assert.Regexp(t, `(?m)^kernel text\s+0x[0-9a-f]+\s+#PF P=1 \(error 0x5\)\s+#PF P=0 \(error 0x4\)\s+#PF P=0 \(error 0x4\)(\s+#PF P=0 \(error 0x4\)){2}$`, strings.Join(res.Lines(), "\n"))
}

// bootTaggedPCID boots, in parallel with the other tests, the test image
// built with tags on Bochs's default model (PCID) with a short plan of
// benchmarks under off and on+pcid, plus extra (plan lines); stopAt is
// as bochs.Options.StopAt. It returns the image's ELF path and the
// result.
func bootTaggedPCID(t *testing.T, tags []string, benchmarks, extra string, stopAt *regexp.Regexp) (string, *bochs.Result) {
	t.Helper()
	t.Parallel()
	elfPath, image := taggedImage(t, tags...)
	return elfPath, runBochs(t, bochs.Options{
		Image:   image,
		Plan:    []byte("benchmarks = " + benchmarks + "\nmodes = off,on+pcid\nflavours = minimal\nglobal = off\nn = 10\nr = 1\nwarmup = 0\n" + extra),
		Timeout: bochsFaultTimeout,
		StopAt:  stopAt,
	})
}

// TestBochsPCIDEOrder boots a test image with a bug planted
// (ptilab_bug_pcide: the kernel PCID in CR3 before CR4.PCIDE is set) and
// checks that Bochs catches it: MOV to CR4 raises #GP in pti.enterUser, a
// kernel fault (dump, call chain, status 3) with no Go traceback, which
// could not unwind through enterUser. The production image runs the same
// path in the matrix and passes; QEMU, without PCID, never runs it.
func TestBochsPCIDEOrder(t *testing.T) {
	elfPath, res := bootTaggedPCID(t, []string{"ptilab_bug_pcide"}, "null", "", nil)
	status, ok := res.ImageStatus()
	require.True(t, ok, "no PTILAB-END line")
	assert.Equal(t, 3, status, "the fault status")
	first, ok := res.Fault()
	require.True(t, ok, "no PTILAB-FAULT line")
	assert.Equal(t, "PTILAB-FAULT #GP general protection in kernel, error 0x0", first)

	lines := res.Lines()
	at := lineIndex(t, lines, "PTILAB-FAULT")
	require.Greater(t, len(lines), at+8, "register dump cut short")
	cr3 := regexp.MustCompile(`\bCR3 0x([0-9a-f]+)`).FindStringSubmatch(lines[at+2])
	require.NotNil(t, cr3, lines[at+2])
	v, err := strconv.ParseUint(cr3[1], 16, 64)
	require.NoError(t, err)
	assert.NotZero(t, v&0xfff, "CR3[11:0] holds the PCID at the fault")
	assert.Regexp(t, `^\s+kernel call chain \(ELF\):( 0x[0-9a-f]+)+$`, lines[at+8])

	fs := recordsOf[contract.Fault](t, res)
	require.Len(t, fs, 1)
	f := fs[0]
	assert.EqualValues(t, 13, f.Vector)
	assert.Equal(t, "kernel", f.In)
	rip, err := strconv.ParseUint(strings.TrimPrefix(f.ELFRIP, "0x"), 16, 64)
	require.NoError(t, err)
	assert.Equal(t, "github.com/ptilab/ptilab/pti.enterUser", funcAt(t, elfPath, rip))

	for _, l := range lines[at:] {
		assert.NotRegexp(t, `^goroutine \d+ \[`, l, "no Go traceback for a kernel fault")
		assert.NotContains(t, l, "unexpected SPWRITE")
	}
	// The off row ran; the fault came with the first on+pcid run.
	rows := recordsOf[contract.Syscall](t, res)
	require.Len(t, rows, 1)
	assert.Equal(t, "off", rows[0].Mode)
	e := ended(t, res)
	assert.Equal(t, "fault", e.Status)
	assert.Equal(t, contract.StatusFault, e.Exit)
}

// TestBochsFirmwarePCIDE boots a test image that plays a firmware running
// with CR4.PCIDE and CR4.PGE set and PCID 1 in its CR3 (ptilab_fw_pcide:
// set by the entry code before it records the firmware's state) on
// Bochs's PCID model. Boot must clear PCIDE (the cpu-state record and
// line say so), so that the 32-bit world can leave long mode, and toggle
// PGE (dropFirmwareGlobals); the firmware gate must load the firmware's
// CR4 before its CR3 (PCIDE may be set only with CR3[11:0] = 0) in every
// firmware call and on the way back: the run passes the 32-bit and the
// 64-bit on+pcid null calls and returns to the firmware (end = return),
// whose boot manager goes on.
//
// The image (oddFirmware) also runs the firmware on a code selector
// that collides with ptilab's GDT, so the gate takes the copy of the
// firmware's GDT here too, and leaves a global TLB entry behind before it
// returns (goos's plantGlobalProbe; the kernel runs with the firmware's
// PGE), which Bochs, unlike QEMU's TCG, keeps across a CR3 load; the
// global pages that board.End drops before the return must take it with
// them.
func TestBochsFirmwarePCIDE(t *testing.T) {
	_, res := bootTaggedPCID(t, oddFirmware, "null,null32", "end = return\n",
		regexp.MustCompile(`(?s)PTILAB-END.*(BdsDxe: starting |Exception Type)`))
	requireGDTCopy(t, res)
	require.True(t, res.Stopped, "the firmware's boot manager did not go on after the return")
	after := strings.Join(res.Lines()[lineIndex(t, res.Lines(), "PTILAB-END"):], "\n")
	assert.NotContains(t, after, "Exception Type", "the firmware crashed after ptilab returned")
	assert.Contains(t, after, "\nptilab: global-page probe (test image, ptilab_global_probe): stale global entry used after a CR3 load: yes; after the global pages were dropped: no\n",
		"Bochs kept the global entry across the CR3 load, and the drop of the global pages took it")
	status, ok := res.ImageStatus()
	require.True(t, ok, "no PTILAB-END line (Bochs status %d: %s)", res.BochsStatus, res.Message())
	assert.Equal(t, 0, status)
	requireEndOK(t, res)
	sts := recordsOf[contract.CPUState](t, res)
	require.Len(t, sts, 1)
	assert.True(t, hexBit(t, sts[0].CR4, 17), "CR4.PCIDE at entry: %s", sts[0].CR4)
	assert.True(t, hexBit(t, sts[0].CR4, 7), "CR4.PGE at entry: %s", sts[0].CR4)
	assert.True(t, sts[0].PCIDECleared)
	assert.Empty(t, sts[0].CR0Fixed, "OVMF enables SSE")
	assert.Empty(t, sts[0].CR4Fixed)
	lineIndex(t, res.Lines(), "ptilab cpu-state: firmware: SSE enabled by the firmware; x87 control word 0x37f, MXCSR 0x1f80 at entry | CR4.PCIDE set at entry: cleared by ptilab | ")
	measured := map[string]int{}
	for _, r := range recordsOf[contract.Syscall](t, res) {
		measured[fmt.Sprintf("%d %s", r.Width, r.Mode)]++
		assert.Positive(t, r.Mean, "%s", r.Key())
	}
	assert.Equal(t, map[string]int{"64 off": 1, "64 on+pcid": 1, "32 off": 2}, measured,
		"the 64-bit rows and the 32-bit ones, SYSENTER and INT 0x80 (PCID rows: not in PAE)")
}

// funcAt returns the name of the function of the ELF file at path that
// holds address addr, "?" when none does.
func funcAt(t *testing.T, path string, addr uint64) string {
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.Symbols()
	require.NoError(t, err)
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && addr >= s.Value && addr < s.Value+s.Size {
			return strings.TrimSuffix(s.Name, ".abi0") // an assembly function's ABI0 symbol
		}
	}
	return "?"
}

// TestBochsFault makes the image fault in Go code under Bochs: the
// register dump, the Go traceback and the fault status, as under QEMU.
func TestBochsFault(t *testing.T) {
	res := bootBochs(t, bochs.Options{Plan: []byte("fault = pf\n"), Timeout: bochsFaultTimeout})
	status, ok := res.ImageStatus()
	require.True(t, ok, "no PTILAB-END line")
	assert.Equal(t, 3, status)
	checkGoFault(t, res, 14, "PTILAB-FAULT #PF page fault in Go code, error 0x0 [not present, read]",
		"panic: ptilab: CPU exception #PF page fault", []string{"CR2 0x0000000000000010"})
}

// TestBochsPingPongFirst is TestPingPongFirst under Bochs, whose IRETQ
// handles the segment registers on its own code. Its cpu-state record is
// checked too (checkBochsCPUState), and its TSC references
// (checkBochsTSCReferences).
func TestBochsPingPongFirst(t *testing.T) {
	res := bootBochs(t, bochs.Options{Plan: []byte(pingPongFirstPlan), Timeout: bochsFaultTimeout})
	requireBochsOK(t, res)
	checkPingPongFirst(t, res)
	checkBochsCPUState(t, res)
	checkBochsTSCReferences(t, res)
}

// checkBochsTSCReferences checks the machine record of a boot under
// Bochs's i440FX as ptilab's runner configures it: Bochs emulates an
// HPET at 0FED00000H there (iodev/hpet.cc), but the firmware publishes
// neither an ACPI HPET table nor a PM timer (so found with Debian's OVMF
// 2022.11 on the pinned Bochs), so the TSC is measured against the PIT,
// undisturbed at the first one-shot: the emulated machine has no SMIs
// and its time follows the instruction count.
func checkBochsTSCReferences(t *testing.T, res *bochs.Result) {
	t.Helper()
	ms := recordsOf[contract.Machine](t, res)
	require.Len(t, ms, 1)
	m := ms[0]
	assert.Equal(t, "pit", m.TSCMeasuredBy)
	assert.Equal(t, "not present", m.TSCPMTimerError)
	assert.Equal(t, "no HPET table", m.TSCHPETError)
	assert.Zero(t, m.HPETPeriodFs)
	require.NotNil(t, m.TSCPITRetries, "the PIT was tried")
	assert.Zero(t, *m.TSCPITRetries)
	assert.Empty(t, m.TSCPITError)
	assert.Contains(t, res.Lines()[lineIndex(t, res.Lines(), "ptilab machine:")], "ACPI PM timer: not present, HPET: no HPET table)")
}

// checkBochsCPUState checks the cpu-state and vulnerabilities records of a
// boot on Bochs's default model (Intel 06_3CH), which has neither
// IA32_MISC_ENABLE nor MSR_CORE_THREAD_COUNT: both were read (Bochs logs
// the #GP of each), the boot survived it, the CPUID limit is not
// known, never written, and CPUID decides SMT in both records.
func checkBochsCPUState(t *testing.T, res *bochs.Result) {
	t.Helper()
	st := cpuStateOf(t, res, "aperf/mperf")
	assert.Nil(t, st.CPUIDLimit, "Bochs has no IA32_MISC_ENABLE")
	assert.Equal(t, "cpuid", st.SMTSource, "Bochs has no MSR_CORE_THREAD_COUNT")
	assert.Zero(t, st.ThreadCount)
	vs := recordsOf[contract.Vulnerabilities](t, res)
	require.Len(t, vs, 1)
	assert.Equal(t, st.SMT, vs[0].SMT)
	assert.Equal(t, "cpuid", vs[0].SMTSource)
	unknown := map[string]bool{}
	for _, line := range unknownMSR.FindAllStringSubmatch(string(res.Log), -1) {
		unknown[line[1]+" "+line[2]] = true
	}
	assert.True(t, unknown[fmt.Sprintf("RD %#x", amd64.MSR_IA32_MISC_ENABLE)], "IA32_MISC_ENABLE read: %v", unknown)
	assert.True(t, unknown[fmt.Sprintf("RD %#x", amd64.MSR_CORE_THREAD_COUNT)], "MSR_CORE_THREAD_COUNT read: %v", unknown)
	assert.False(t, unknown[fmt.Sprintf("WR %#x", amd64.MSR_IA32_MISC_ENABLE)], "IA32_MISC_ENABLE never written")
}

// TestBochsRetention runs the TLB retention proof under Bochs, whose TLB
// is not tagged by PCID: it ignores NOFLUSH and drops every non-global
// entry on each CR3 write (bochs.md), so the PCID probe sees frame B
// (walked again), while it keeps global entries across a CR3 write with
// CR4.PGE set, so the global probe sees frame A (kept).
//
// The leak oracle rides on the same boot: Bochs's TSC counts
// instructions, so it is unavailable; its model has RDTSCP and PCID, so
// on+pcid's secret reads run too (P=0, as on's), and asi+pcid's beside
// asi's.
func TestBochsRetention(t *testing.T) {
	res := bootBochs(t, bochs.Options{Plan: []byte(retentionPlan), Timeout: bochsFaultTimeout})
	requireBochsOK(t, res)
	checkRetention(t, res, map[string]string{"pcid-noflush": "walked again", "global": "kept"})
	checkOracle(t, res, 100, true, "off", "on", "on+pcid", "asi", "asi+pcid")
	checkASIIsolation(t, res, "asi", "asi+pcid")
}

// TestBochsFlushCost times the flush operations under Bochs, whose CPU
// model has PCID and INVPCID: every row measured, in instructions, and
// held to the table; and runs the TLB sweep (flushSweepPlan) under off,
// on and on+pcid: every row measured and held to the table (on+pcid's
// rows, which only Bochs runs, were measured here: its boot took 2m48s
// under load, the image's run 9.6 s of it: the matrix's timeout), on+pcid
// 2 instructions over on.
func TestBochsFlushCost(t *testing.T) {
	res := bootBochs(t, bochs.Options{Plan: []byte(flushSweepPlan), Timeout: bochsMatrixTimeout})
	requireBochsOK(t, res)
	checkFlushPathLengths(t, res, checkFlushCost(t, res, "instructions"))
	got := checkSweep(t, res, "instructions", sweepPoints, []string{"off", "on", "on+pcid"}, []bool{false})
	checkSweepPathLengths(t, res, got)
	for p, v := range got {
		if p.mode == "on+pcid" {
			on := p
			on.mode = "on"
			assert.Equal(t, got[on]+2, v, "%s: NOFLUSH set each way", p)
		}
	}
	t.Logf("the sweep's instructions per call under Bochs: %v", got)
}

// pmuCheckPlan times the null call in both worlds (with the 32-bit copy
// methods, whose direct one is exact) at pathLengthSizes's sizes.
const pmuCheckPlan = "benchmarks = null,null32\n" + pathLengthSizes

// TestBochsPMUCheckTSC runs the PMU cross-check end to end under Bochs,
// on a test image (ptilab_pmu_tsc, bench/pmutsc.go) in which
// IA32_TSC, which counts instructions there, stands in for fixed counter 0
// (INST_RETIRED.ANY): both worlds' sample calls read it around every
// repeat (the 32-bit kernel's by RDMSR too), every figure carries
// "instructions" per operation, and every exact path's cross-check says
// "ok" with the table's count: the sample calls and the loops cancel as
// bench/pmucheck.go says. A path with REP string instructions has none.
func TestBochsPMUCheckTSC(t *testing.T) {
	_, image := taggedImage(t, "ptilab_pmu_tsc")
	res := bootBochs(t, bochs.Options{Image: image, Plan: []byte(pmuCheckPlan), Timeout: bochsMatrixTimeout})
	requireBochsOK(t, res)
	assert.Contains(t, strings.Join(res.Lines(), "\n"), "; test image (ptilab_pmu_tsc): IA32_TSC read as instructions")
	checked := map[int]int{}
	for _, f := range recordsOf[contract.Syscall](t, res) {
		k := f.Key()
		if f.Stamps {
			assert.Equal(t, "not sampled around every repeat", f.PMU.Unsupported, "%s: the instrumented runs are sampled around the run", k)
			continue
		}
		require.NotNil(t, f.PMU, k)
		assert.Empty(t, f.PMU.Unsupported, k)
		assert.Greater(t, f.PMU.PerOp["instructions"], f.Mean, "%s: the loop and the sample calls' share on top of the path", k)
		want, exact := pathlength.Exact(k)
		if !exact {
			assert.Nil(t, f.PMUCheck, k)
			continue
		}
		require.NotNil(t, f.PMUCheck, k)
		assert.Equal(t, contract.PMUCheck{Status: "ok", Expected: want, Measured: float64(want), Repeats: 3, EmptyRepeats: 3}, *f.PMUCheck, k)
		checked[f.Width]++
		t.Logf("%s (global %v): %v instructions per call, %v per call with the loop and the sample calls' share, cross-check %s", k, f.Global, f.Mean, f.PMU.PerOp["instructions"], f.PMUCheck.Status)
	}
	// 64-bit: off, on and on+pcid, minimal and linux, global pages off
	// and on; 32-bit: off and on, the minimal ones by SYSENTER and INT
	// 0x80 (both global settings) and the direct copy (global off).
	assert.Equal(t, map[int]int{64: 12, 32: 10}, checked)
}

// TestBochsLadders boots the mitigation ladders of both worlds
// (laddersPlan: one boot) on Bochs's tigerlake model and checks each
// (checkBochsLadder, checkBochsLadder32).
func TestBochsLadders(t *testing.T) {
	res := bootBochs(t, bochs.Options{CPU: "tigerlake", Plan: []byte(laddersPlan), Timeout: 15 * time.Minute})
	requireBochsOK(t, res)
	checkBochsLadder(t, res)
	checkBochsLadder32(t, res)
}

// checkBochsLadder checks the 64-bit ladder on Bochs's tigerlake model, the one emulator here that enumerates IA32_SPEC_CTRL,
// IA32_PRED_CMD, MD_CLEAR and IA32_ARCH_CAPABILITIES (with IBRS_ALL): every
// rung runs, none unsupported; ibrs is enhanced IBRS, set once for the run
// outside the timed path (its sites off: no instruction over none); ibpb
// costs instructions in the ping-pong's context switches; the other knobs
// cost what they cost under QEMU (the same instructions: the table's
// rows hold, every rung has one, and every single-knob rung ran); the linux set is eIBRS's (verw for MDS, ibrs, the BHB loop); and
// Bochs's log names none of the speculation MSRs as unknown.
func checkBochsLadder(t *testing.T, res *bochs.Result) {
	t.Helper()
	lines := strings.Join(res.Lines(), "\n")
	assert.Contains(t, lines, "linux = verw+ibrs+bhb, as Linux 6.6.y")
	assert.Contains(t, lines, "ibrs here: eIBRS: set once for the run")
	assert.NotContains(t, lines, "verw here:", "MD_CLEAR: VERW clears the buffers")
	for _, u := range recordsOf[contract.Unsupported](t, res) {
		assert.NotEqual(t, "ladder", u.Bench, "every rung runs: %s", u.Reason)
	}
	got, incs, parts := ladderFigures(t, res)
	requireRows(t, got, func(f map[string]string) bool { return f["bench"] == "ladder" && !strings.Contains(f["knobs"], "+") })
	assert.Equal(t, "alone", parts[rung("ladder", "null", "ibrs")])
	assert.Zero(t, incs[rung("ladder", "null", "ibrs")], "eIBRS: set once, no site on the path")
	assert.Zero(t, incs[rung("ladder", "pingpong", "ibrs")])
	assert.Positive(t, incs[rung("ladder", "pingpong", "ibpb")], "an IBPB at each switch between processes")
	assert.Equal(t, "linux", parts[rung("ladder", "null", "verw+ibrs+bhb")])
	for _, line := range unknownMSR.FindAllStringSubmatch(string(res.Log), -1) {
		assert.NotContains(t, []uint64{amd64.MSR_IA32_SPEC_CTRL, amd64.MSR_IA32_PRED_CMD, amd64.MSR_IA32_ARCH_CAPABILITIES}, hexValue(t, line[2]), "Bochs: %s", line[0])
	}
	t.Logf("the ladder's instructions per operation under Bochs tigerlake: %v", got)
}

// checkBochsLadder32 checks the 32-bit ladder on Bochs's tigerlake model, which has IA32_PRED_CMD: ibpb runs in the 32-bit
// kernel too (WRMSR 49H after a dispatch that switched to another
// process) and costs instructions in the ping-pong; ibrs, bhb and lfence
// are unsupported whatever the CPU (not in 32-bit Linux's entry) and
// nothing else is; the other knobs cost what they cost under QEMU
// (the table's rows hold, and every rung has one); linux's set is eIBRS's cut to entry_32.S's
// knobs: verw.
func checkBochsLadder32(t *testing.T, res *bochs.Result) {
	t.Helper()
	lines := strings.Join(res.Lines(), "\n")
	assert.Contains(t, lines, "in 32-bit: linux = verw (entry_32.S has verw+ibpb+rsb+retpoline only)")
	var unsup []string
	for _, u := range recordsOf[contract.Unsupported](t, res) {
		if u.Bench != "ladder32" {
			continue
		}
		assert.Contains(t, u.Reason, "not in 32-bit Linux's entry", u.Mitigations)
		unsup = append(unsup, u.Mitigations)
	}
	assert.ElementsMatch(t, []string{"ibrs", "bhb", "lfence", "ibrs", "bhb", "lfence"}, unsup, "the null call's and the ping-pong's")
	got, incs, parts := ladderFiguresOf(t, res, "ladder32")
	requireRows(t, got, func(f map[string]string) bool { return f["bench"] == "ladder32" && !strings.Contains(f["knobs"], "+") })
	assert.Equal(t, "alone", parts[rung("ladder32", "pingpong", "ibpb")])
	assert.Positive(t, incs[rung("ladder32", "pingpong", "ibpb")], "an IBPB at each switch between processes")
	assert.Equal(t, "linux", parts[rung("ladder32", "null", "verw")])
	for _, line := range unknownMSR.FindAllStringSubmatch(string(res.Log), -1) {
		assert.NotEqual(t, uint64(amd64.MSR_IA32_PRED_CMD), hexValue(t, line[2]), "Bochs: %s", line[0])
	}
	t.Logf("the 32-bit ladder's instructions per operation under Bochs tigerlake: %v", got)
}

// fredPlan runs the FRED entry beside SYSCALL on the paths it serves: the
// null call, lseek and the ping-pong (whose context switches return by
// the FRED linux trampoline's frame built from pt_regs), under off, on
// and on+pcid; the probe and the leak oracle, whose faults FRED delivers
// to fredEvent; and lass (CR4.LASS) under both entries: the null call,
// the probe, the oracle, and lseek and the ping-pong, which lass cannot
// run (their handlers are Go code in the lower half).
const fredPlan = "benchmarks = probe,oracle,null,lseek,pingpong\nmodes = off,on,on+pcid,lass\nentries = syscall,fred\noracle_samples = 50\n" + pathLengthSizes

// TestBochsFRED boots fredPlan under Bochs's wildcat_lake, whose CPUID has
// FRED, and checks: every check passed; every FRED row measured (none
// unsupported), each with its path length held to the table (exact for
// the null call) and every row of the table the plan runs present; the
// minimal FRED call as long as SYSCALL's and the linux one shorter (no
// SYSRET check or SWAPGS); the ping-pong's CR3 loads as SYSCALL's; the
// 64-bit null table's entry column.
func TestBochsFRED(t *testing.T) {
	res := bootBochs(t, bochs.Options{CPU: "wildcat_lake", Plan: []byte(fredPlan), Timeout: bochsFaultTimeout})
	requireBochsOK(t, res)
	lassRefused := 0
	for _, u := range recordsOf[contract.Unsupported](t, res) {
		if u.Mode == "lass" && (u.Bench == "lseek" || u.Bench == "pingpong") {
			assert.Contains(t, u.Reason, "handler is Go code in the lower half, where LASS forbids ring-0 instruction fetches")
			lassRefused++
			continue
		}
		assert.Fail(t, "a row unsupported under wildcat_lake", "%+v", u)
	}
	assert.Equal(t, 2*2+2*2, lassRefused, "lass: lseek (2 global settings) and the ping-pong (processes, threads) under both entries")
	checkLASS(t, res, 2)
	probes := byFRED(t, recordsOf[contract.Probe](t, res), func(p contract.Probe) (contract.Subject, *bool) { return p.Subject, p.AsExpected })
	assert.Len(t, probes, 5*4, "the probe by FRED: 5 targets under off, on, on+pcid and lass, the faults delivered by FRED")
	assert.Contains(t, strings.Join(res.Lines(), "\n"), "isolation probe by the fred entry (its faults delivered by it, not the IDT)")
	oracle := byFRED(t, recordsOf[contract.Oracle](t, res), func(o contract.Oracle) (contract.Subject, *bool) { return o.Subject, o.AsExpected })
	assert.Len(t, oracle, 4, "the oracle by FRED under off, on, on+pcid and lass")
	for _, o := range oracle {
		assert.EqualValues(t, o.Bytes, o.Faults, "%s: each read's #PF recovered by fredEvent", o.Mode)
	}
	got, _ := pathLengths(t, res)
	requireRows(t, got, func(f map[string]string) bool {
		return f["entry"] == "fred" && f["width"] == "64"
	})
	fred := 0
	for k, v := range got {
		if keyField(k, "entry") != "fred" {
			continue
		}
		fred++
		sys := withField(k, "entry", "syscall")
		require.Contains(t, got, sys)
		if keyField(k, "flavour") == "minimal" {
			assert.Equal(t, got[sys], v, "%s: as long as SYSCALL's", k)
		} else {
			assert.Less(t, v, got[sys], "%s: shorter than SYSCALL's", k)
		}
	}
	assert.Equal(t, 4*2*2+3*2+3*2, fred, "null (2 flavours, 2 global settings) under 4 modes, lseek (2 global settings) and ping-pong (processes, threads) under 3")
	for k, v := range got {
		if keyField(k, "mode") == "lass" {
			off := withField(k, "mode", "off")
			require.Contains(t, got, off)
			assert.Equal(t, got[off], v, "%s: off's path: LASS costs no instruction", k)
		}
	}
	for _, pp := range recordsOf[contract.PingPong](t, res) {
		if pp.Entry == "fred" {
			for _, sys := range recordsOf[contract.PingPong](t, res) {
				if sys.Entry == "syscall" && sys.Mode == pp.Mode && sys.Tasks == pp.Tasks {
					assert.Equal(t, sys.CR3Loads, pp.CR3Loads, "%s: the same context switches", pp.Key())
				}
			}
		}
	}
	lineIndex(t, res.Lines(), "mode     entry    flavour  global")
	st := recordsOf[contract.CPUState](t, res)
	require.Len(t, st, 1)
	assert.True(t, st[0].FRED && st[0].LASS, "wildcat_lake's CPUID.(07H,1):EAX has FRED and LASS: %+v", st[0])
	m := recordsOf[contract.Machine](t, res)
	require.Len(t, m, 1)
	assert.True(t, m[0].FRED && m[0].LASS)
	v := recordsOf[contract.Vulnerabilities](t, res)
	require.Len(t, v, 1)
	assert.True(t, v[0].FRED && v[0].LASS, "the vulnerabilities record")
	assert.Contains(t, strings.Join(res.Lines(), "\n"), "| FRED yes, LASS yes (not in Linux ")
	t.Logf("FRED and SYSCALL instructions per operation under Bochs wildcat_lake: %v", got)
}

// byFRED returns the records of recs whose entry is fred, each of which
// must say it was as expected (of gives a record's subject and verdict).
func byFRED[R any](t *testing.T, recs []R, of func(R) (contract.Subject, *bool)) []R {
	t.Helper()
	var out []R
	for _, r := range recs {
		s, good := of(r)
		if s.Entry != "fred" {
			continue
		}
		out = append(out, r)
		if assert.NotNil(t, good, "%+v", r) {
			assert.True(t, *good, "%+v", r)
		}
	}
	return out
}

// checkLASS checks the lass rows of a run on a CPU with LASS, whose probe
// ran by entries entries: the probe's reads of
// the upper half (the entry area, the deferred modes' area) were LASS's
// #GP(0) from ring 3, the kernel text's and the sensitive page's (lower
// half) a present-page #PF as under off; Bochs logged LASS's user-access violations (the probe's) and
// no supervisor one: ring 0 never fetched from the lower half with LASS
// set.
func checkLASS(t *testing.T, res *bochs.Result, entries int) {
	t.Helper()
	n := 0
	for _, p := range recordsOf[contract.Probe](t, res) {
		if p.Mode != "lass" || p.Width != 64 {
			continue
		}
		n++
		require.NotNil(t, p.AsExpected)
		assert.True(t, *p.AsExpected, "%+v", p)
		switch p.Target {
		case "entry area", "defer area":
			require.NotNil(t, p.ProbeFault, p.Target)
			assert.EqualValues(t, amd64.VectorGP, p.Vector, p.Target)
			assert.Zero(t, p.ErrorCode, p.Target)
		case "kernel text", "sensitive page":
			require.NotNil(t, p.ProbeFault, p.Target)
			assert.EqualValues(t, amd64.VectorPF, p.Vector, p.Target)
			assert.True(t, p.Present, p.Target)
		}
	}
	assert.Equal(t, 5*entries, n, "the probe's 5 targets under lass, by each entry")
	log := string(res.Log)
	assert.Contains(t, log, "User access LASS canonical violation", "Bochs saw the probe's LASS faults")
	assert.NotContains(t, log, "Supervisor access LASS canonical violation")
	assert.Contains(t, strings.Join(res.Lines(), "\n"), "; under lass an upper-half address is LASS's #GP, before any page walk", "the probe table's heading")
}

// TestBochsFREDLASSModels names the FRED entry and the lass mode under
// older Bochs models: corei7_haswell_4770 has neither, so every fred and
// lass row is unsupported with its CPUID bit; arrow_lake has LASS and not
// FRED, so lass is measured by SYSCALL (off's path length) and fred is
// unsupported.
func TestBochsFREDLASSModels(t *testing.T) {
	t.Parallel()
	const plan = "benchmarks = null,probe\nmodes = off,lass\nentries = syscall,fred\nflavours = minimal\nglobal = off\nn = 10\nr = 1\nwarmup = 0\n"
	for _, tc := range []struct {
		model string
		lass  bool
	}{{bochs.DefaultCPU, false}, {"arrow_lake", true}} {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			res := runBochs(t, bochs.Options{CPU: tc.model, Plan: []byte(plan), Timeout: bochsFaultTimeout})
			requireBochsOK(t, res)
			noFRED, noLASS := 0, 0
			for _, u := range recordsOf[contract.Unsupported](t, res) {
				switch {
				case u.Entry == "fred":
					assert.Contains(t, u.Reason, "no FRED (CPUID.(EAX=07H,ECX=1):EAX[17])", "%+v", u)
					noFRED++
				case u.Mode == "lass":
					assert.Contains(t, u.Reason, "no LASS (CPUID.(EAX=07H,ECX=1):EAX[6])", "%+v", u)
					noLASS++
				default:
					assert.Fail(t, "an unsupported row", "%+v", u)
				}
			}
			assert.Equal(t, 2+3*5, noFRED, "fred: the null call under off and lass, the probe's 5 targets under off, lass and on")
			sys := recordsOf[contract.Syscall](t, res)
			if !tc.lass {
				assert.Equal(t, 1+5, noLASS, "lass: the null call by SYSCALL and the probe's 5 targets")
				assert.Len(t, sys, 1, "off by SYSCALL")
				return
			}
			assert.Zero(t, noLASS)
			require.Len(t, sys, 2, "off and lass by SYSCALL")
			assert.Equal(t, sys[0].Mean, sys[1].Mean, "lass runs off's path")
			checkLASS(t, res, 1)
		})
	}
}

// TestBochsFREDNMI counts NMIs under the FRED entry, whose NMI path
// (fredEvent) nothing else reaches: Bochs has no monitor to inject one.
// The test image's getppid sends its CPU an NMI through the local APIC
// (build tag ptilab_selfnmi), which FRED delivers at the ring-0 entry of
// the trampoline's page while the handler runs, on the kernel side's CR3
// (on: the trampoline switched it) or the one table (off, lass); SYSCALL's
// rows take theirs through the IDT (entryNMI). Under lass the handler is
// its upper-half copy and CR4.LASS is set: Bochs logs no LASS violation.
// Every call's NMI is counted and resumed, the records say so (each repeat
// disturbed), and the run ends "ok".
//
// The same boot runs the test image's ring3nmi: ring 3 sends NMIs through
// the local APIC (mapped for it), so each interrupts ring 3 itself, on the
// user side's CR3 under on and on+pcid: the path of entryNMI that switches
// CR3 to count (with on+pcid's PCID and NOFLUSH), and FRED's ring-3 event
// path out by ERETU; every NMI counted, under every mode and entry.
func TestBochsFREDNMI(t *testing.T) {
	t.Parallel()
	_, image := taggedImage(t, "ptilab_selfnmi")
	res := runBochs(t, bochs.Options{
		Image:   image,
		CPU:     "wildcat_lake",
		Plan:    []byte("benchmarks = null,ring3nmi\nmodes = off,on,on+pcid,lass\nentries = fred,syscall\nflavours = minimal,linux\nglobal = off\nn = 20\nr = 2\nwarmup = 0\n"),
		Timeout: bochsFaultTimeout,
	})
	requireBochsOK(t, res)
	recs := recordsOf[contract.Syscall](t, res)
	require.Len(t, recs, 4*2*2, "fred and syscall under off, on, on+pcid and lass, minimal and linux")
	for _, r := range recs {
		assert.EqualValues(t, 2*20, r.NMIs, "%s: an NMI per call", r.Key())
		assert.Equal(t, 2, r.Disturbed, "%s: every repeat disturbed", r.Key())
	}
	end, ok := res.Ended()
	require.True(t, ok)
	assert.GreaterOrEqual(t, end.NMIs, uint64(4*2*2*2*20+4*2*20), "every NMI counted")
	ring3 := map[string]bool{}
	for _, c := range recordsOf[contract.Check](t, res) {
		if name, ok := strings.CutPrefix(c.Name, "ring-3 NMI "); ok {
			ring3[name] = c.OK
			assert.True(t, c.OK, "%s: %s", c.Name, c.Detail)
		}
	}
	assert.Len(t, ring3, 4*2, "ring3nmi: off, on, on+pcid and lass, by SYSCALL and by FRED")
	assert.NotContains(t, string(res.Log), "LASS canonical violation", "lass: the NMI entries and the self-NMI copy run from the upper half")
}
