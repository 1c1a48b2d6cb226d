package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/internal/qemu"
)

// key names a benchmark record by its configuration.
func key(f map[string]any) string {
	return fmt.Sprintf("%v/%v/%v", f["mode"], f["flavour"], f["global"])
}

// TestPTIMatrix boots the default plan and checks the 64-bit matrix: a
// null-syscall record for every mode, flavour and global setting the CPU
// supports (TCG has no PCID: those rows are unsupported records, and the
// table says so), the work curve, and the isolation probe's page-fault
// error codes.
func TestPTIMatrix(t *testing.T) {
	res := boot(t, qemu.Options{})
	requireOK(t, res)
	lines := strings.Join(res.Lines(), "\n")

	got := map[string]map[string]any{}
	for _, f := range records(t, res, "syscall") {
		if f["bench"] != "null" {
			continue
		}
		got[key(f)] = f
		for _, k := range []string{"mode", "flavour", "global", "N", "R", "mean", "stddev", "median", "min", "unit"} {
			assert.Contains(t, f, k, "record %s carries %s", key(f), k)
		}
		assert.Equal(t, "tsc_cycles", f["unit"])
		assert.Contains(t, f, "perf_pm_pct")
		assert.Equal(t, int64(1000), integer(t, f, "N"))
		assert.Equal(t, int64(10), integer(t, f, "R"))
		assert.Equal(t, true, f["emulated"], "TCG timings are labelled")
	}
	for _, mode := range []string{"off", "on"} {
		for _, fl := range []string{"minimal", "linux"} {
			for _, g := range []bool{false, true} {
				k := fmt.Sprintf("%s/%s/%v", mode, fl, g)
				require.Contains(t, got, k, "null syscall under %s", k)
				assert.Positive(t, number(t, got[k], "mean"), k)
			}
		}
	}
	unsup := 0
	for _, f := range records(t, res, "unsupported") {
		if f["mode"] == "on+pcid" && f["target"] == nil {
			unsup++
			assert.Contains(t, f["reason"], "PCID: not supported by this CPU")
		}
	}
	assert.Equal(t, 4+5+2, unsup, "4 null-syscall rows, 5 work-curve points and 2 lseek rows under on+pcid")
	assert.Regexp(t, `(?m)^on\+pcid\s+minimal\s+no\s+unsupported: PCID: not supported by this CPU$`, lines)
	assert.Regexp(t, `(?m)^off\s+minimal\s+no\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+1\.00$`, lines)
	assert.Contains(t, lines, "EMULATED (QEMU TCG)")

	work := 0
	for _, f := range records(t, res, "syscall") {
		if f["bench"] == "work" {
			work++
			assert.Contains(t, f, "work_ns")
		}
	}
	assert.Equal(t, 5*2, work, "5 work-curve points under off and on")

	// lseek through the Go handler, linux flavour, global pages off and on.
	lseek := map[string]bool{}
	for _, f := range records(t, res, "syscall") {
		if f["bench"] == "lseek" {
			lseek[key(f)] = true
			assert.Equal(t, "linux", f["flavour"])
			assert.Positive(t, number(t, f, "mean"))
		}
	}
	assert.Equal(t, map[string]bool{"off/linux/false": true, "off/linux/true": true, "on/linux/false": true, "on/linux/true": true}, lseek)
	assert.Regexp(t, `(?m)^on\s+yes\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+\s+[0-9]+\s+[0-9.]+\s+[-+][0-9.]+%$`, lines, "the lseek table's global gain")

	// The probe: under off a kernel address is present and supervisor-only
	// (P=1), under on it is not mapped (P=0); the entry area is present
	// and supervisor-only under both; the task's own page reads.
	want := map[string]map[string]bool{ // target -> mode -> present
		"kernel text": {"off": true, "on": false},
		"entry area":  {"off": true, "on": true},
	}
	seen := 0
	for _, f := range records(t, res, "probe") {
		target, mode := str(t, f, "target"), str(t, f, "mode")
		if target == "own page" {
			assert.Equal(t, false, f["faulted"], "own page under %s", mode)
			seen++
			continue
		}
		require.Equal(t, true, f["faulted"], "%s under %s", target, mode)
		assert.Equal(t, int64(14), integer(t, f, "vector"))
		assert.Equal(t, true, f["user"], "the fault came from ring 3")
		assert.Equal(t, want[target][mode], f["present"], "%s under %s: present bit", target, mode)
		seen++
	}
	assert.Equal(t, 6, seen, "3 targets x off, on")
	assert.Regexp(t, `(?m)^kernel text\s+0x[0-9a-f]+\s+#PF P=1 \(error 0x5\)\s+#PF P=0 \(error 0x4\)\s+unsupported`, lines)
}

// Instructions per system call under -icount shift=0, where the TSC
// counts instructions: measured when the trampolines were written. A
// longer trampoline fails the test; isolation must cost instructions.
var pathLength = map[string]int64{
	"null off/minimal": 15,
	"null on/minimal":  21,
	"null off/linux":   86,
	"null on/linux":    92,
	"lseek off/linux":  166, // through tasks.Syscall, in Go
	"lseek on/linux":   172,
}

// TestPathLengths runs the null system call under -icount shift=0.
func TestPathLengths(t *testing.T) {
	res := boot(t, qemu.Options{
		Icount: true,
		Plan:   []byte("benchmarks = null,lseek\nn = 100\nr = 3\nwarmup = 1\nglobal = off\n"),
	})
	requireOK(t, res)
	got := map[string]int64{}
	for _, f := range records(t, res, "syscall") {
		if f["global"] == true {
			continue
		}
		k := fmt.Sprintf("%v %v/%v", f["bench"], f["mode"], f["flavour"])
		mean := number(t, f, "mean")
		assert.Equal(t, mean, number(t, f, "min"), "%s: deterministic under icount", k)
		assert.Equal(t, "instructions", f["unit"], "%s: labelled as instruction counts", k)
		assert.Equal(t, true, f["icount"])
		got[k] = int64(mean)
	}
	for k, bound := range pathLength {
		require.Contains(t, got, k)
		assert.LessOrEqual(t, got[k], bound, "%s: instructions per null call", k)
		assert.Positive(t, got[k], k)
	}
	assert.Greater(t, got["null on/minimal"], got["null off/minimal"], "isolation costs instructions")
	assert.Greater(t, got["null on/linux"], got["null off/linux"])
	assert.Greater(t, got["lseek on/linux"], got["lseek off/linux"])
	t.Logf("instructions per system call under icount: %v", got)
}
