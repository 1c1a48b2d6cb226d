package test

import (
	"errors"
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

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/host/bochs"
	"github.com/ptilab/ptilab/host/qemu"
	"github.com/ptilab/ptilab/pathlength"
)

// noCore are the core-clock cells of a table row where the CPU has
// neither APERF/MPERF nor MSR_SMI_COUNT (QEMU's default CPU): core MHz
// and core cycles per operation unsupported, and no repeat disturbed (by
// an NMI: the count is always read; nothing injects one here) of all;
// noCoreShort is a seed or work-curve cell's.
const (
	noCore      = `\s+-\s+-\s+0/[0-9]+`
	noCoreShort = `\s+- MHz 0`
)

// TestPTIMatrix boots the default plan and checks the 64-bit matrix: a
// null-syscall record for every mode, flavour and global setting the CPU
// supports (TCG has no PCID: those rows are unsupported records, and the
// table says so), the work curve, and the isolation probe's page-fault
// error codes.
func TestPTIMatrix(t *testing.T) {
	res := boot(t, qemu.Options{})
	requireOK(t, res)
	lines := strings.Join(res.Lines(), "\n")
	// TCG has no FRED: the default plan leaves the FRED entry out, and says
	// so in one line.
	assert.Contains(t, lines, "\nptilab: entry fred: no FRED (CPUID.(EAX=07H,ECX=1):EAX[17]): left out of the plan")
	// Nor LASS: the lass mode, the same.
	assert.Contains(t, lines, "\nptilab: mode lass: no LASS (CPUID.(EAX=07H,ECX=1):EAX[6]): left out of the plan")
	for _, f := range recordsOf[contract.Syscall](t, res) {
		assert.NotEqual(t, "fred", f.Entry, "%s: no FRED row", f.Key())
		assert.NotEqual(t, "lass", f.Mode, "%s: no lass row", f.Key())
	}

	got := map[string]contract.Syscall{}
	for _, f := range records(t, res, "syscall") {
		for _, k := range []string{"mode", "flavour", "global", "N", "R", "mean", "stddev", "median", "min", "unit", "perf_pm_pct"} {
			assert.Contains(t, f, k, "record %v carries %s", f, k)
		}
	}
	for _, f := range recordsOf[contract.Syscall](t, res) {
		if f.Bench != "null" || f.Width != 64 {
			continue
		}
		got[f.Key()] = f
		assert.Equal(t, "tsc_cycles", f.Unit)
		assert.Equal(t, 1000, f.N)
		assert.Equal(t, 10, f.R)
		assert.True(t, f.Emulated, "TCG timings are labelled")
	}
	for _, mode := range []string{"off", "on"} {
		for _, fl := range []string{"minimal", "linux"} {
			for _, g := range []bool{false, true} {
				k := contract.Subject{Bench: "null", Width: 64, Mode: mode, Entry: "syscall", Flavour: fl, Global: g}.Key()
				require.Contains(t, got, k, "null syscall under %s", k)
				assert.Positive(t, got[k].Mean, k)
			}
		}
	}
	unsup := 0
	for _, f := range recordsOf[contract.Unsupported](t, res) {
		if f.Mode == "on+pcid" && f.Target == "" && f.Width == 64 {
			unsup++
			assert.Contains(t, f.Reason, "PCID: not supported by this CPU")
		}
	}
	assert.Equal(t, 4+5+2+2+2, unsup, "4 null-syscall rows, 5 work-curve points, 2 lseek, 2 ping-pong and 2 messaging rows under on+pcid")
	assert.Regexp(t, `(?m)^on\+pcid\s+minimal\s+no\s+unsupported: PCID: not supported by this CPU$`, lines)
	assert.Regexp(t, `(?m)^off\s+minimal\s+no\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+1\.00`+noCore+`$`, lines)
	assert.Contains(t, lines, "EMULATED (QEMU TCG)")

	work := 0
	for _, f := range recordsOf[contract.Syscall](t, res) {
		if f.Bench == "work" {
			work++
			assert.NotNil(t, f.WorkNs, "work_ns")
		}
	}
	assert.Equal(t, 5*2, work, "5 work-curve points under off and on")

	// lseek through the Go handler, linux flavour, global pages off and on.
	lseek := map[string]bool{}
	for _, f := range recordsOf[contract.Syscall](t, res) {
		if f.Bench == "lseek" {
			lseek[f.Key()] = true
			assert.Equal(t, "linux", f.Flavour)
			assert.Positive(t, f.Mean)
		}
	}
	want := map[string]bool{}
	for _, mode := range []string{"off", "on"} {
		for _, g := range []bool{false, true} {
			want[contract.Subject{Bench: "lseek", Width: 64, Mode: mode, Entry: "syscall", Flavour: "linux", Global: g}.Key()] = true
		}
	}
	assert.Equal(t, want, lseek)
	assert.Regexp(t, `(?m)^on\s+yes\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9]+\s+[0-9.]+\s+[-+][0-9.]+%`+noCore+`$`, lines, "the lseek table's global gain")

	// The ping-pong: every token through both pipes, two switches per
	// round trip (and one at the end), each a CR3 load between processes
	// and none between threads.
	pp := checkPingPong(t, res, 64, 200*(10+2))
	assert.Equal(t, map[string]bool{"off/processes": true, "off/threads": true, "on/processes": true, "on/threads": true}, pp)
	assert.Regexp(t, `(?m)^on\s+\|\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9.]+\s+2\.00`+noCore+` \|\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9.]+\s+0\.00`+noCore+`$`, lines, "the ping-pong table's on row")

	// sched-messaging over socket pairs, the default as perf's: every
	// message of 2 groups x 20 senders x 20 receivers x 10 loops arrived
	// with its checksum; processes switch CR3, threads never.
	msg := checkMessaging(t, res, 64, "syscall", "socket", 2*20*20*10)
	assert.Regexp(t, `(?m)^sched-messaging \(perf bench sched messaging -g 2 -l 10: Unix-domain stream socket pairs\)`, lines, "the table names the IPC")
	assert.Equal(t, map[string]bool{"off/processes": true, "off/threads": true, "on/processes": true, "on/threads": true}, msg)
	assert.Regexp(t, `(?m)^off\s+\|\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+1\.00`+noCore+` \|\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+1\.00`+noCore+`$`, lines, "the messaging table's off row")

	// The probe: under off a kernel address is present and supervisor-only
	// (P=1), under on it is not mapped (P=0); the entry area is present
	// and supervisor-only under both; the task's own page reads.
	checkProbe(t, res, 64, "kernel text")
	assert.Regexp(t, `(?m)^kernel text\s+0x[0-9a-f]+\s+#PF P=1 \(error 0x5\)\s+#PF P=0 \(error 0x4\)\s+unsupported`, lines)

	check32(t, res)
}

// checkProbe checks the isolation probe's records of the world of width
// under off and on: the kernel-only target (kernel) faults with P=1
// (present, supervisor-only) under off and P=0 (not mapped) under on; the
// entry area faults with P=1 under both; the task's own page reads; the
// 64-bit world's deferred area faults with P=0 under both, its sensitive
// page (in ASI's sensitive blocks, by the kernel's direct map) as the
// kernel-only target; every outcome judged as expected by the image.
func checkProbe(t *testing.T, res serialLog, width int, kernel string) {
	t.Helper()
	present := map[string]map[string]bool{ // target -> mode -> present
		kernel:           {"off": true, "on": false},
		"entry area":     {"off": true, "on": true},
		"defer area":     {"off": false, "on": false}, // the 64-bit world's: mapped under the deferred modes only
		"sensitive page": {"off": true, "on": false},  // the 64-bit world's
	}
	seen := 0
	for _, f := range inWorld[contract.Probe](t, res, width) {
		target, mode := f.Target, f.Mode
		seen++
		require.NotNil(t, f.AsExpected)
		assert.True(t, *f.AsExpected, "probe of %s under %s", target, mode)
		if target == "own page" {
			assert.False(t, f.Faulted, "own page under %s", mode)
			continue
		}
		require.True(t, f.Faulted, "%s under %s", target, mode)
		assert.Equal(t, uint64(14), f.Vector)
		assert.True(t, f.User, "the fault came from ring 3")
		assert.Equal(t, present[target][mode], f.Present, "%s under %s: present bit", target, mode)
	}
	targets := 3
	if width == 64 {
		targets = 5 // and the deferred modes' trampoline stack and the sensitive page
	}
	assert.Equal(t, 2*targets, seen, "%d targets x off, on", targets)
}

// checkPingPong checks the ping-pong records of the world of width: every
// token through both pipes (roundTrips in all, N in each of the R and the
// warm-up repeats), two switches per round trip and one when ping exits,
// a CR3 load at each between processes and none between threads, the
// linux trampoline. It returns their keys: mode/tasks in the 64-bit world,
// mode/entry/tasks in the 32-bit one.
func checkPingPong(t *testing.T, res serialLog, width int, roundTrips uint64) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, f := range inWorld[contract.PingPong](t, res, width) {
		k := f.Mode + "/" + f.Tasks
		if width == 32 {
			k = f.Mode + "/" + f.Entry + "/" + f.Tasks
		}
		keys[k] = true
		rt := f.RoundTrips
		assert.Equal(t, roundTrips, rt, "%s: N round trips in each of R and the warm-up repeats", k)
		assert.Equal(t, 2*rt+1, f.Switches, k)
		if f.Tasks == "processes" {
			assert.Equal(t, 2*rt+1, f.CR3Loads, "%s: a CR3 load at every switch", k)
		} else {
			assert.Zero(t, f.CR3Loads, "%s: threads share the address space", k)
		}
		assert.Positive(t, f.Mean, k)
		assert.Equal(t, "linux", f.Flavour, k)
	}
	return keys
}

// checkMessaging checks the sched-messaging records of the world of
// width: by entry, over ipc, every message (messages per run) arrived
// with its checksum, processes switch CR3 at every switch, threads never.
// It returns their keys, mode/tasks.
func checkMessaging(t *testing.T, res serialLog, width int, entry, ipc string, messages uint64) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, f := range inWorld[contract.Messaging](t, res, width) {
		k := f.Mode + "/" + f.Tasks
		keys[k] = true
		assert.Equal(t, entry, f.Entry, k)
		assert.Equal(t, ipc, f.IPC, k)
		assert.Equal(t, messages, f.Messages, k)
		assert.True(t, f.ChecksumsOK, k)
		assert.Positive(t, f.Switches, k)
		if f.Tasks == "processes" {
			assert.GreaterOrEqual(t, f.CR3Loads, f.Switches, "%s: a CR3 load at every switch", k)
		} else {
			assert.Zero(t, f.CR3Loads, k)
		}
		assert.Positive(t, f.Seconds, k)
	}
	return keys
}

