package test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/qemu"
)

// The deferred modes (issue 14): on-defer, whose trampolines leave the
// CR3 switch to a dispatcher around the handler (Chartre's RFC), and
// on-noswitch, which also runs getppid and the work call on the user table
// with no CR3 write.

// deferredPathPlan is null and lseek under off, on and the deferred modes,
// both flavours, at pathLengthSizes's sizes; with the 32-bit null call and
// ping-pong (off and on: the deferred modes are not in PAE), all at two
// loop offsets (checkLoopOffsets).
const deferredPathPlan = "benchmarks = null,lseek,null32,pingpong32\nmodes = off,on,on-defer,on-noswitch\nglobal = off\nloop_offset = 0,4064\n" + pathLengthSizes

// qemuDeferredPathLengths boots deferredPathPlan under -icount shift=0,
// holds its path lengths to the table (pathLengths: exact where the path
// is; every row of the plan's configurations measured) and checks where the CR3 writes are: on-noswitch's getppid has none (its
// path is below on's and no longer than off's), while its lseek pays the
// whole deferred switch (on-defer's path and the 2 instructions of the
// no-switch check), and the deferred switch costs a getppid and an lseek
// the same instructions over off.
func qemuDeferredPathLengths(t *testing.T) map[string]float64 {
	res := boot(t, qemu.Options{Icount: true, Plan: []byte(deferredPathPlan), Timeout: 10 * time.Minute})
	requireOK(t, res)
	got, _ := pathLengths(t, res)
	requireRows(t, got, func(f map[string]string) bool {
		return f["width"] == "64" && (f["bench"] == "null" || f["bench"] == "lseek") && slices.Contains([]string{"off", "on", "on-defer", "on-noswitch"}, f["mode"])
	})
	checkLoopOffsets(t, res, got)
	// at is the figure of bench under mode with flavour fl.
	at := func(bench, mode, fl string) float64 {
		return got[contract.Subject{Bench: bench, Width: 64, Mode: mode, Entry: "syscall", Flavour: fl}.Key()]
	}
	for _, fl := range []string{"minimal", "linux"} {
		assert.Less(t, at("null", "on-noswitch", fl), at("null", "on", fl), "%s: on-noswitch's getppid writes no CR3", fl)
		assert.LessOrEqual(t, at("null", "on-noswitch", fl), at("null", "off", fl), "%s: on-noswitch's getppid is no longer than off's, which writes no CR3 either", fl)
		assert.Greater(t, at("null", "on-defer", fl), at("null", "on", fl), "%s: on-defer's switch is on's and a dispatcher's call", fl)
	}
	assert.Equal(t, at("lseek", "on-defer", "linux")+2, at("lseek", "on-noswitch", "linux"), "on-noswitch's lseek: on-defer's two CR3 writes and the no-switch check")
	assert.Equal(t, at("null", "on-defer", "linux")-at("null", "off", "linux"), at("lseek", "on-defer", "linux")-at("lseek", "off", "linux"), "the deferred switch costs every call the same")
	t.Logf("instructions per call of the deferred modes under icount: %v", got)
	return got
}

