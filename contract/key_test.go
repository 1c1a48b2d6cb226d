package contract

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/experiment"
)

// TestKey: a record's key is its benchmark, its configuration's pairs and
// its own fields; the fields a record leaves out take what the image ran.
func TestKey(t *testing.T) {
	ns, pages := int64(500), 16
	for _, tt := range []struct {
		r    interface{ Key() string }
		want string
	}{
		{Subject{Bench: "null", Width: 64, Mode: "off", Entry: "syscall", Flavour: "minimal"},
			"bench=null width=64 mode=off entry=syscall flavour=minimal global=off"},
		{PingPong{Subject: Subject{Bench: "pingpong", Width: 64, Mode: "on", Entry: "syscall", Flavour: "linux", Tasks: "processes", Global: true}},
			"bench=pingpong width=64 mode=on entry=syscall flavour=linux global=on tasks=processes"},
		// Records before the entry field: the world's default entry.
		{Subject{Bench: "null", Width: 64, Mode: "on+pcid", Flavour: "linux"},
			"bench=null width=64 mode=on+pcid entry=syscall flavour=linux global=off"},
		// The 32-bit copy methods: the key's where the entry has a choice.
		{Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "sysenter", Flavour: "linux", Copy: "trim8", Stamps: true},
			"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=trim8 stamps=on global=off"},
		{Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "int80", Flavour: "linux", Copy: "movsl"},
			"bench=null32 width=32 mode=on entry=int80 flavour=linux global=off"},
		// The tasks kernel's SYSENTER ping-pong leaves its copy out: direct.
		{PingPong{Subject: Subject{Bench: "pingpong", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "linux", Tasks: "threads"}},
			"bench=pingpong width=32 mode=off entry=sysenter flavour=linux copy=direct global=off tasks=threads"},
		// The mitigated flavour: its knobs; in the 32-bit world, direct.
		{Subject{Bench: "ladder32", Width: 32, Mode: "off", Entry: "sysenter", Flavour: "mitigated", Mitigations: "verw+retpoline", Tasks: "processes"},
			"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw+retpoline tasks=processes"},
		{Subject{Bench: "ladder", Width: 64, Mode: "off", Entry: "syscall", Flavour: "mitigated"},
			"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=none"},
		// sched-messaging: its IPC; the seed cells leave entry and flavour out.
		{Messaging{Subject: Subject{Bench: "messaging", Width: 32, Mode: "on", Entry: "sysenter", Flavour: "linux", Copy: "direct", Tasks: "processes"}, Workload: Workload{IPC: "socket"}},
			"bench=messaging width=32 mode=on entry=sysenter flavour=linux copy=direct global=off tasks=processes ipc=socket"},
		{Unsupported{Subject: Subject{Bench: "messaging", Width: 64, Mode: "on+pcid", Entry: "syscall", Flavour: "linux", Tasks: "threads"}, Workload: &Workload{IPC: "pipe"}},
			"bench=messaging width=64 mode=on+pcid entry=syscall flavour=linux global=off tasks=threads ipc=pipe"},
		{Seed{Subject: Subject{Bench: "messaging", Width: 64, Mode: "off", Tasks: "processes"}},
			"bench=messaging width=64 mode=off entry=syscall flavour=linux global=off tasks=processes"},
		// The probe's subject has no entry or flavour: the minimal one.
		{Subject{Bench: "probe", Width: 32, Mode: "on", Target: "kernel stack"},
			`bench=probe width=32 mode=on entry=sysenter flavour=minimal global=off target="kernel stack"`},
		{Subject{Bench: "work", Width: 64, Mode: "on", Entry: "syscall", Flavour: "minimal", WorkNs: &ns},
			"bench=work width=64 mode=on entry=syscall flavour=minimal global=off work_ns=500"},
		{TLBSweep{Subject: Subject{Bench: "tlbsweep", Width: 64, Mode: "on", Entry: "syscall", Flavour: "minimal", Target: "user 4k", SweepPages: &pages}},
			`bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target="user 4k" sweep_pages=16`},
		// Shifted programs (loop_offset): a field of their own, last; 0
		// (the default places) none.
		{Syscall{Subject: Subject{Bench: "null32", Width: 32, Mode: "off", Entry: "int80", Flavour: "minimal", LoopOffset: 32}},
			"bench=null32 width=32 mode=off entry=int80 flavour=minimal global=off loop_offset=32"},
		{PingPong{Subject: Subject{Bench: "pingpong", Width: 64, Mode: "on", Entry: "syscall", Flavour: "linux", Tasks: "threads", LoopOffset: 64}},
			"bench=pingpong width=64 mode=on entry=syscall flavour=linux global=off tasks=threads loop_offset=64"},
		// No mode: no configuration, the fields as they are.
		{FlushCost{Subject: Subject{Bench: "flushcost", Width: 64, Target: "mov cr3 pcid noflush"}},
			`bench=flushcost width=64 target="mov cr3 pcid noflush"`},
		{Subject{Bench: "null", Width: 64, Mode: "on+pcdi", Flavour: "linux", Global: true},
			"bench=null width=64 mode=on+pcdi flavour=linux global=on"},
	} {
		assert.Equal(t, tt.want, tt.r.Key())
	}
}

// TestConfig: a subject's configuration, and what has none.
func TestConfig(t *testing.T) {
	c, err := Subject{Bench: "null32", Width: 32, Mode: "on", Entry: "int80", Flavour: "linux", Copy: "movsl", Global: true}.Config()
	require.NoError(t, err)
	assert.Equal(t, experiment.Config{World: experiment.W32, Mode: experiment.On, Entry: experiment.Int80, Flavour: experiment.Linux, Global: true}, c)
	require.NoError(t, c.Check())
	c, err = Subject{Bench: "null32", Width: 32, Mode: "on+pcid", Entry: "sysenter", Flavour: "minimal"}.Config()
	require.NoError(t, err, "a configuration the world refuses still parses")
	assert.ErrorIs(t, c.Check(), experiment.ErrNotInPAE)
	_, err = Subject{Bench: "flushcost", Width: 64, Target: "invlpg"}.Config()
	assert.ErrorIs(t, err, ErrNoConfig)
	_, err = Subject{Bench: "null", Width: 16, Mode: "off"}.Config()
	assert.ErrorContains(t, err, "no world of width 16")
	_, err = Subject{Bench: "null", Width: 64, Mode: "off", Flavour: "fancy"}.Config()
	assert.ErrorContains(t, err, `unknown flavour "fancy"`)
}

// ModeName: an asi mode with actions as the tables and plots name it;
// without them, or outside the asi modes, the mode.
func TestModeName(t *testing.T) {
	s := Subject{Bench: "null", Width: 64, Mode: "asi+pcid", Entry: "syscall", Flavour: "linux", ASIActions: "verw+l1d"}
	assert.Equal(t, "asi+pcid[verw+l1d]", s.ModeName())
	assert.Equal(t, "bench=null width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=verw+l1d", s.Key())
	s.ASIActions = ""
	assert.Equal(t, "asi+pcid", s.ModeName(), "a record written before the field: none")
	assert.Equal(t, "on", Subject{Bench: "null", Width: 64, Mode: "on"}.ModeName())
	assert.Equal(t, "bogus", Subject{Bench: "null", Width: 64, Mode: "bogus"}.ModeName(), "a mode the model does not know, as written")
}