// check32 checks the 32-bit world's part of a default run: the null
// system call by SYSENTER and INT 0x80 under off and on, global pages off
// and on; on+pcid rows "not in PAE"; the probe (the kernel stack present
// under off, not mapped under on; the entry area present under both; the
// task's own page read); the deliberate fault in the 32-bit kernel and the
// round trips.
func check32(t *testing.T, res *qemu.Result) {
	lines := strings.Join(res.Lines(), "\n")
	null32 := map[string]bool{}
	stamped := 0
	for _, f := range recordsOf[contract.Syscall](t, res) {
		if f.Bench != "null32" {
			continue
		}
		k := f.Key()
		assert.False(t, null32[k], "%s recorded once", k)
		null32[k] = true
		assert.Equal(t, 32, f.Width, k)
		assert.Positive(t, f.Mean, k)
		assert.Equal(t, "tsc_cycles", f.Unit, k)
		if f.Stamps {
			stamped++
			assert.Len(t, f.Phases, 5, k)
			assert.Positive(t, f.PhaseCall, k)
		}
	}
	want := map[string]bool{}
	for _, m := range []string{"off", "on"} {
		add := func(e, fl, copy string, stamps, g bool) {
			want[contract.Subject{Bench: "null32", Width: 32, Mode: m, Entry: e, Flavour: fl, Copy: copy, Stamps: stamps, Global: g}.Key()] = true
		}
		for _, e := range []string{"sysenter", "int80"} {
			for _, g := range []bool{false, true} {
				add(e, "minimal", "", false, g)
				add(e, "linux", "movsl", false, g)
			}
		}
		for _, c := range []string{"movsb", "trim8", "direct"} {
			add("sysenter", "linux", c, false, false)
		}
		for _, c := range []string{"movsl", "movsb", "trim8", "direct"} {
			add("sysenter", "linux", c, true, false)
		}
	}
	assert.Equal(t, want, null32)
	assert.Equal(t, 8, stamped, "the phase breakdown: off and on x 4 copy methods")
	assert.Regexp(t, `(?m)^on\s+trim8(\s+[-0-9.]+\s+[-0-9.]+%){7}\s+[0-9.]+`+noCore+`$`, lines, "the phase breakdown's on/trim8 row")

	// The seed-shaped tables: null (columns minimal and linux) and
	// messaging (processes and threads), 32-bit and 64-bit rows.
	seeds := map[string]bool{}
	for _, f := range recordsOf[contract.Seed](t, res) {
		seeds[fmt.Sprintf("%v %v/%v/%v%v", f.Bench, f.Width, f.Mode, f.Flavour, f.Tasks)] = true
		assert.Positive(t, f.Mean)
	}
	assert.Len(t, seeds, 16, "null and messaging x 2 widths x off, on x 2 columns: %v", seeds)
	unsup := map[string]int{}
	for _, f := range recordsOf[contract.SeedUnsupported](t, res) {
		unsup[fmt.Sprintf("%v/%v", f.Bench, f.Width)]++
	}
	assert.Equal(t, map[string]int{"null/32": 2, "null/64": 2, "messaging/32": 2, "messaging/64": 2}, unsup, "on+pcid: not in PAE (32-bit), no PCID under TCG (64-bit)")
	assert.Regexp(t, `(?m)^32-bit PTI on\s+\|\s+[0-9.]+ ±\s*[0-9.]+% vs off +[0-9.]+`+noCoreShort+`\s+\|\s+[0-9.]+ ±\s*[0-9.]+% vs off +[0-9.]+`+noCoreShort+`$`, lines)
	assert.Regexp(t, `(?m)^32-bit PTI on\+pcid\s+\| not in PAE\s+\| not in PAE$`, lines)
	assert.Regexp(t, `(?m)^sched-messaging over Unix-domain stream socket pairs, 32-bit PAE \(SYSENTER\) vs 64-bit \(SYSCALL\)`, lines, "the IPC named")

	notInPAE := map[string]int{}
	for _, f := range recordsOf[contract.Unsupported](t, res) {
		if f.Width == 32 && f.Mode == "on+pcid" {
			notInPAE[f.Bench]++
			assert.Contains(t, f.Reason, "PCID: not in PAE")
		}
	}
	assert.Equal(t, map[string]int{"null32": 8, "work32": 5, "lseek32": 4, "pingpong": 4, "messaging": 4}, notInPAE,
		"on+pcid: null32 2 entries x 2 flavours x 2 global settings, work32 5 points, lseek32 2 entries x 2 global settings, pingpong32 2 entries x processes and threads, messaging32 and its phases processes and threads")

	// Where sched-messaging's cycles go in the 32-bit world: the phases
	// of the instrumented SYSENTER entry as shares of the run.
	phases := map[string]bool{}
	for _, f := range recordsOf[contract.Phases](t, res) {
		k := f.Mode + "/" + f.Tasks
		phases[k] = true
		assert.Len(t, f.PhasePct, 5, k)
		sum := 0.0
		for _, pct := range f.PhasePct {
			sum += pct
		}
		assert.Less(t, sum, 100.0, "%s: the phases are part of the run", k)
		assert.Len(t, f.StampCost, 5, "%s: the stamps' cost, taken out", k)
		assert.Positive(t, f.StampedCalls, k)
		assert.Positive(t, f.EntryPathPct, k)
		assert.Less(t, f.EntryPathPct, sum, k)
	}
	assert.Equal(t, map[string]bool{"off/processes": true, "off/threads": true, "on/processes": true, "on/threads": true}, phases)
	assert.Regexp(t, `(?m)^on\s+processes\s+\|(\s+[0-9.]+%){5} \|\s+[0-9.]+%\s+[0-9.]+`+noCore+`$`, lines, "the messaging phase table's on/processes row")

	// lseek in the 32-bit tasks kernel: both entries, global pages off
	// and on (a wrong result would have failed the row).
	lseek32 := map[string]bool{}
	for _, f := range recordsOf[contract.Syscall](t, res) {
		if f.Bench == "lseek32" {
			lseek32[f.Key()] = true
			assert.Positive(t, f.Mean)
		}
	}
	assert.Len(t, lseek32, 8, "off, on x sysenter, int80 x global off, on: %v", lseek32)

	// sched-messaging in the 32-bit world: every message of 2 groups x 20
	// senders x 20 receivers x 10 loops arrived with its checksum;
	// processes switch CR3, threads never.
	msg32 := checkMessaging(t, res, 32, "sysenter", "socket", 2*20*20*10)
	assert.Equal(t, map[string]bool{"off/processes": true, "off/threads": true, "on/processes": true, "on/threads": true}, msg32)

	// The ping-pong between two 32-bit processes or threads: every token
	// through both pipes, two switches per round trip, a CR3 load at each
	// between processes and none between threads.
	pp32 := checkPingPong(t, res, 32, 200*(10+2))
	assert.Len(t, pp32, 8, "off, on x sysenter, int80 x processes, threads: %v", pp32)
	assert.Regexp(t, `(?m)^on\s+int80\s+\|\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9.]+\s+2\.00`+noCore+` \|\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9.]+\s+0\.00`+noCore+`$`, lines, "the 32-bit ping-pong table's on/int80 row")

	// The work curve: 5 points under off and on, by SYSENTER.
	work := map[string]bool{}
	for _, f := range recordsOf[contract.Syscall](t, res) {
		if f.Bench == "work32" {
			require.NotNil(t, f.WorkNs)
			work[fmt.Sprintf("%v/%v", f.Mode, *f.WorkNs)] = true
			assert.Equal(t, "sysenter", f.Entry)
			assert.Positive(t, f.Mean)
		}
	}
	assert.Len(t, work, 10, "5 work-curve points under off and on")
	assert.Regexp(t, `(?m)^2000\s+[0-9.]+\s+[0-9.]+\s+not in PAE\s+[0-9]+\.[0-9]{2}\s+-(`+noCoreShort+`){2}\s+-$`, lines, "the work curve's vs off, a ratio")
	assert.Regexp(t, `(?m)^on\+pcid\s+sysenter\s+minimal\s+no\s+unsupported: PCID: not in PAE`, lines)
	assert.Regexp(t, `(?m)^on\s+int80\s+linux\s+no\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+`+noCore+`$`, lines)

	checkProbe(t, res, 32, "kernel stack")
	checks := map[string]bool{}
	for _, f := range recordsOf[contract.Check](t, res) {
		checks[f.Name] = f.OK
	}
	for _, c := range checkNames32 {
		assert.True(t, checks[c], "check %s", c)
	}
	assert.Regexp(t, `(?m)^check kernel32 double fault ok\s+a #DF in the 32-bit kernel came back through its task gate as: #DF double fault in ring 0 \(32-bit\), error 0x0, EIP 0xff8[0-9a-f]+, CR2 0xffc, ESP 0x1000$`, lines)
	assert.Regexp(t, `(?m)^check kernel32 fault ok\s+a #PF in the 32-bit kernel came back as: #PF page fault in ring 0 \(32-bit\), error 0x0, EIP 0xff8[0-9a-f]+, CR2 0x0$`, lines)
}

// The path lengths under -icount shift=0 and Bochs are package
// pathlength's table, which the image's PMU cross-check reads too. Every
// figure a boot measures there is held to it (holdPathLengths): a record
// whose key has no row fails the test, named; and every row of the table
// that a plan runs must have been measured (requireRows).

// pathLengthSizes are the sizes of the path-length plans, the same under
// QEMU and Bochs so that their figures compare.
// Their sched-messaging runs over pipes: the socket pairs' runs have
// their own plan, pathLengthSocketPlan.
const pathLengthSizes = "n = 100\npingpong_n = 20\nmessaging_groups = 1\nmessaging_loops = 2\nmessaging_ipc = pipe\nr = 3\nwarmup = 1\n"

// pathLengthSocketPlan is sched-messaging over socket pairs in both
// worlds, at pathLengthSizes's sizes, under modes (a plan's modes line).
func pathLengthSocketPlan(modes string) string {
	return "benchmarks = messaging,messaging32\nmodes = " + modes + "\nmessaging_groups = 1\nmessaging_loops = 2\nmessaging_ipc = socket\nr = 3\nwarmup = 1\nglobal = off\n"
}

// pathLengthPingPongN is pathLengthSizes's pingpong_n.
const pathLengthPingPongN = 20