// TestDeferredModes boots the deferred modes through every 64-bit
// benchmark that takes a mode, at small sizes, and checks the records:
// null (both flavours), the work curve, lseek, the ping-pong (every token,
// two switches per round trip, a CR3 load at each between processes) and
// sched-messaging (every message checksummed) under on-defer and
// on-noswitch; their +pcid variants unsupported under TCG; the 32-bit
// world's rows not in PAE; the probe's deferred area present
// (supervisor-only, P=1) under the deferred modes only, and the list of
// what each mode's user table maps beyond on's.
func TestDeferredModes(t *testing.T) {
	plan := "benchmarks = null,work,lseek,pingpong,messaging,probe,null32\n" +
		"modes = off,on,on-defer,on-defer+pcid,on-noswitch,on-noswitch+pcid\n" +
		"n = 50\nr = 2\nwarmup = 1\nglobal = off\nwork_ns = 0,500\npingpong_n = 10\n" +
		"messaging_groups = 1\nmessaging_loops = 2\nmessaging_ipc = pipe\n"
	res := boot(t, qemu.Options{Plan: []byte(plan)})
	requireOK(t, res)
	lines := strings.Join(res.Lines(), "\n")
	deferred := []string{"on-defer", "on-noswitch"}

	rows := map[string]bool{}
	for _, f := range inWorld[contract.Syscall](t, res, 64) {
		k := f.Key()
		rows[k] = true
		assert.Positive(t, f.Mean, k)
	}
	zero, five := int64(0), int64(500)
	for _, m := range deferred {
		for _, s := range []contract.Subject{
			{Bench: "null", Flavour: "minimal"}, {Bench: "null", Flavour: "linux"}, {Bench: "work", Flavour: "minimal", WorkNs: &zero},
			{Bench: "work", Flavour: "minimal", WorkNs: &five}, {Bench: "lseek", Flavour: "linux"},
		} {
			s.Width, s.Mode, s.Entry = 64, m, "syscall"
			assert.True(t, rows[s.Key()], s.Key())
		}
	}
	pp := checkPingPong(t, res, 64, 10*(2+1))
	msg := checkMessaging(t, res, 64, "syscall", "pipe", 20*20*2)
	for _, m := range append([]string{"off", "on"}, deferred...) {
		for _, tasks := range []string{"processes", "threads"} {
			assert.True(t, pp[m+"/"+tasks], "ping-pong %s/%s", m, tasks)
			assert.True(t, msg[m+"/"+tasks], "messaging %s/%s", m, tasks)
		}
	}

	unsup := map[string]int{}
	for _, f := range recordsOf[contract.Unsupported](t, res) {
		unsup[fmt.Sprintf("%d %s", f.Width, f.Mode)]++
		if f.Width == 32 {
			assert.Contains(t, f.Reason, "not in PAE", "%+v", f)
		} else {
			assert.Contains(t, f.Reason, "PCID: not supported by this CPU", "%+v", f)
		}
	}
	for _, m := range deferred {
		// null 2 flavours, work 2 points, lseek global pages off and on,
		// ping-pong and messaging processes and threads, the probe's 5
		// targets.
		assert.Equal(t, 2+2+2+2+2+5, unsup["64 "+m+"+pcid"], "%s+pcid unsupported under TCG", m)
		assert.Positive(t, unsup["32 "+m], "%s: not in PAE", m)
	}
	assert.Regexp(t, `(?m)^on-defer\s+sysenter\s+minimal\s+no\s+unsupported: isolation mode on-defer: not in PAE`, lines)

	// The probe: the deferred area (the trampoline stack) is not mapped
	// under off and on, present and supervisor-only under the deferred
	// modes; every other target as under on.
	present := map[string]bool{}
	for _, f := range inWorld[contract.Probe](t, res, 64) {
		require.NotNil(t, f.AsExpected)
		assert.True(t, *f.AsExpected, "%s under %s", f.Target, f.Mode)
		if f.Target == "defer area" {
			require.NotNil(t, f.ProbeFault, f.Mode)
			assert.True(t, f.User, f.Mode)
			present[f.Mode] = f.Present
		}
	}
	assert.Equal(t, map[string]bool{"off": false, "on": false, "on-defer": true, "on-noswitch": true}, present)
	assert.Regexp(t, `(?m)^defer area\s+0xffffffffffe0b000\s+#PF P=0 \(error 0x4\)\s+#PF P=0 \(error 0x4\)\s+#PF P=1 \(error 0x5\)\s+unsupported\s+#PF P=1 \(error 0x5\)\s+unsupported$`, lines)
	assert.Regexp(t, `(?m)^off\s+the kernel: every mapping of the Go kernel's table`, lines)
	assert.Regexp(t, `(?m)^on\s+nothing$`, lines)
	assert.Regexp(t, `(?m)^on-defer\s+deferred entry text \[0xffffffffffe0a000, 0xffffffffffe0b000\) 1 page\(s\)`, lines)
	assert.Regexp(t, `(?m)^\s+trampoline stack \[0xffffffffffe0b000, 0xffffffffffe0c000\) 1 page\(s\): the task's pt_regs`, lines)
	assert.Regexp(t, `(?m)^\s+no-switch handlers \[0xffffffffffe0c000, 0xffffffffffe0d000\) 1 page\(s\)`, lines)

	// The same lists as records: pages per mode beyond on's.
	pages := map[string]int{}
	areas := map[string][]string{}
	for _, e := range inWorld[contract.Exposure](t, res, 64) {
		for _, a := range e.Areas {
			pages[e.Mode] += a.Pages
			areas[e.Mode] = append(areas[e.Mode], a.Name+" "+a.Start)
		}
	}
	assert.Equal(t, map[string]int{"off": 0, "on-defer": 2, "on-defer+pcid": 2, "on-noswitch": 3, "on-noswitch+pcid": 3}, pages)
	assert.Equal(t, []string{"deferred entry text 0xffffffffffe0a000", "trampoline stack 0xffffffffffe0b000", "no-switch handlers 0xffffffffffe0c000"}, areas["on-noswitch"])
	assert.Equal(t, []string{"the kernel "}, areas["off"])
	assert.NotContains(t, areas, "on", "on maps nothing beyond itself")
}
