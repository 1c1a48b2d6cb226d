package pathlength

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// TestExact: the exact paths are found by their records' keys, with
// global pages or without; a path with REP string instructions or Go
// code, or none in the table, has no exact length.
func TestExact(t *testing.T) {
	for _, tt := range []struct {
		s    contract.Subject
		want int64
		ok   bool
	}{
		{contract.Subject{Bench: "null", Width: 64, Mode: "off", Flavour: "minimal"}, 15, true},
		{contract.Subject{Bench: "null", Width: 64, Mode: "on", Entry: "syscall", Flavour: "linux", Global: true}, 92, true},
		{contract.Subject{Bench: "null", Width: 64, Mode: "on+pcid", Flavour: "minimal"}, 23, true},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "int80", Flavour: "minimal", Global: true}, 19, true},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Copy: "direct"}, 69, true},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Copy: "movsl"}, 101, false},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Copy: "direct", Stamps: true}, 0, false},
		{contract.Subject{Bench: "lseek", Width: 64, Mode: "off", Flavour: "linux"}, 245, false},
		{contract.Subject{Bench: "work", Width: 64, Mode: "off", Flavour: "minimal"}, 0, false},
		// Shifted programs: the path at the default places.
		{contract.Subject{Bench: "null", Width: 64, Mode: "off", Flavour: "minimal", LoopOffset: 32}, 15, true},
		{contract.Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "int80", Flavour: "minimal", Global: true, LoopOffset: 96}, 19, true},
	} {
		got, ok := Exact(tt.s.Key())
		assert.Equal(t, tt.ok, ok, "%+v", tt.s)
		if ok {
			assert.Equal(t, tt.want, got, "%+v", tt.s)
		}
	}
}

// TestRules: global=on takes global=off's row, a work row has no length
// by rule, a key without a row has none, and every row's key is a
// canonical key with global pages off: a record's (its configuration
// parses and is one its world has, or it has none, as the flush
// operations) and without REP string instructions where exact.
func TestRules(t *testing.T) {
	on := contract.Subject{Bench: "pingpong", Width: 32, Mode: "on", Entry: "sysenter", Flavour: "linux", Tasks: "threads", Global: true}
	p, err := Of(on.Key())
	require.NoError(t, err)
	off := on
	off.Global = false
	assert.Equal(t, table[off.Key()], p, "global=on is global=off's row")
	assert.NotContains(t, table, on.Key(), "no row of its own")
	shifted := on
	shifted.LoopOffset = 32
	p, err = Of(shifted.Key())
	require.NoError(t, err)
	assert.Equal(t, table[off.Key()], p, "loop_offset takes the row without it")
	assert.NotContains(t, table, shifted.Key(), "no row of its own")
	m := contract.Messaging{Subject: contract.Subject{Bench: "messaging", Width: 64, Mode: "on+pcid", Entry: "syscall", Flavour: "linux", Tasks: "threads"}, Workload: contract.Workload{IPC: "socket"}}
	p, err = Of(m.Key())
	require.NoError(t, err)
	assert.Equal(t, int64(1026), p.Bound)
	ns := int64(0)
	_, err = Of(contract.Subject{Bench: "work", Width: 64, Mode: "off", Entry: "syscall", Flavour: "minimal", WorkNs: &ns}.Key())
	assert.ErrorIs(t, err, ErrTSCSet)
	_, err = Of(contract.Subject{Bench: "null", Width: 64, Mode: "on-noswitch+pcid", Flavour: "mitigated"}.Key())
	assert.ErrorIs(t, err, ErrNoBound)
	assert.ErrorContains(t, err, "bench=null width=64 mode=on-noswitch+pcid entry=syscall flavour=mitigated global=off knobs=none: no path-length bound")
	_, err = Of("null on/minimal")
	assert.Error(t, err)

	for _, k := range Keys() {
		pairs, err := experiment.SplitPairs(k)
		require.NoError(t, err, k)
		assert.Equal(t, k, experiment.JoinPairs(pairs), "%s: as JoinPairs writes it", k)
		f := map[string]string{}
		for _, p := range pairs {
			f[p[0]] = p[1]
		}
		if _, ok := f["mode"]; !ok {
			assert.Equal(t, "flushcost", f["bench"], "%s: only the flush operations have no configuration", k)
			continue
		}
		var cfg []string
		for _, p := range pairs {
			if p[0] != "bench" && p[0] != "tasks" && p[0] != "ipc" && p[0] != "target" && p[0] != "sweep_pages" {
				cfg = append(cfg, p[0]+"="+p[1])
			}
		}
		c, err := experiment.ParseKey(strings.Join(cfg, " "))
		require.NoError(t, err, k)
		assert.NoError(t, c.Check(), k)
		assert.False(t, c.Global, "%s: the table holds global=off rows", k)
		assert.Equal(t, strings.Join(cfg, " "), c.Key(), "%s: canonical", k)
		if table[k].Exact {
			assert.False(t, c.HasCopy() && c.Copy != experiment.Direct, "%s: REP string instructions", k)
			assert.NotContains(t, []string{"lseek", "lseek32", "pingpong", "messaging"}, f["bench"], "%s: Go code", k)
		}
	}
}

// Asi actions run only after a transition: getppid's and lseek's rows
// serve every set of actions; the ping-pong has a row per set.
func TestASIActionsRule(t *testing.T) {
	none := "bench=null width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none"
	want, err := Of(none)
	require.NoError(t, err)
	for _, a := range []string{"verw", "l1d", "rsb", "verw+l1d+rsb"} {
		got, err := Of(strings.Replace(none, "asi_actions=none", "asi_actions="+a, 1) + " loop_offset=32")
		require.NoError(t, err, a)
		assert.Equal(t, want, got, a)
	}
	pp := "bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=%s tasks=processes"
	pnone, err := Of(fmt.Sprintf(pp, "none"))
	require.NoError(t, err)
	pverw, err := Of(fmt.Sprintf(pp, "verw"))
	require.NoError(t, err)
	assert.Greater(t, pverw.Bound, pnone.Bound, "a transition runs the actions")
	_, err = Of(fmt.Sprintf(pp, "verw+rsb"))
	assert.ErrorIs(t, err, ErrNoBound, "a set no plan measured")
	for k := range noTransition {
		assert.Contains(t, table, k, "noTransition names rows of the table")
	}
}