// TestPathLengths boots small plans under QEMU -icount shift=0 and under
// Bochs (bochsModels), where the TSC counts instructions, holds every
// figure to package pathlength's table (its bound, exactly where the
// path's length is exact; a figure without a row fails, named), and
// checks that the two emulators agree where they must (see bochsVsQEMU).
// The Bochs boots also check the PCID matrix (bochsMatrix).
func TestPathLengths(t *testing.T) {
	t.Parallel()
	var q, qs, qd, bs, qa, ba map[string]float64
	b := make([]map[string]float64, len(bochsModels))
	t.Run("boot", func(t *testing.T) {
		t.Run("qemu-icount", func(t *testing.T) { q = qemuPathLengths(t) })
		t.Run("qemu-icount-sockets", func(t *testing.T) { qs = qemuSocketPathLengths(t) })
		t.Run("qemu-icount-deferred", func(t *testing.T) { qd = qemuDeferredPathLengths(t) })
		t.Run("qemu-icount-ladders", func(t *testing.T) {
			res := boot(t, qemu.Options{Icount: true, Plan: []byte(laddersPlan), Timeout: 10 * time.Minute})
			requireOK(t, res)
			checkLadder(t, res)
			checkLadder32(t, res)
		})
		for i, model := range bochsModels {
			t.Run("bochs-"+model.name, func(t *testing.T) { b[i] = bochsMatrix(t, model) })
		}
		t.Run("bochs-sockets", func(t *testing.T) { bs = bochsSockets(t) })
		t.Run("qemu-icount-asi", func(t *testing.T) { qa = qemuASIPathLengths(t) })
		t.Run("bochs-asi", func(t *testing.T) { ba = bochsASI(t) })
	})
	require.NotNil(t, qa, "the QEMU boot of the asi mode failed")
	require.NotNil(t, ba, "the Bochs boot of the asi modes failed")
	// The same paths under both emulators, but that Bochs counts an ASI
	// fault's faulting access twice (pathlength): at most 4 more per
	// ping-pong round trip (its 4 faults) and about 2 per message.
	for k, v := range qa {
		if bv, ok := ba[k]; ok && keyField(k, "mode") == "asi" {
			switch keyField(k, "bench") {
			case "null", "lseek":
				assert.Equal(t, v, bv, "%s: asi's path under QEMU and Bochs", k)
			default:
				assert.True(t, bv >= v && bv-v <= 4, "%s: QEMU %v, Bochs %v: the faulting accesses Bochs counts twice", k, v, bv)
			}
		}
	}
	require.NotNil(t, q, "the QEMU boot failed")
	require.NotNil(t, qd, "the QEMU boot of the deferred modes failed")
	for k, v := range qd {
		if qv, ok := q[k]; ok {
			assert.Equal(t, qv, v, "%s: the same path in both QEMU boots", k)
		}
	}
	for i, model := range bochsModels {
		require.NotNil(t, b[i], "the Bochs boot on %s failed", model.name)
		if i == 0 {
			continue
		}
		// The same paths on every model: those it runs are the default's
		// (a model without PCID runs fewer), with the same lengths.
		for k, v := range b[i] {
			require.Contains(t, b[0], k, "%s: a row only %s runs", k, model.name)
			assert.Equal(t, b[0][k], v, "%s: the path lengths of %s and %s", k, bochsModels[0].name, model.name)
		}
		if model.pcid {
			assert.Len(t, b[i], len(b[0])-map[bool]int{true: 0, false: 4}[model.invpcid], "%s runs every row the default does but INVPCID's", model.name)
		}
	}
	bochsVsQEMU(t, q, b[0])
	require.NotNil(t, qs, "the QEMU boot of socket pairs failed")
	for k, v := range qs {
		pipe := withField(k, "ipc", "pipe")
		assert.Greater(t, v, q[pipe], "%s: a socket's message is longer than a pipe's (%s)", k, pipe)
	}
	require.NotNil(t, bs, "the Bochs boot of socket pairs failed")
	compared := 0
	for k, bv := range bs {
		qv, ok := qs[k]
		if !ok {
			continue
		}
		compared++
		if keyField(k, "width") == "32" {
			// The 32-bit kernel copies by copyBytes, REP MOVSL and REP
			// MOVSB, each counted one more under QEMU (bochsVsQEMU): about
			// 2 per message when measured (927.196 and 925.145 under off
			// for processes).
			assert.True(t, qv-bv > 1 && qv-bv < 4, "%s: QEMU %v, Bochs %v: the REP string instructions per message", k, qv, bv)
			continue
		}
		assert.InDelta(t, qv, bv, 0.002, "%s: QEMU and Bochs agree on sched-messaging", k)
	}
	assert.Equal(t, 8, compared, "sockets: both worlds, off and on, processes and threads")
}

// qemuPathLengths runs the benchmarks under -icount shift=0 (the flush
// costs and the TLB sweep too, flushSweepPlan's), holds their
// figures to the table (pathLengths), requires every row of the table
// the plan runs, and returns them.
func qemuPathLengths(t *testing.T) map[string]float64 {
	res := boot(t, qemu.Options{
		Icount: true,
		Plan: []byte("benchmarks = null,lseek,pingpong,messaging,flushcost,tlbsweep,null32,lseek32,pingpong32,messaging32\n" +
			pathLengthSizes + sweepKeys),
		// -icount slows QEMU: this boot took 40 to 75 s alone, 80 to 147 s
		// in the suite beside the Bochs boots; 4 times the longest.
		Timeout: 10 * time.Minute,
	})
	requireOK(t, res)
	got, stamps := pathLengths(t, res)
	requireRows(t, got, func(f map[string]string) bool {
		return slices.Contains([]string{"null", "lseek", "pingpong", "messaging", "null32", "lseek32"}, f["bench"]) &&
			slices.Contains([]string{"off", "on"}, f["mode"]) && f["ipc"] != "socket"
	})
	for k := range got {
		if keyField(k, "mode") == "on" {
			off := withField(k, "mode", "off")
			assert.Greater(t, got[k], got[off], "%s: isolation costs instructions over %s", k, off)
		}
	}
	checkStamps(t, stamps)
	// The flush costs and the TLB sweep ride on the same boot.
	checkFlushPathLengths(t, res, checkFlushCost(t, res, "instructions", flushNoPCID...))
	checkSweepPathLengths(t, res, checkSweep(t, res, "instructions", sweepPoints, []string{"off", "on", "on+pcid"}, []bool{false}, "on+pcid"))
	t.Logf("instructions per system call under icount: %v", got)
	return got
}

// qemuSocketPathLengths runs sched-messaging over socket pairs in both
// worlds under -icount shift=0 (pathLengthSocketPlan), holds its
// instructions per message to the table (pathLengths) and returns them.
func qemuSocketPathLengths(t *testing.T) map[string]float64 {
	res := boot(t, qemu.Options{Icount: true, Plan: []byte(pathLengthSocketPlan("off,on")), Timeout: 10 * time.Minute})
	requireOK(t, res)
	got, _ := pathLengths(t, res)
	require.Len(t, got, 8, "messaging and messaging32 over sockets, off and on, processes and threads: %v", got)
	requireRows(t, got, func(f map[string]string) bool {
		return f["ipc"] == "socket" && (f["mode"] == "off" || f["mode"] == "on")
	})
	for k := range got {
		if keyField(k, "mode") == "on" {
			assert.Greater(t, got[k], got[withField(k, "mode", "off")], k)
		}
	}
	t.Logf("instructions per message over socket pairs under icount: %v", got)
	return got
}

// pathLengths collects the instructions per call (per round trip, per
// message) of a run where the TSC counts instructions, by record key
// (contract.Subject.Key, contract.Messaging.Key), global pages on and off
// and the instrumented trampolines included, and holds them to the table
// (holdPathLengths); and the phases of the instrumented 32-bit trampoline
// by mode/copy, global pages off. Every figure must be deterministic (min
// = mean) and labelled as instructions.
func pathLengths(t *testing.T, res serialLog) (got map[string]float64, stamps map[string]map[string]float64) {
	got = map[string]float64{}
	stamps = map[string]map[string]float64{}
	for _, f := range recordsOf[contract.PingPong](t, res) {
		k := f.Key()
		assert.Equal(t, f.Mean, f.Min, "%s: deterministic", k)
		got[k] = f.Mean
	}
	for _, f := range recordsOf[contract.Messaging](t, res) {
		k := f.Key()
		assert.Equal(t, f.Mean, f.Min, "%s: deterministic", k)
		assert.True(t, f.ChecksumsOK, k)
		assert.Equal(t, uint64(20*20*2), f.Messages, "%s: 1 group, 2 loops", k)
		got[k] = f.PerMessage
	}
	for _, f := range recordsOf[contract.Syscall](t, res) {
		k := f.Key()
		if f.Stamps {
			// The phases and their stamps add up to less than the call (the
			// rest: SYSENTER, SYSEXIT, the saves and restores).
			sum := 0.0
			for n, v := range f.Phases {
				sum += v + f.StampCost[n]
			}
			assert.Less(t, sum, f.PhaseCall, k)
			if !f.Global {
				stamps[f.Mode+"/"+f.Copy] = f.Phases
				stamps["cost "+f.Mode+"/"+f.Copy] = f.StampCost
			}
		}
		assert.Equal(t, f.Mean, f.Min, "%s: deterministic", k)
		assert.Equal(t, "instructions", f.Unit, "%s: labelled as instruction counts", k)
		assert.True(t, f.Icount)
		got[k] = f.Mean
	}
	holdPathLengths(t, got)
	return got, stamps
}

// holdPathLengths holds figures measured where the TSC counts
// instructions, by record key, to package pathlength's table
// (pathlength.Of, with its rules for global pages and work rows): at most
// the row's bound, exactly its length where the path is exact. A figure
// whose key has no row fails, named with its figure (the row to add for a
// new configuration).
func holdPathLengths(t *testing.T, got map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(got)) {
		p, err := pathlength.Of(k)
		if errors.Is(err, pathlength.ErrTSCSet) {
			continue
		}
		if !assert.NoError(t, err, "measured %v per operation: every configuration a plan measures has a row in package pathlength's table", got[k]) {
			continue
		}
		checkPathLength(t, k, got[k], p)
	}
}

// requireRows requires a figure in got for every row of package
// pathlength's table whose fields match and whose entry the run measured
// (a plan runs the FRED entry only where it names it): the rows of the
// configurations the plan runs, which the run must not lose.
func requireRows(t *testing.T, got map[string]float64, match func(fields map[string]string) bool) {
	t.Helper()
	entries := map[string]bool{}
	for k := range got {
		entries[keyField(k, "entry")] = true
	}
	rows := 0
	for _, k := range pathlength.Keys() {
		if f := keyFields(t, k); match(f) && entries[f["entry"]] {
			rows++
			require.Contains(t, got, k, "a row of the table that the plan runs")
		}
	}
	require.Positive(t, rows, "the plan runs rows of the table")
}

// keyFields are the fields of a canonical key, by name.
func keyFields(t *testing.T, key string) map[string]string {
	pairs, err := experiment.SplitPairs(key)
	require.NoError(t, err)
	f := map[string]string{}
	for _, p := range pairs {
		f[p[0]] = p[1]
	}
	return f
}

// keyField is the value of field name in a canonical key ("" when it has
// none).
func keyField(key, name string) string {
	pairs, _ := experiment.SplitPairs(key)
	for _, p := range pairs {
		if p[0] == name {
			return p[1]
		}
	}
	return ""
}

// withField is a canonical key with field name's value v: the key of the
// same configuration under another mode ("mode", "off"), IPC, ...
func withField(key, name, v string) string {
	pairs, _ := experiment.SplitPairs(key)
	for i := range pairs {
		if pairs[i][0] == name {
			pairs[i][1] = v
		}
	}
	return experiment.JoinPairs(pairs)
}

// checkPathLength holds path k's measured instructions per operation v
// to p: at most its bound, exactly its length where it is exact.
func checkPathLength(t *testing.T, k string, v float64, p pathlength.Path) {
	t.Helper()
	assert.Positive(t, v, k)
	assert.LessOrEqual(t, int64(v), p.Bound, "%s: instructions per operation", k)
	if p.Exact {
		assert.Equal(t, float64(p.Bound), v, "%s: an exact path (pathlength.Path.Exact), the PMU cross-check's expected count", k)
	}
}

