package test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/bochs"
	"github.com/ptilab/ptilab/host/qemu"
)

// The asi modes (issue 26, pti/asi.go): the kernel runs on the
// nonsensitive table and goes to the sensitive one on its page fault on
// user data (the processes' pages, the pipe and socket rings).

// asiPathPlan is null, lseek, the ping-pong and sched-messaging (over
// pipes) under off, on and modes, at pathLengthSizes's sizes.
func asiPathPlan(modes string) string {
	return "benchmarks = null,lseek,pingpong,messaging\nmodes = off,on," + modes + "\nglobal = off\n" + pathLengthSizes
}

// qemuASIPathLengths boots asiPathPlan under -icount shift=0, holds its
// path lengths to the table and checks the transitions (checkASI).
func qemuASIPathLengths(t *testing.T) map[string]float64 {
	res := boot(t, qemu.Options{Icount: true, Plan: []byte(asiPathPlan("asi")), Timeout: 10 * time.Minute})
	requireOK(t, res)
	got, _ := pathLengths(t, res)
	checkASI(t, res, got, "asi")
	t.Logf("instructions per operation with asi under icount: %v", got)
	return got
}

// bochsASI boots asiPathPlan with asi and asi+pcid under Bochs (its
// default model has PCID) and checks the same.
func bochsASI(t *testing.T) map[string]float64 {
	res := bootBochs(t, bochs.Options{Plan: []byte(asiPathPlan("asi,asi+pcid")), Timeout: bochsMatrixTimeout})
	requireBochsOK(t, res)
	got, _ := pathLengths(t, res)
	checkASI(t, res, got, "asi", "asi+pcid")
	t.Logf("instructions per operation with asi under Bochs: %v", got)
	return got
}

// checkASI checks an asi run's records: every benchmark has a row in
// each asi mode, and each row's ASI transitions are the count the design
// gives. A system call enters on the nonsensitive table and the tasks
// kernel's context switch loads the next process's nonsensitive table, so
// every copy into or out of a ring that a system call makes first in its
// entry, or first after a switch, faults once; the benchmarks' calls
// copy once each and never block after a copy:
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
// The other modes' records carry no transitions.
func checkASI(t *testing.T, res serialLog, got map[string]float64, modes ...string) {
	isASI := func(mode string) bool { return slices.Contains(modes, mode) }
	rows := map[string]int{}
	// count is a record's transitions: absent outside the asi modes (ok
	// false), present in them.
	count := func(key, mode string, n *uint64) (uint64, bool) {
		if !isASI(mode) {
			assert.Nil(t, n, "%s", key)
			return 0, false
		}
		rows[mode]++
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
	for _, r := range recordsOf[contract.Messaging](t, res) {
		if n, ok := count(r.Key(), r.Mode, r.ASITransitions); ok {
			tasks := uint64(2 * 20 * r.Groups)
			assert.Equal(t, uint64(20*20*r.Groups*r.Loops), r.Messages, "%s", r.Key())
			assert.Equal(t, 2*r.Messages+2*tasks+2, n, "%s: 2 per message and the start protocol's", r.Key())
		}
	}
	for _, m := range modes {
		// null (minimal, linux), lseek (global pages off and on: the
		// lseek table's), ping-pong and sched-messaging (processes,
		// threads).
		assert.Equal(t, 8, rows[m], "the rows of %s", m)
	}
	// getppid and lseek pay only the flag's test on the way out (CMP,
	// JE: off's path and 2); the ping-pong and sched-messaging pay their
	// transitions beyond it.
	for k, v := range got {
		if !isASI(keyField(k, "mode")) {
			continue
		}
		off := got[withField(k, "mode", "off")]
		switch keyField(k, "bench") {
		case "null", "lseek":
			assert.Equal(t, off+2, v, "%s: off's path and the flag's test", k)
		default:
			assert.Greater(t, v, off+2, "%s: longer than off's and the flag's test", k)
		}
	}
}
