package test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/host/bochs"
	"github.com/ptilab/ptilab/host/qemu"
)

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