// checkStamps checks the phases of the instrumented 32-bit trampoline
// where the TSC counts instructions: the stamps' calibrated cost is the
// same in every configuration and, taken out, leaves each phase its own
// instructions: none in the CR3 phases under off, SWITCH_TO_KERNEL_CR3's
// and SWITCH_TO_USER_CR3's 3 under on (MOV from CR3, AND or OR, MOV to
// CR3), the same copy under both.
func checkStamps(t *testing.T, stamps map[string]map[string]float64) {
	cost := stamps["cost off/movsl"]
	require.NotNil(t, cost)
	for _, c := range []string{"movsl", "movsb", "trim8", "direct"} {
		on, off := stamps["on/"+c], stamps["off/"+c]
		require.NotNil(t, on, c)
		require.NotNil(t, off, c)
		for _, ph := range []string{"cr3_in", "cr3_out"} {
			assert.Equal(t, 0.0, off[ph], "%s %s under off", c, ph)
			assert.Equal(t, 3.0, on[ph], "%s %s under on", c, ph)
		}
		assert.Equal(t, on["copy_in"], off["copy_in"], c)
		assert.Equal(t, cost, stamps["cost on/"+c], c)
		assert.Equal(t, cost, stamps["cost off/"+c], c)
	}
}

// TestDeadlock provokes a deadlock (two tasks each reading what only the
// other writes) and checks its report: the tasks and what they wait for;
// the run goes on with the next benchmark and ends ok.
func TestDeadlock(t *testing.T) {
	res := boot(t, qemu.Options{Plan: []byte("benchmarks = deadlock,lseek\nmodes = off\nn = 10\nr = 2\nwarmup = 0\n")})
	requireOK(t, res)
	ds := recordsOf[contract.Deadlock](t, res)
	require.Len(t, ds, 1)
	assert.True(t, ds[0].Provoked)
	list := ds[0].Tasks
	require.Len(t, list, 2)
	for i, task := range list {
		assert.Equal(t, "blocked", task.State, "task %d", i)
		assert.Equal(t, "read", task.Wait, "task %d", i)
		assert.Equal(t, i, task.Process, "task %d has its own process", i)
	}
	lines := strings.Join(res.Lines(), "\n")
	assert.Regexp(t, `(?m)^  task 0 \(process 0\) blocked in read on pipe 0, RIP 0x7f800000[0-9a-f]+$`, lines)
	assert.Regexp(t, `(?m)^  task 1 \(process 1\) blocked in read on pipe 1, RIP 0x7f800000[0-9a-f]+$`, lines)
	assert.Len(t, recordsOf[contract.Syscall](t, res), 2, "lseek ran after it: off, global off and on")
}

// TestMessagingOddSize runs sched-messaging with 13-byte messages, whose
// checksum's last quadword overlaps the one before, in both task kinds,
// both worlds and over both IPCs (a socket's reads take bytes across skb
// boundaries, as a pipe's).
func TestMessagingOddSize(t *testing.T) {
	for _, ipc := range []string{"socket", "pipe"} {
		t.Run(ipc, func(t *testing.T) {
			res := boot(t, qemu.Options{Plan: []byte("benchmarks = messaging,messaging32\nmodes = off\nmessaging_groups = 1\nmessaging_loops = 3\nmessaging_size = 13\nmessaging_ipc = " + ipc + "\nr = 1\nwarmup = 0\n")})
			requireOK(t, res)
			ms := recordsOf[contract.Messaging](t, res)
			require.Len(t, ms, 4, "64-bit and 32-bit, processes and threads")
			for _, f := range ms {
				assert.Equal(t, uint64(20*20*3), f.Messages)
				assert.Equal(t, 13, f.Size)
				assert.Equal(t, ipc, f.IPC)
				assert.True(t, f.ChecksumsOK)
			}
		})
	}
}

// pingPongFirstPlan starts with the tasks kernel's benchmarks, whose
// ring-3 tasks return through IRETQ and whose system calls run Go handlers
// on the kernel's FS-based TLS: the first ring-3 run of the boot is one of
// them. With the firmware's FS selector left in place (EDK2's 0x30, DPL 0)
// the IRETQ to ring 3 nulls FS, and QEMU's TCG zeroes its base with it.
const pingPongFirstPlan = "benchmarks = pingpong,messaging\nmodes = off,on\npingpong_n = 20\nmessaging_groups = 1\nmessaging_loops = 2\nr = 2\nwarmup = 0\n"

// TestPingPongFirst boots a plan that starts with ping-pong and messaging:
// the run ends ok with every figure measured, and the Go program runs with
// null FS and GS selectors (the segments check).
func TestPingPongFirst(t *testing.T) {
	res := boot(t, qemu.Options{Plan: []byte(pingPongFirstPlan)})
	requireOK(t, res)
	checkPingPongFirst(t, res)
}

// checkPingPongFirst checks a pingPongFirstPlan run's records: ping-pong and
// messaging, processes and threads, off and on; the segments check passed.
func checkPingPongFirst(t *testing.T, res serialLog) {
	t.Helper()
	assert.Len(t, recordsOf[contract.PingPong](t, res), 4)
	ms := recordsOf[contract.Messaging](t, res)
	assert.Len(t, ms, 4)
	for _, m := range ms {
		assert.True(t, m.ChecksumsOK)
	}
	var seg *contract.Check
	for _, c := range recordsOf[contract.Check](t, res) {
		if c.Name == "segments" {
			seg = &c
		}
	}
	require.NotNil(t, seg, "no segments check")
	assert.True(t, seg.OK, seg.Detail)
}

// retentionPlan runs the TLB retention proof, then the leak oracle and,
// after it, the isolation probe (checkOracle), on the same boot, under the
// default modes (off, on, on+pcid) and the asi ones (checkASIIsolation).
const retentionPlan = "benchmarks = retention,oracle,probe\nmodes = off,on,on+pcid,asi,asi+pcid\noracle_samples = 100\n"

// checkRetention checks a retentionPlan run's answers: for each probe
// ("pcid-noflush", "global") the result want gives ("kept", "walked
// again"), or "unsupported" for a probe the CPU cannot run (an unsupported
// record naming why); each measured one's record and table line, the
// first and back CR3 values equal (the same address space) and the away
// one different.
func checkRetention(t *testing.T, res serialLog, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, u := range recordsOf[contract.Unsupported](t, res) {
		if u.Bench == "retention" {
			got[u.Target] = "unsupported"
			assert.NotEmpty(t, u.Reason, u.Target)
		}
	}
	lines := strings.Join(res.Lines(), "\n")
	for _, r := range recordsOf[contract.Retention](t, res) {
		assert.Equal(t, 64, r.Width)
		assert.Equal(t, r.Probe, r.Target)
		assert.Equal(t, "0x7f8000010000", r.Address)
		switch r.Probe {
		case "pcid-noflush":
			assert.Equal(t, "on+pcid", r.Mode)
			assert.False(t, r.Global)
			// The user PCID, the kernel PCID with NOFLUSH, the user PCID
			// with NOFLUSH, on one PML4.
			first, away, back := hexValue(t, r.First), hexValue(t, r.Away), hexValue(t, r.Back)
			assert.NotZero(t, first&0xfff)
			assert.Equal(t, first|1<<63, back)
			assert.Equal(t, first&^0xfff|1<<63, away&^0xfff)
			assert.NotEqual(t, first&0xfff, away&0xfff)
		case "global":
			assert.Equal(t, "on", r.Mode)
			assert.True(t, r.Global)
			assert.Equal(t, r.First, r.Back)
			assert.NotEqual(t, r.First, r.Away)
		}
		frame := map[string]string{"kept": "A", "walked again": "B"}[r.Result]
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(r.Probe)+`\s+`+regexp.QuoteMeta(r.Mode)+`/\S+\s+0x7f8000010000\s+`+r.First+`\s+`+r.Away+`\s+`+r.Back+`\s+`+r.Result+` \(frame `+frame+`\)$`, lines)
		got[r.Probe] = r.Result
	}
	assert.Equal(t, want, got)
}

// hexValue parses a record's 0x-prefixed hex value.
func hexValue(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	require.NoError(t, err, s)
	return v
}

// TestRetention runs the TLB retention proof under QEMU: TCG flushes its
// TLB on every CR3 write, global pages included, so the global probe sees
// frame B (walked again); its CPUs lack PCID, so the PCID probe is
// unsupported.
//
// The leak oracle rides on the same boot: TCG has no cache model, so it
// is unavailable, and the default CPU has no RDTSCP (LFENCE; RDTSC
// instead). The oracle and the probe run asi (asi+pcid needs PCID).
func TestRetention(t *testing.T) {
	res := boot(t, qemu.Options{Plan: []byte(retentionPlan)})
	requireOK(t, res)
	checkRetention(t, res, map[string]string{"pcid-noflush": "unsupported", "global": "walked again"})
	checkOracle(t, res, 100, false, "off", "on", "asi")
	checkASIIsolation(t, res, "asi")
}

// TestOracle runs the leak oracle under QEMU on a CPU model with RDTSCP
// and Meltdown in its vulnerability table (Skylake-Client): TCG has no
// cache model (CLFLUSH changes nothing), a cached and a flushed load take
// the same path, so the oracle is unavailable. (Under -icount the two
// count the same instructions, 9, as under Bochs (TestBochsRetention);
// that boot took 2 to 3 minutes here, OVMF under icount, so the suite
// boots without it.)
func TestOracle(t *testing.T) {
	res := boot(t, qemu.Options{Plan: []byte("benchmarks = oracle,probe\nmodes = off,on\noracle_samples = 200\n"), CPU: "Skylake-Client"})
	requireOK(t, res)
	checkOracle(t, res, 200, true, "off", "on")
}

// checkOracle checks a run of the leak oracle under an emulator, followed
// by the isolation probe: a calibration in each measured mode, in their
// order, of samples loads each after a getppid, timed by RDTSCP where
// rdtscp, is "oracle unavailable: cache timing not observable" with its
// hit and miss figures (the hits' p90 not below the misses' p10); the
// kernel secret is read once per byte under each of the measured modes
// (the others unsupported), 16 faults recovered per mode, P=1 under off
// and asi (its user table maps the nonsensitive kernel) and P=0 under the
// other isolated modes, at a secret address that every row gives; no
// bytes tried; the meltdown line is the vulnerability table's (the
// sensitive secret's rows: checkASIIsolation). The probe that follows
// still ends its runs at a ring-3 fault, as expected: recovery is the
// oracle's alone.
func checkOracle(t *testing.T, res serialLog, samples int, rdtscp bool, measured ...string) {
	t.Helper()
	lines := strings.Join(res.Lines(), "\n")
	cals := recordsOf[contract.OracleCalibration](t, res)
	require.Len(t, cals, len(measured), "a calibration per measured mode")
	timed := "LFENCE; RDTSC; LFENCE \\(no RDTSCP\\)"
	if rdtscp {
		timed = "RDTSCP; LFENCE"
	}
	assert.Regexp(t, fmt.Sprintf(`(?m)^calibration, in each mode: %d loads of a cached and of a flushed line, each after a getppid \(its kernel entry and exit, as the reloads follow the fault's\), timed by %s, %s: p10/p50/p90 \(min-max\)$`,
		samples, timed, cals[0].Unit), lines)
	for i, c := range cals {
		assert.Equal(t, measured[i], c.Mode, "in the modes' order")
		assert.Equal(t, samples, c.Samples)
		assert.Equal(t, "getppid", c.After)
		assert.False(t, c.Observable)
		assert.Zero(t, c.Threshold)
		assert.Equal(t, "oracle unavailable: cache timing not observable", c.Verdict)
		assert.GreaterOrEqual(t, c.Hit.P90, c.Miss.P10, "the rule")
		assert.Positive(t, c.Hit.P50)
		assert.Positive(t, c.Miss.P50)
		assert.Regexp(t, fmt.Sprintf(`(?m)^calibration %s: hits %d/%d/%d \(%d-%d\), misses %d/%d/%d \(%d-%d\): oracle unavailable: cache timing not observable$`,
			regexp.QuoteMeta(c.Mode), c.Hit.P10, c.Hit.P50, c.Hit.P90, c.Hit.Min, c.Hit.Max, c.Miss.P10, c.Miss.P50, c.Miss.P90, c.Miss.Min, c.Miss.Max), lines)
		t.Logf("oracle calibration under %s (%s): hits %+v, misses %+v", c.Mode, c.Unit, c.Hit, c.Miss)
	}

	vul := recordsOf[contract.Vulnerabilities](t, res)
	require.Len(t, vul, 1)
	rows := map[string]contract.Oracle{}
	for _, r := range recordsOf[contract.Oracle](t, res) {
		if r.Target == "" { // the kernel secret's
			rows[r.Mode] = r
		}
	}
	mapped := map[string]bool{"off": true, "asi": true, "asi+pcid": true} // the kernel secret in ring 3's table
	require.Len(t, rows, len(measured))
	secret := rows["off"].Secret
	assert.NotEmpty(t, secret)
	for _, mode := range measured {
		r, ok := rows[mode]
		require.True(t, ok, mode)
		assert.Equal(t, 64, r.Width)
		assert.Equal(t, secret, r.Secret, "one secret")
		assert.Contains(t, r.SecretPage, "supervisor-only")
		assert.Equal(t, 16, r.Bytes)
		assert.Equal(t, 1, r.Attempts)
		assert.EqualValues(t, 16, r.Faults, "%s: a recovered fault per byte", mode)
		require.NotNil(t, r.AsExpected)
		assert.True(t, *r.AsExpected, mode)
		assert.Equal(t, mapped[mode], r.Present, mode)
		want := uint64(4)
		if mapped[mode] {
			want = 5
		}
		assert.Equal(t, want, r.ErrorCode, mode)
		assert.False(t, r.Tried)
		assert.Nil(t, r.Recovered)
		assert.Empty(t, r.Leaked)
		assert.Equal(t, "oracle unavailable: cache timing not observable", r.Reason)
		assert.Equal(t, vul[0].Table["meltdown"], r.Meltdown)
		assert.Regexp(t, fmt.Sprintf(`(?m)^%s\s+#PF P=%d \(error %#x\)\s+16\s+1\s+not tried: oracle unavailable: cache timing not observable$`,
			regexp.QuoteMeta(mode), want&1, want), lines)
	}
	for _, u := range recordsOf[contract.Unsupported](t, res) {
		if u.Bench == "oracle" {
			assert.NotContains(t, measured, u.Mode)
			assert.NotEmpty(t, u.Reason)
		}
	}
	assert.Contains(t, lines, fmt.Sprintf("ring 3 reads a kernel secret, 16 bytes %q at %s", "PTI:Meltdown/F+R", secret))

	// The recovery's limit: the fault past it ended that run.
	limits := 0
	for _, ck := range recordsOf[contract.Check](t, res) {
		if ck.Name == "oracle limit" {
			limits++
			assert.True(t, ck.OK, ck.Detail)
			assert.Contains(t, ck.Detail, "1 recovered, then the run ended: #PF page fault in ring 3, error 0x5")
			assert.Contains(t, ck.Detail, "CR2 "+secret)
		}
	}
	assert.Equal(t, 1, limits, "the oracle limit check")

	// The probe after the oracle: a ring-3 fault ends the run again.
	probed := 0
	for _, p := range inWorld[contract.Probe](t, res, 64) {
		require.NotNil(t, p.AsExpected)
		assert.True(t, *p.AsExpected, "%+v", p)
		if p.Target == "kernel text" {
			probed++
			assert.True(t, p.Faulted, "%+v", p)
		}
	}
	assert.Positive(t, probed, "the probe ran after the oracle")
}

// flushCostPlan times the flush operations, small.
const flushCostPlan = "benchmarks = flushcost\nn = 100\nr = 3\nwarmup = 1\n"

// flushOps are the flush-cost table's operations by record name, with
// their rows' titles.
var flushOps = map[string]string{
	"mov cr3": "MOV to CR3, no PCID", "mov cr3 pcid noflush": "MOV to CR3, PCID 0, NOFLUSH", "mov cr3 pcid": "MOV to CR3, PCID 0, no NOFLUSH",
	"invlpg": "INVLPG of a page the TLB does not hold", "invlpg live": "load + INVLPG of a just-used page",
	"invpcid 0": "INVPCID type 0 (one address)", "invpcid 1": "INVPCID type 1 (one PCID)",
	"invpcid 2": "INVPCID type 2 (all, global too)", "invpcid 3": "INVPCID type 3 (all but global)", "cr4.pge toggle": "CR4.PGE toggle (two MOVs to CR4)",
}

// checkFlushCost checks a flushCostPlan run: every operation of flushOps
// either measured, with a record (unit unit, per-operation figures over
// the plan's repeats) and a table row, or unsupported, with an
// unsupported record and row, as unsupported lists them; it returns the
// mean per operation by name.
func checkFlushCost(t *testing.T, res serialLog, unit string, unsupported ...string) map[string]float64 {
	t.Helper()
	lines := strings.Join(res.Lines(), "\n")
	got := map[string]float64{}
	for _, r := range recordsOf[contract.FlushCost](t, res) {
		assert.Equal(t, "flushcost", r.Bench)
		assert.Equal(t, unit, r.Unit, r.Target)
		assert.Equal(t, 100, r.N)
		assert.Equal(t, 3, r.R)
		assert.Equal(t, 3, r.PerOp.N, r.Target)
		assert.Positive(t, r.EmptyLoopCycles, r.Target)
		assert.LessOrEqual(t, r.PerOp.Min, r.PerOp.Median, r.Target)
		assert.LessOrEqual(t, r.PerOp.Median, r.PerOp.Max, r.Target)
		require.Contains(t, flushOps, r.Target)
		// The last column, ns/op, is "-" where the TSC counts instructions.
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(flushOps[r.Target])+`\s+[0-9]+\.[0-9]\s+\S+\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+|-)$`, lines)
		got[r.Target] = r.PerOp.Mean
	}
	var unsup []string
	for _, u := range recordsOf[contract.Unsupported](t, res) {
		if u.Bench == "flushcost" {
			unsup = append(unsup, u.Target)
			assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(flushOps[u.Target])+`\s+unsupported: `+regexp.QuoteMeta(u.Reason)+`$`, lines)
		}
	}
	assert.ElementsMatch(t, unsupported, unsup)
	assert.Len(t, got, len(flushOps)-len(unsupported), "measured: %v", got)
	return got
}

// checkFlushPathLengths holds the instructions per flush operation of a
// run where the TSC counts instructions (measured: by operation) to the
// table (holdPathLengths), and requires a row of it for every operation
// measured.
func checkFlushPathLengths(t *testing.T, res serialLog, measured map[string]float64) {
	t.Helper()
	got := map[string]float64{}
	for _, r := range recordsOf[contract.FlushCost](t, res) {
		got[r.Key()] = r.PerOp.Mean
		assert.Greater(t, r.PerOp.Mean, 0.5, r.Key())
	}
	require.Len(t, got, len(measured))
	holdPathLengths(t, got)
	requireRows(t, got, func(f map[string]string) bool { return f["bench"] == "flushcost" && measured[f["target"]] > 0 })
}

// flushNoPCID are the flush operations a CPU without PCID or INVPCID
// (QEMU TCG's) cannot run.
var flushNoPCID = []string{"mov cr3 pcid noflush", "mov cr3 pcid", "invpcid 0", "invpcid 1", "invpcid 2", "invpcid 3"}

// TestFlushCost times the flush operations under QEMU TCG: MOV to CR3
// without PCID, INVLPG and the CR4.PGE toggle measured in TSC cycles, the
// PCID and INVPCID rows unsupported.
func TestFlushCost(t *testing.T) {
	res := boot(t, qemu.Options{Plan: []byte(flushCostPlan)})
	requireOK(t, res)
	got := checkFlushCost(t, res, "tsc_cycles", flushNoPCID...)
	for k, v := range got {
		assert.Positive(t, v, k)
	}
}

// sweepKeys are the TLB sweep's keys of the path-length and Bochs boots:
// small points of the user sweeps (4 KiB and 2 MiB pages) and of the
// kernel's, global pages off.
const sweepKeys = "tlbsweep_pages = 0,1,16\ntlbsweep_kernel_pages = 0,1,16\ntlbsweep_n = 20\nglobal = off\n"

// flushSweepPlan times the flush operations (as flushCostPlan) and runs
// the TLB sweep, in one boot.
const flushSweepPlan = "benchmarks = flushcost,tlbsweep\nn = 100\nr = 3\nwarmup = 1\n" + sweepKeys

// sweepKinds are the sweep's kinds (record targets) with their page size
// and first page.
var sweepKinds = map[string]struct {
	pageBytes uint64
	region    string
}{
	"user 4k":   {4096, "0x7f8040000000"},
	"user 2m":   {2 << 20, "0x7f9000000000"},
	"kernel 4k": {4096, "0xffffff0000000000"},
}

// sweepPoint is a sweep record's or row's configuration.
type sweepPoint struct {
	kind, mode string
	global     bool
	pages      int
}

// String is p's canonical key (contract.Subject.Key), as its record's.
func (p sweepPoint) String() string {
	pages := p.pages
	return contract.Subject{Bench: "tlbsweep", Width: 64, Mode: p.mode, Global: p.global, Target: p.kind, SweepPages: &pages}.Key()
}

// checkSweep checks a run of the TLB sweep with points (pages per kind),
// modes and globals: every point a tlbsweep record (unit unit, 20 calls
// per repeat, 3 repeats after 1, what was touched) and a table row, or,
// for a mode of unsupported, an unsupported record saying PCID and its
// row; each measured mode's extra over off and ratio are its mean's
// difference from and ratio to off's. It returns the means by point.
func checkSweep(t *testing.T, res serialLog, unit string, points map[string][]int, modes []string, globals []bool, unsupported ...string) map[sweepPoint]float64 {
	t.Helper()
	lines := strings.Join(res.Lines(), "\n")
	row := func(p sweepPoint) string {
		return fmt.Sprintf(`(?m)^%-6s %6d %s\s+`, map[bool]string{false: "no", true: "yes"}[p.global], p.pages, regexp.QuoteMeta(p.mode))
	}
	got := map[sweepPoint]float64{}
	recs := map[sweepPoint]contract.TLBSweep{}
	for _, r := range recordsOf[contract.TLBSweep](t, res) {
		require.NotNil(t, r.SweepPages)
		p := sweepPoint{r.Target, r.Mode, r.Global, *r.SweepPages}
		kind, ok := sweepKinds[r.Target]
		require.True(t, ok, p.String())
		assert.Equal(t, "tlbsweep", r.Bench)
		assert.Equal(t, 64, r.Width)
		assert.True(t, r.Emulated, p.String())
		assert.Equal(t, unit, r.Unit, p.String())
		assert.Equal(t, 20, r.N)
		assert.Equal(t, 3, r.R)
		assert.Equal(t, 1, r.Warmup)
		assert.Equal(t, strings.Fields(r.Target)[0], r.Side)
		assert.Equal(t, kind.region, r.Region)
		assert.Equal(t, kind.pageBytes, r.PageBytes)
		assert.Equal(t, kind.pageBytes, r.Stride)
		assert.Equal(t, kind.pageBytes, r.FrameBytes)
		assert.Equal(t, 4096, r.VirtualPages)
		assert.Equal(t, 1, r.Frames)
		assert.Equal(t, 1, r.BytesPerTouch)
		assert.Contains(t, r.Offset, "(k*64) mod 4096")
		assert.NotContains(t, recs, p, "one record per point")
		// The table prints the mean before the record rounds it to 3
		// decimals: either neighbour of a rounding edge.
		lo, hi := regexp.QuoteMeta(fmt.Sprintf("%.1f", r.Mean-0.001)), regexp.QuoteMeta(fmt.Sprintf("%.1f", r.Mean+0.001))
		assert.Regexp(t, row(p)+`(`+lo+`|`+hi+`)\s`, lines, p.String())
		recs[p] = r
		got[p] = r.Mean
	}
	var unsup []string
	for _, u := range recordsOf[contract.Unsupported](t, res) {
		if u.Bench != "tlbsweep" {
			continue
		}
		require.NotNil(t, u.SweepPages)
		p := sweepPoint{u.Target, u.Mode, u.Global, *u.SweepPages}
		assert.Contains(t, unsupported, u.Mode, p.String())
		assert.Contains(t, u.Reason, "PCID", p.String())
		assert.Regexp(t, row(p)+`unsupported: PCID: not supported by this CPU$`, lines, p.String())
		unsup = append(unsup, p.String())
	}
	n := 0
	for kind, pages := range points {
		for _, g := range globals {
			for _, pg := range pages {
				off, ok := recs[sweepPoint{kind, "off", g, pg}]
				require.True(t, ok, sweepPoint{kind, "off", g, pg}.String())
				assert.Nil(t, off.ExtraVsOff, "off has no extra over itself")
				for _, mode := range modes {
					n++
					p := sweepPoint{kind, mode, g, pg}
					if slices.Contains(unsupported, mode) {
						assert.Contains(t, unsup, p.String())
						continue
					}
					r, ok := recs[p]
					require.True(t, ok, p.String())
					if mode == "off" {
						continue
					}
					require.NotNil(t, r.ExtraVsOff, p.String())
					assert.InDelta(t, r.Mean-off.Mean, *r.ExtraVsOff, 0.002, p.String())
					assert.InDelta(t, r.Mean/off.Mean, r.RatioToOff, 0.002, p.String())
				}
			}
		}
	}
	assert.Equal(t, n, len(recs)+len(unsup), "a record per point, mode and global setting")
	return got
}

// sweepPoints are sweepKeys's points.
var sweepPoints = map[string][]int{"user 4k": {0, 1, 16}, "user 2m": {0, 1, 16}, "kernel 4k": {0, 1, 16}}

// checkSweepPathLengths holds the sweep's instructions per call of a run
// where the TSC counts them (global pages off; got: by point) to the
// table (holdPathLengths), requiring a row for every point measured; each
// page touched adds the same instructions.
func checkSweepPathLengths(t *testing.T, res serialLog, got map[sweepPoint]float64) {
	t.Helper()
	byKey := map[string]float64{}
	for _, r := range recordsOf[contract.TLBSweep](t, res) {
		byKey[r.Key()] = r.Mean
	}
	holdPathLengths(t, byKey)
	modes := map[string]bool{}
	for p := range got {
		modes[p.mode] = true
	}
	requireRows(t, byKey, func(f map[string]string) bool { return f["bench"] == "tlbsweep" && modes[f["mode"]] })
	for p, v := range got {
		require.False(t, p.global)
		k := p.String()
		q := p
		q.pages = 0
		if p.pages > 0 {
			assert.Equal(t, 7*float64(p.pages), v-got[q], "%s: 7 instructions per page touched", k)
		}
		if p.mode != "off" {
			q = p
			q.mode = "off"
			assert.Greater(t, v, got[q], "%s: isolation costs instructions", k)
		}
	}
}

// TestTLBSweep runs the TLB sweep under QEMU TCG, global pages off and on:
// the rows of off and on measured in TSC cycles (emulated: TCG flushes its
// whole soft TLB at every CR3 write, so on's extra is large at every N),
// on+pcid's unsupported (TCG has no PCID).
func TestTLBSweep(t *testing.T) {
	res := boot(t, qemu.Options{Plan: []byte("benchmarks = tlbsweep\nr = 3\nwarmup = 1\ntlbsweep_pages = 0,16,256\ntlbsweep_kernel_pages = 0,16\ntlbsweep_n = 20\n")})
	requireOK(t, res)
	points := map[string][]int{"user 4k": {0, 16, 256}, "user 2m": {0, 16, 256}, "kernel 4k": {0, 16}}
	got := checkSweep(t, res, "tsc_cycles", points, []string{"off", "on", "on+pcid"}, []bool{false, true}, "on+pcid")
	for p, v := range got {
		assert.Positive(t, v, p.String())
		if p.mode == "on" && p.pages <= 16 {
			off := p
			off.mode = "off"
			assert.Greater(t, v, got[off], "%s: TCG's flush at every CR3 write", p)
		}
	}
	assert.Contains(t, strings.Join(res.Lines(), "\n"), "EMULATED (QEMU TCG): these are not hardware timings")
}

// laddersPlan is the mitigation ladder of both worlds at
// pathLengthSizes's sizes, under off: one boot for both (a boot under
// -icount costs about 50 s of CPU, most of it OVMF's).
const laddersPlan = "benchmarks = ladder, ladder32\nmodes = off\nn = 100\npingpong_n = 20\nr = 3\nwarmup = 1\n"

// rung is the key of a rung of the ladder benchmark bench ("ladder",
// "ladder32") under off: the null call's, or the ping-pong's (processes)
// where op is "pingpong"; knobs are the mitigated flavour's, or "linux
// flavour" for the linux flavour's rung.
func rung(bench, op, knobs string) string {
	s := contract.Subject{Bench: bench, Width: 64, Mode: "off", Entry: "syscall", Flavour: "mitigated", Mitigations: knobs}
	if bench == "ladder32" {
		s.Width, s.Entry, s.Copy = 32, "sysenter", "direct"
	}
	if knobs == "linux flavour" {
		s.Flavour, s.Mitigations = "linux", ""
	}
	if op == "pingpong" {
		s.Tasks = "processes"
	}
	return s.Key()
}

// ladderFigures collects a ladder run's figures (deterministic, from its
// syscall and pingpong records, all under off) and holds them to the
// table (holdPathLengths), and its ladder records' increments (every
// rung's but the linux flavour's, which is over none) and parts, keyed by
// record key (rung); a ladder record per measured rung, with its figure.
func ladderFigures(t *testing.T, res serialLog) (got, incs map[string]float64, parts map[string]string) {
	t.Helper()
	return ladderFiguresOf(t, res, "ladder")
}

// ladderFiguresOf is ladderFigures for the ladder benchmark named bench
// (ladder or ladder32).
func ladderFiguresOf(t *testing.T, res serialLog, bench string) (got, incs map[string]float64, parts map[string]string) {
	t.Helper()
	got, incs, parts = map[string]float64{}, map[string]float64{}, map[string]string{}
	// figure takes a syscall or pingpong record's figure, the same at
	// every repeat.
	figure := func(s contract.Subject, st contract.Stats) {
		assert.Equal(t, st.Mean, st.Min, "%s: deterministic", s.Key())
		got[s.Key()] = st.Mean
	}
	for _, f := range recordsOf[contract.Syscall](t, res) {
		if f.Bench != bench {
			continue // the other world's ladder (laddersPlan runs both)
		}
		assert.Equal(t, "off", f.Mode)
		figure(f.Subject, f.Stats)
	}
	for _, f := range recordsOf[contract.PingPong](t, res) {
		if f.Bench != bench {
			continue
		}
		assert.Equal(t, "processes", f.Tasks)
		figure(f.Subject, f.Stats)
	}
	for _, l := range recordsOf[contract.Ladder](t, res) {
		if l.Bench != bench {
			continue
		}
		k := l.Key()
		assert.InDelta(t, got[k], l.Mean, 0.001, k)
		assert.Equal(t, "instructions", l.Unit, k)
		parts[k] = l.Part
		if l.Part == "flavour" {
			assert.Nil(t, l.Increment, k)
			continue
		}
		require.NotNil(t, l.Increment, k)
		incs[k] = *l.Increment
	}
	assert.Len(t, parts, len(got), "a ladder record per measured rung")
	holdPathLengths(t, got)
	return got, incs, parts
}

// checkLadder checks a laddersPlan run under QEMU -icount (its 64-bit
// ladder): every rung of
// both tables recorded (syscall or pingpong records with their knobs, a
// ladder record with the increment), the path lengths within the table
// (every row of bench ladder but ibrs's and ibpb's measured), each knob TCG runs costing instructions over none
// (alone) and over the rung below (stacked), none over the linux flavour;
// ibrs and ibpb unsupported (TCG enumerates neither IA32_SPEC_CTRL nor
// IA32_PRED_CMD), with their rows saying why; and the linux set QEMU's
// default CPU (AMD family 0FH: retpolines, RSB filling) gives.
func checkLadder(t *testing.T, res serialLog) {
	t.Helper()
	lines := strings.Join(res.Lines(), "\n")
	assert.Contains(t, lines, "linux = rsb+retpoline, as Linux 6.6.y")
	assert.Contains(t, lines, "verw here: no MD_CLEAR: VERW clears nothing")
	got, incs, parts := ladderFigures(t, res)
	requireRows(t, got, func(f map[string]string) bool {
		return f["bench"] == "ladder" && !strings.Contains(f["knobs"], "ibrs") && !strings.Contains(f["knobs"], "ibpb")
	})
	for k, inc := range incs {
		assert.Positive(t, inc, "%s: costs instructions over the rung it is over", k)
	}
	for _, op := range []string{"null", "pingpong"} {
		none := rung("ladder", op, "none")
		assert.Equal(t, got[none]-got[rung("ladder", op, "linux flavour")], incs[none], op)
		for _, knob := range []string{"verw", "bhb", "lfence", "retpoline"} {
			k := rung("ladder", op, knob)
			assert.Equal(t, "alone", parts[k], k)
			assert.Equal(t, got[k]-got[none], incs[k], k)
		}
		assert.Equal(t, "linux", parts[rung("ladder", op, "rsb+retpoline")], op)
	}
	assert.Equal(t, "alone", parts[rung("ladder", "pingpong", "rsb")])
	assert.Equal(t, 12.0, incs[rung("ladder", "null", "none")], "6 disabled sites on the null path, 2 instructions each")
	assert.Equal(t, "stacked", parts[rung("ladder", "null", "verw+bhb+lfence+retpoline")])
	assert.Equal(t, "stacked", parts[rung("ladder", "pingpong", "verw+rsb+bhb+lfence+retpoline")])
	assert.ElementsMatch(t, []string{"null/ibrs", "pingpong/ibrs", "pingpong/ibpb"}, unsupportedRungs(t, res, "ladder"))
	assert.Regexp(t, `(?m)^off\s+alone\s+ibrs\s+- none\s+unsupported: ibrs: no IA32_SPEC_CTRL`, lines)
	assert.Regexp(t, `(?m)^off\s+alone\s+ibpb\s+- none\s+unsupported: ibpb: no IA32_PRED_CMD`, lines)
	t.Logf("the ladder's instructions per operation under icount: %v", got)
}

// checkLadder32 checks a laddersPlan run under QEMU -icount (its 32-bit
// ladder) as
// checkLadder the 64-bit one: every rung recorded, the path lengths
// within the table (every row of bench ladder32 but ibpb's measured), the
// linux flavour's null call exactly the plain direct trampoline's
// (pathlength: the mitigated variant
// left it as it was), each knob costing instructions over none and each
// stacked rung over the one below, none 8 over the linux flavour (4
// disabled sites); ibrs, bhb and lfence unsupported because Linux's
// entry_32.S lacks them, ibpb because TCG has no IA32_PRED_CMD; linux's
// set cut to entry_32.S's knobs.
func checkLadder32(t *testing.T, res serialLog) {
	t.Helper()
	lines := strings.Join(res.Lines(), "\n")
	assert.Contains(t, lines, "in 32-bit: linux = rsb+retpoline (entry_32.S has verw+ibpb+rsb+retpoline only)")
	got, incs, parts := ladderFiguresOf(t, res, "ladder32")
	requireRows(t, got, func(f map[string]string) bool {
		return f["bench"] == "ladder32" && !strings.Contains(f["knobs"], "ibpb")
	})
	direct, err := pathlength.Of(contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Copy: "direct"}.Key())
	require.NoError(t, err)
	assert.EqualValues(t, direct.Bound, got[rung("ladder32", "null", "linux flavour")], "the plain direct trampoline's path")
	for k, inc := range incs {
		assert.Positive(t, inc, "%s: costs instructions over the rung it is over", k)
	}
	for _, op := range []string{"null", "pingpong"} {
		none := rung("ladder32", op, "none")
		for _, knob := range []string{"verw", "retpoline"} {
			k := rung("ladder32", op, knob)
			assert.Equal(t, "alone", parts[k], k)
			assert.Equal(t, got[k]-got[none], incs[k], k)
		}
		assert.Equal(t, "linux", parts[rung("ladder32", op, "rsb+retpoline")], op)
	}
	assert.Equal(t, "alone", parts[rung("ladder32", "pingpong", "rsb")])
	assert.Equal(t, "stacked", parts[rung("ladder32", "null", "verw+retpoline")])
	assert.Equal(t, "stacked", parts[rung("ladder32", "pingpong", "verw+rsb+retpoline")])
	assert.Equal(t, 8.0, incs[rung("ladder32", "null", "none")], "4 disabled sites on the null path, 2 instructions each")
	assert.ElementsMatch(t, []string{"null/ibrs", "null/bhb", "null/lfence", "pingpong/ibrs", "pingpong/ibpb", "pingpong/bhb", "pingpong/lfence"}, unsupportedRungs(t, res, "ladder32"))
	for _, knob := range []string{"ibrs", "bhb", "lfence"} {
		assert.Regexp(t, `(?m)^off\s+alone\s+`+knob+`\s+- none\s+unsupported: `+knob+`: not in 32-bit Linux's entry`, lines)
	}
	assert.Regexp(t, `(?m)^off\s+alone\s+ibpb\s+- none\s+unsupported: ibpb: no IA32_PRED_CMD`, lines)
	t.Logf("the 32-bit ladder's instructions per operation under icount: %v", got)
}

// unsupportedRungs returns the rungs of ladder (bench "ladder" or
// "ladder32", not the other width's) that res records as unsupported, each
// as "null/<mitigations>" or "pingpong/<mitigations>" (a record with tasks
// is the ping-pong's).
func unsupportedRungs(t *testing.T, res serialLog, ladder string) []string {
	t.Helper()
	var unsup []string
	for _, u := range recordsOf[contract.Unsupported](t, res) {
		if u.Bench != ladder {
			continue
		}
		bench := "null"
		if u.Tasks != "" {
			bench = "pingpong"
		}
		unsup = append(unsup, bench+"/"+u.Mitigations)
	}
	return unsup
}

// checkLoopOffsets checks a run whose plan has "loop_offset = 0,4064"
// (qemuDeferredPathLengths's, under QEMU -icount) for that key (issue 21, item
// 3): every configuration measured at offset 0 is measured again at 4064
// (a whole code page further less 32: pti.PlacePrograms,
// i386pae.PlaceUserText, whose SYSENTER return point follows the user
// text), its record keyed with the offset; and the figures, instruction
// counts here, are the same at both offsets, which is the proof behind
// package pathlength's rule that a loop_offset key has the row of the key
// without it (holdPathLengths applies it). The loop-placement table sets
// them side by side.
func checkLoopOffsets(t *testing.T, res serialLog, got map[string]float64) {
	t.Helper()
	// The offset is the key's last field (contract.Subject.Key).
	const shift = " loop_offset=4064"
	bases, shifted := 0, 0
	for k, v := range got {
		base, ok := strings.CutSuffix(k, shift)
		if !ok {
			require.NotContains(t, k, " loop_offset=", "%s: an offset the plan does not have", k)
			// Every row of the plan's benchmarks that take the key (null
			// and lseek, the 32-bit null call with its copy methods and
			// phases, the 32-bit ping-pong) again at 4064.
			if slices.Contains([]string{"null", "lseek", "null32", "pingpong"}, keyField(k, "bench")) {
				bases++
				assert.Contains(t, got, k+shift, "%s: measured again at 4064", k)
			}
			continue
		}
		shifted++
		require.Contains(t, got, base, "%s: measured at offset 0 too", k)
		assert.Equal(t, got[base], v, "%s: the same instructions as at offset 0", k)
	}
	assert.GreaterOrEqual(t, bases, 8+8)
	assert.Equal(t, bases, shifted, "as many rows at 4064 as at 0")
	for _, s := range recordsOf[contract.Syscall](t, res) {
		assert.Contains(t, []int{0, 4064}, s.LoopOffset)
	}
	log := strings.Join(res.Lines(), "\n")
	assert.Contains(t, log, "loop placement: null32 again with the ring-3 programs shifted by loop_offset bytes")
	assert.Contains(t, log, "ptilab: pingpong32: the ring-3 programs 4064 bytes further")
}

// The asi modes (issue 26, pti/asi.go): the kernel runs on the
// nonsensitive table and goes to the sensitive one on its page fault on
// user data (the processes' pages, the pipe and socket rings).

// asiPathPlan is null, lseek, the ping-pong and sched-messaging (over
// pipes) under off, on and modes, each asi mode with every set of asi
// actions of asiActions, at pathLengthSizes's sizes.
func asiPathPlan(modes string) string {
	return "benchmarks = null,lseek,pingpong,messaging\nmodes = off,on," + modes + "\nasi_actions = " + strings.Join(asiActions, ",") +
		"\nglobal = off\n" + pathLengthSizes
}

// asiActions are the asi boots' sets of asi actions: none, and each
// action alone.
var asiActions = []string{"none", "verw", "l1d", "rsb"}

// asiActionCost is the instructions asiActions (pti/entry_amd64.s) runs
// at a transition for the actions named (ASI_ACTIONS calls it only when
// there are some), from its code: the CALL, the three TESTs and JEQs and
// the RET (8); verw's VERW (1); l1d's three saves, the MSR number, the
// value, EDX cleared, WRMSR and three restores (10); rsb's save, count,
// 16 rounds of two CALLs, the stack's ADD, DEC and JNE (80), LFENCE and
// restore (84).
func asiActionCost(actions string) float64 {
	if actions == "none" {
		return 0
	}
	cost := 8.0
	for _, a := range strings.Split(actions, "+") {
		cost += map[string]float64{"verw": 1, "l1d": 10, "rsb": 84}[a]
	}
	return cost
}

// qemuASIPathLengths boots asiPathPlan under -icount shift=0, holds its
// path lengths to the table and checks the transitions (checkASI); TCG
// has no IA32_FLUSH_CMD, so l1d's rows are unsupported.
func qemuASIPathLengths(t *testing.T) map[string]float64 {
	res := boot(t, qemu.Options{Icount: true, Plan: []byte(asiPathPlan("asi")), Timeout: 10 * time.Minute})
	requireOK(t, res)
	got, _ := pathLengths(t, res)
	checkASI(t, res, got, false, "asi")
	t.Logf("instructions per operation with asi under icount: %v", got)
	return got
}

// bochsASIModel is the Bochs model of the asi boot: PCID and
// IA32_FLUSH_CMD (CPUID.(EAX=07H,ECX=0):EDX[28]), so that asi+pcid and
// the l1d action run.
const bochsASIModel = "arrow_lake"

// bochsASI boots asiPathPlan with asi and asi+pcid under Bochs's
// bochsASIModel and checks the same.
func bochsASI(t *testing.T) map[string]float64 {
	res := bootBochs(t, bochs.Options{CPU: bochsASIModel, Plan: []byte(asiPathPlan("asi,asi+pcid")), Timeout: bochsMatrixTimeout})
	requireBochsOK(t, res)
	got, _ := pathLengths(t, res)
	checkASI(t, res, got, true, "asi", "asi+pcid")
	t.Logf("instructions per operation with asi under Bochs: %v", got)
	return got
}

// checkASI checks an asi run's records: every benchmark has a row in
// each asi mode with each set of asi actions (l1d's unsupported unless
// flushCmd: the CPU has IA32_FLUSH_CMD), and each row's ASI transitions
// are the count the design gives. A system call enters on the
// nonsensitive table and the tasks kernel's context switch loads the next
// process's nonsensitive table, so every copy into or out of a ring that a
// system call makes first in its entry, or first after a switch, faults
// once; the benchmarks' calls copy once each, and no call blocks after a
// copy (tasks.TestNoBlockAfterCopy), so every switch happens on the
// nonsensitive table:
//   - getppid and lseek touch no user data: 0;
//   - the ping-pong: a write and a read of each pipe per round trip: 4
//     per round trip (processes and threads alike: a write's way out
//     goes back to the nonsensitive table before the read that blocks);
//   - sched-messaging: a sender's write and a receiver's read per
//     message, and the start protocol: each task's ready byte and wake
//     byte (2 per task), the starter's one read of every ready byte (each
//     task has written it before the starter runs again: the run queue
//     is FIFO) and its one write of the wake bytes.
//
// The actions do not change the transitions; each transition pays them
// (asiActionCost) beyond the same row without actions: 4 per round trip,
// and per message at least the 2 of its copies and at most all the run's
// (the start protocol's lie partly before the timed start signal).
// The other modes' records carry no transitions.
func checkASI(t *testing.T, res serialLog, got map[string]float64, flushCmd bool, modes ...string) {
	isASI := func(mode string) bool { return slices.Contains(modes, mode) }
	rows := map[string]int{}
	// count is a record's transitions: absent outside the asi modes (ok
	// false), present in them.
	count := func(key, mode string, n *uint64) (uint64, bool) {
		if !isASI(mode) {
			assert.Nil(t, n, "%s", key)
			return 0, false
		}
		rows[mode+"["+keyField(key, "asi_actions")+"]"]++
		require.NotNil(t, n, "%s", key)
		return *n, true
	}
	for _, r := range recordsOf[contract.Syscall](t, res) {
		if n, ok := count(r.Key(), r.Mode, r.ASITransitions); ok {
			assert.Zero(t, n, "%s: no user data touched", r.Key())
		}
	}
	for _, r := range recordsOf[contract.PingPong](t, res) {
		if n, ok := count(r.Key(), r.Mode, r.ASITransitions); ok {
			assert.Equal(t, uint64(pathLengthPingPongN*4), r.RoundTrips, "%s: the round trips of 3 repeats and the warm-up", r.Key())
			assert.Equal(t, 4*r.RoundTrips, n, "%s: 4 per round trip", r.Key())
		}
	}
	perMessage := map[string]float64{} // a messaging row's transitions per message
	for _, r := range recordsOf[contract.Messaging](t, res) {
		if n, ok := count(r.Key(), r.Mode, r.ASITransitions); ok {
			tasks := uint64(2 * 20 * r.Groups)
			assert.Equal(t, uint64(20*20*r.Groups*r.Loops), r.Messages, "%s", r.Key())
			assert.Equal(t, 2*r.Messages+2*tasks+2, n, "%s: 2 per message and the start protocol's", r.Key())
			perMessage[r.Key()] = float64(n) / float64(r.Messages)
		}
	}
	unsupported := map[string]int{}
	for _, r := range recordsOf[contract.Unsupported](t, res) {
		if isASI(r.Mode) {
			assert.Equal(t, "l1d", r.ASIActions, "%s: only l1d may be unsupported", r.Key())
			assert.Contains(t, r.Reason, "asi actions: l1d: no IA32_FLUSH_CMD (CPUID.(EAX=07H,ECX=0):EDX[28])", r.Key())
			unsupported[r.Mode]++
		}
	}
	for _, m := range modes {
		for _, a := range asiActions {
			// null (minimal, linux), lseek (global pages off and on: the
			// lseek table's), ping-pong and sched-messaging (processes,
			// threads).
			want := 8
			if a == "l1d" && !flushCmd {
				want = 0
				assert.Equal(t, 8, unsupported[m], "the unsupported l1d rows of %s", m)
			}
			assert.Equal(t, want, rows[m+"["+a+"]"], "the rows of %s with asi actions %s", m, a)
		}
	}
	// getppid and lseek pay only the flag's test on the way out (CMP,
	// JE: off's path and 2), whatever the actions; the ping-pong and
	// sched-messaging pay their transitions beyond it, and the actions'
	// cost per transition beyond those.
	for k, v := range got {
		if !isASI(keyField(k, "mode")) {
			continue
		}
		off := got[offKey(k)]
		actions := keyField(k, "asi_actions")
		none := got[withField(k, "asi_actions", "none")]
		cost := asiActionCost(actions)
		switch keyField(k, "bench") {
		case "null", "lseek":
			assert.Equal(t, off+2, v, "%s: off's path and the flag's test", k)
		case "pingpong":
			assert.Greater(t, none, off+2, "%s: longer than off's and the flag's test", k)
			assert.InDelta(t, none+4*cost, v, 1e-9, "%s: 4 transitions per round trip, each running its actions", k)
		default:
			assert.Greater(t, none, off+2, "%s: longer than off's and the flag's test", k)
			// the figures are rounded to 0.1
			assert.GreaterOrEqual(t, v-none, 2*cost-0.1, "%s: at least 2 transitions per message, each running its actions", k)
			assert.LessOrEqual(t, v-none, perMessage[k]*cost+0.1, "%s: at most the run's transitions", k)
		}
	}
}

// offKey is the key of configuration key's under off: its mode off,
// without asi actions.
func offKey(key string) string {
	pairs, _ := experiment.SplitPairs(key)
	pairs = slices.DeleteFunc(pairs, func(p [2]string) bool { return p[0] == "asi_actions" })
	return withField(experiment.JoinPairs(pairs), "mode", "off")
}

// checkASIIsolation checks the probe and the leak oracle of a
// retentionPlan run under the asi modes modes (those the CPU has): ring
// 3's table is the nonsensitive kernel table, so the probe's kernel text
// faults with P=1 (supervisor-only, as under off), its sensitive page (the
// oracle's sensitive secret, a frame of the sensitive blocks) with P=0 (not
// mapped, as under on; under off it is mapped, by the direct map), the
// entry area with P=1, the deferred modes' area with P=0, and the task's
// own page reads; the exposure list names the nonsensitive kernel; the
// oracle's kernel secret faults with P=1 (checkOracle), a line under its
// table says it is nonsensitive and can leak as under off, and its
// sensitive secret, read under the asi modes only, faults with P=0 in a
// table of its own, whose line says it cannot leak that way.
func checkASIIsolation(t *testing.T, res serialLog, modes ...string) {
	t.Helper()
	lines := strings.Join(res.Lines(), "\n")
	joined := regexp.QuoteMeta(strings.Join(modes, ", "))
	present := map[string]bool{"kernel text": true, "entry area": true, "defer area": false, "sensitive page": false}
	sensitivePage := ""
	probed := map[string]int{}
	for _, p := range inWorld[contract.Probe](t, res, 64) {
		require.NotNil(t, p.AsExpected)
		assert.True(t, *p.AsExpected, "%+v", p)
		if p.Target == "sensitive page" {
			sensitivePage = p.Address
			if p.Mode == "off" || p.Mode == "on" {
				require.NotNil(t, p.ProbeFault, p.Mode)
				assert.Equal(t, p.Mode == "off", p.Present, "the sensitive page under %s", p.Mode)
			}
		}
		if !slices.Contains(modes, p.Mode) {
			continue
		}
		probed[p.Mode]++
		if p.Target == "own page" {
			assert.False(t, p.Faulted, "own page under %s", p.Mode)
			continue
		}
		require.NotNil(t, p.ProbeFault, "%s under %s", p.Target, p.Mode)
		assert.EqualValues(t, 14, p.Vector)
		assert.True(t, p.User, "%s under %s: from ring 3", p.Target, p.Mode)
		assert.Equal(t, present[p.Target], p.Present, "%s under %s: present bit", p.Target, p.Mode)
	}
	for _, m := range modes {
		assert.Equal(t, 5, probed[m], "the probe's 5 targets under %s", m)
	}
	assert.Regexp(t, `(?m)^kernel text\s+0x[0-9a-f]+\s+#PF P=1 \(error 0x5\)\s+#PF P=0 \(error 0x4\)\s+(unsupported|#PF P=0 \(error 0x4\))\s+#PF P=1 \(error 0x5\)\s+(unsupported|#PF P=1 \(error 0x5\))$`, lines,
		"off, on, on+pcid, asi, asi+pcid")
	assert.Regexp(t, `(?m)^sensitive page\s+`+sensitivePage+`\s+#PF P=1 \(error 0x5\)\s+#PF P=0 \(error 0x4\)\s+(unsupported|#PF P=0 \(error 0x4\))\s+#PF P=0 \(error 0x4\)\s+(unsupported|#PF P=0 \(error 0x4\))$`, lines)
	assert.Contains(t, lines, "\nasi, asi+pcid: ring 3 runs on the nonsensitive table, which maps the kernel supervisor-only but the sensitive blocks (user data)")

	// What the asi modes' user table maps beyond on's.
	exposed := 0
	for _, e := range inWorld[contract.Exposure](t, res, 64) {
		if !strings.HasPrefix(e.Mode, "asi") {
			continue
		}
		exposed++
		require.Len(t, e.Areas, 1, e.Mode)
		assert.Equal(t, "the nonsensitive kernel", e.Areas[0].Name)
		assert.Zero(t, e.Areas[0].Pages, "the kernel but the sensitive blocks: no range")
		assert.Contains(t, e.Areas[0].Holds, "but the sensitive blocks")
	}
	assert.Equal(t, 2, exposed, "asi and asi+pcid (listed where the CPU lacks PCID too)")
	assert.Regexp(t, `(?m)^asi\s+the nonsensitive kernel: every mapping of the Go kernel's table, supervisor-only, but the sensitive blocks`, lines)
	assert.Contains(t, lines, "\n(asi, asi+pcid: ASI, linuxasi.dev, keeps user data out of the kernel's nonsensitive address space, not the kernel out of ring 3's")

	// The oracle: the kernel secret is nonsensitive (mapped), the
	// sensitive one is not mapped.
	kernelSecret := ""
	sensitive := map[string]contract.Oracle{}
	for _, r := range recordsOf[contract.Oracle](t, res) {
		switch r.Target {
		case "":
			kernelSecret = r.Secret
		case "sensitive":
			sensitive[r.Mode] = r
		default:
			assert.Fail(t, "an oracle row of another secret", "%+v", r)
		}
	}
	require.Len(t, sensitive, len(modes), "the sensitive secret read under the asi modes only")
	for _, m := range modes {
		r, ok := sensitive[m]
		require.True(t, ok, m)
		assert.Equal(t, sensitivePage, r.Secret, "%s: the probe's sensitive page", m)
		assert.NotEqual(t, kernelSecret, r.Secret)
		assert.Contains(t, r.SecretPage, "a frame of the sensitive blocks")
		assert.EqualValues(t, 16, r.Faults, "%s: a recovered fault per byte", m)
		require.NotNil(t, r.AsExpected)
		assert.True(t, *r.AsExpected, m)
		assert.False(t, r.Present, "%s: not mapped", m)
		assert.Equal(t, uint64(4), r.ErrorCode, m)
		assert.Equal(t, "oracle unavailable: cache timing not observable", r.Reason)
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(m)+`\s+#PF P=0 \(error 0x4\)\s+16\s+1\s+not tried: oracle unavailable: cache timing not observable$`, lines)
	}
	assert.Regexp(t, `(?m)^`+joined+`: isolated, yet the secret read faults with P=1: the secret is nonsensitive kernel data, which ring 3's table \(the nonsensitive one\) maps supervisor-only as off's does, so a CPU with Meltdown can leak it as under off$`, lines)
	assert.Contains(t, lines, fmt.Sprintf("\nleak oracle, its sensitive secret: ring 3 reads 16 bytes %q at %s (a frame of ASI's sensitive blocks", "PTI:Meltdown/F+R", sensitivePage))
	assert.Regexp(t, `(?m)^`+joined+`: ring 3's table does not map the secret \(P=0\): a Meltdown read has no translation to it, so it cannot leak it this way on any CPU`, lines)
	assert.NotContains(t, lines, "maps the secret supervisor-only (P=1): a CPU with Meltdown can leak it")
}
