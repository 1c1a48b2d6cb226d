package experiment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/experiment/sites"
)

// Every row has a distinct name that parses back to it.
func TestNamesRoundTrip(t *testing.T) {
	for _, m := range Modes() {
		got, err := ParseMode(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	for _, f := range Flavours() {
		got, err := ParseFlavour(f.String())
		require.NoError(t, err)
		assert.Equal(t, f, got)
	}
	for _, k := range Mitigations() {
		got, err := ParseMitigation(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	for _, w := range []Width{W64, W32} {
		for _, e := range Entries(w) {
			got, err := ParseEntry(e.String())
			require.NoError(t, err)
			assert.Equal(t, e, got)
			assert.Equal(t, w, e.Row().World)
		}
	}
	for _, c := range Copies() {
		got, err := ParseCopy(c.String())
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	_, err := ParseMode("on+pcdi")
	assert.ErrorContains(t, err, `unknown isolation mode "on+pcdi" (one of off, on, on+pcid`)
	assert.Equal(t, "mode(200)", Mode(200).String())
	assert.Equal(t, "copy(9)", Copy(9).String())
	assert.Equal(t, ModeRow{}, Mode(200).Row())
}

// The modes' derived properties come from their rows.
func TestModeRows(t *testing.T) {
	var pcid, deferred, noswitch, in32 []string
	for _, m := range Modes() {
		if m.PCID() {
			pcid = append(pcid, m.String())
			assert.Equal(t, m.Row().Base.String()+"+pcid", m.String(), "a PCID mode is its base's +pcid")
		}
		if m.Deferred() {
			deferred = append(deferred, m.String())
		}
		if m.NoSwitch() {
			noswitch = append(noswitch, m.String())
		}
		if m.In(W32) {
			in32 = append(in32, m.String())
		}
		assert.Equal(t, m != Off && m != LASS, m.Isolated())
	}
	assert.Equal(t, []string{"on+pcid", "on-defer+pcid", "on-noswitch+pcid", "asi+pcid"}, pcid)
	assert.Equal(t, []string{"on-defer", "on-defer+pcid", "on-noswitch", "on-noswitch+pcid"}, deferred)
	assert.Equal(t, []string{"on-noswitch", "on-noswitch+pcid"}, noswitch)
	assert.Equal(t, []string{"off", "on"}, in32)
	assert.Equal(t, []Entry{Syscall, FRED}, Entries(W64))
	assert.Equal(t, []Entry{Sysenter, Int80}, Entries(W32))
}

// The FRED entry: the 64-bit world's, minimal and linux, the non-deferred
// modes, needing FRED; every entry with a Needs says it.
func TestFREDEntry(t *testing.T) {
	for _, e := range entries.all() {
		assert.Equal(t, e.Row().Needs != NeedsNothing, e.Row().NeedText != "", "%v", e)
	}
	assert.Equal(t, NeedsFRED, FRED.Row().Needs)
	for _, m := range Modes() {
		for _, f := range Flavours() {
			c := Config{World: W64, Mode: m, Entry: FRED, Flavour: f}
			ok := !m.Deferred() && !m.ASI() && (f == Minimal || f == Linux)
			if ok {
				assert.NoError(t, c.Check(), "%v", c)
			} else {
				assert.ErrorIs(t, c.Check(), ErrNoTrampoline, "%v", c)
			}
		}
	}
	assert.Equal(t, "width=64 mode=on+pcid entry=fred flavour=linux global=off", Config{World: W64, Mode: OnPCID, Entry: FRED, Flavour: Linux}.Key())
}

// A mode and its PCID variant share a process's tables; the deferred
// modes and lass have their own. Every mode has the minimal and linux
// flavours; the deferred ones and lass no mitigated trampoline.
func TestTableClass(t *testing.T) {
	classes := map[Mode]Mode{Off: Off, On: On, OnPCID: On, OnDefer: OnDefer, OnDeferPCID: OnDefer, OnNoSwitch: OnNoSwitch,
		OnNoSwitchPCID: OnNoSwitch, LASS: LASS, ASI: ASI, ASIPCID: ASI}
	for _, m := range Modes() {
		assert.Equal(t, classes[m], m.TableClass(), "%v", m)
		assert.True(t, m.Has(Minimal) && m.Has(Linux), "%v", m)
		assert.Equal(t, !m.Deferred() && m != LASS && !m.ASI(), m.Has(Mitigated), "%v", m)
	}
	assert.False(t, Mode(200).Has(Minimal))
}

// lass: the 64-bit world's, one table, no CR3 switch, LASS set, needing
// LASS; a default mode where the CPU has it, left out elsewhere; every
// mode with a Needs says it.
func TestLASSMode(t *testing.T) {
	r := LASS.Row()
	assert.True(t, r.LASS && !r.Isolated && !r.PCID && r.Switch == NoSwitch)
	assert.Equal(t, NeedsLASS, r.Needs)
	assert.True(t, LASS.In(W64) && !LASS.In(W32))
	for _, m := range Modes() {
		assert.Equal(t, m.Row().Needs != NeedsNothing, m.Row().NeedText != "", "%v", m)
		assert.Equal(t, m == LASS, m.Row().LASS, "%v", m)
	}
	run, left := DefaultModes(Nothing)
	assert.Equal(t, []Mode{Off, On, OnPCID}, run)
	assert.Equal(t, []Mode{LASS}, left)
	run, left = DefaultModes(func(n Need) bool { return n == NeedsLASS })
	assert.Equal(t, []Mode{Off, On, OnPCID, LASS}, run)
	assert.Empty(t, left)
	for _, e := range Entries(W64) {
		assert.NoError(t, Config{World: W64, Mode: LASS, Entry: e, Flavour: Linux}.Check(), "%v", e)
	}
	assert.ErrorIs(t, Config{World: W64, Mode: LASS, Flavour: Mitigated}.Check(), ErrNoTrampoline)
}

// One numbering of the knobs and their sites.
func TestKnobs(t *testing.T) {
	assert.EqualValues(t, sites.SiteVERW, VERW.Site())
	assert.EqualValues(t, sites.SiteRetpoline, Retpoline.Site())
	assert.EqualValues(t, sites.SiteIBPB|sites.SiteRSB, KnobsOf(IBPB, RSB))
	assert.Equal(t, "verw+ibpb+rsb+retpoline", Knobs32().String())
	k, err := ParseKnobs("ibrs+verw")
	require.NoError(t, err)
	assert.Equal(t, "verw+ibrs", k.String())
	k, err = ParseKnobs("none")
	require.NoError(t, err)
	assert.Zero(t, k)
	_, err = ParseKnobs("verw+ibrz")
	assert.ErrorContains(t, err, `unknown mitigation "ibrz"`)
	for _, m := range Mitigations() {
		r := m.Row()
		assert.NotZero(t, r.Acts, m)
		assert.NotEmpty(t, r.Linux, m)
		assert.Equal(t, r.Needs != NeedsNothing, r.NeedText != "", m)
	}
}

// The canonical key names every field that applies, and parses back.
func TestKey(t *testing.T) {
	for _, tc := range []struct {
		c   Config
		key string
	}{
		{Config{World: W64, Mode: On, Entry: Syscall, Flavour: Linux},
			"width=64 mode=on entry=syscall flavour=linux global=off"},
		{Config{World: W64, Mode: OnPCID, Entry: Syscall, Flavour: Mitigated, Global: true, Knobs: KnobsOf(VERW, IBRS)},
			"width=64 mode=on+pcid entry=syscall flavour=mitigated global=on knobs=verw+ibrs"},
		{Config{World: W64, Mode: OnNoSwitchPCID, Entry: Syscall, Flavour: Linux, Global: true},
			"width=64 mode=on-noswitch+pcid entry=syscall flavour=linux global=on"},
		{Config{World: W64, Mode: Off, Entry: Syscall, Flavour: Mitigated},
			"width=64 mode=off entry=syscall flavour=mitigated global=off knobs=none"},
		{Config{World: W32, Mode: On, Entry: Sysenter, Flavour: Linux, Copy: Trim, Stamps: true},
			"width=32 mode=on entry=sysenter flavour=linux copy=trim8 stamps=on global=off"},
		{Config{World: W32, Mode: Off, Entry: Int80, Flavour: Linux},
			"width=32 mode=off entry=int80 flavour=linux global=off"},
		{Config{World: W32, Mode: Off, Entry: Sysenter, Flavour: Minimal, Global: true},
			"width=32 mode=off entry=sysenter flavour=minimal global=on"},
	} {
		assert.Equal(t, tc.key, tc.c.Key())
		back, err := ParseKey(tc.key)
		require.NoError(t, err)
		assert.Equal(t, tc.c, back)
		assert.NoError(t, tc.c.Check(), tc.key)
	}
	for _, bad := range []string{"", "width=64 mode=on", "width=64 mode=on entry=syscall flavour=linux global=maybe",
		"width=64 mode=on mode=off entry=syscall flavour=linux global=off", "width=64 mode=on entry=syscall flavour=linux global=off colour=red"} {
		_, err := ParseKey(bad)
		assert.Error(t, err, bad)
	}
}

// Check refuses what no CPU can run, with the reason.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		c   Config
		err error
		msg string
	}{
		{Config{World: W32, Mode: OnPCID, Entry: Sysenter}, ErrNotInPAE, "PCID: not in PAE (PCIDs exist only in IA-32e mode)"},
		{Config{World: W32, Mode: OnDefer, Entry: Sysenter}, ErrNotInPAE, "the 32-bit kernel has trampolines for off and on"},
		{Config{World: W32, Mode: OnDeferPCID, Entry: Sysenter}, ErrNotInPAE, "isolation mode on-defer+pcid: not in PAE"},
		{Config{World: W64, Mode: OnDefer, Entry: Syscall, Flavour: Mitigated}, ErrNoTrampoline, "the mitigated flavour in isolation mode on-defer"},
		{Config{World: W32, Mode: On, Entry: Sysenter, Flavour: Mitigated, Copy: Direct, Knobs: KnobsOf(IBRS)}, ErrNotIn32BitEntry, "ibrs"},
		{Config{World: W64, Mode: On, Entry: Sysenter}, ErrNoTrampoline, "entry sysenter is the 32-bit world's"},
		{Config{World: W64, Mode: On, Entry: Syscall, Flavour: Linux, Knobs: KnobsOf(VERW)}, nil, "need the mitigated flavour"},
		{Config{World: W32, Mode: On, Entry: Sysenter, Flavour: Mitigated, Copy: Movsl}, nil, "SYSENTER's with the direct copy method"},
		{Config{World: W32, Mode: On, Entry: Int80, Flavour: Linux, Copy: Trim}, nil, "copy methods and stamps are the linux SYSENTER trampoline's"},
		{Config{World: W32, Mode: On, Entry: Sysenter, Flavour: Minimal, Stamps: true}, nil, "copy methods and stamps"},
		{Config{World: W64, Mode: On, Entry: Syscall, Flavour: Linux, Stamps: true}, nil, "copy methods and stamps"},
		{Config{World: 16}, nil, "no world of width 16"},
	} {
		err := tc.c.Check()
		require.Error(t, err, tc.c.Key())
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err)
		}
		assert.ErrorContains(t, err, tc.msg)
	}
	assert.NoError(t, Config{World: W32, Mode: On, Entry: Sysenter, Flavour: Mitigated, Copy: Direct, Knobs: Knobs32()}.Check())
}

// JoinPairs quotes the values that hold a space, and SplitPairs reads
// them back.
func TestPairs(t *testing.T) {
	pairs := [][2]string{{"bench", "flushcost"}, {"width", "64"}, {"target", "mov cr3 pcid"}, {"ipc", ""}, {"x", `a"b`}}
	s := JoinPairs(pairs)
	assert.Equal(t, `bench=flushcost width=64 target="mov cr3 pcid" ipc="" x="a\"b"`, s)
	back, err := SplitPairs(s)
	require.NoError(t, err)
	assert.Equal(t, pairs, back)
	for _, bad := range []string{"bench", "=x", `target="mov cr3`, `target="a"b`} {
		_, err := SplitPairs(bad)
		assert.Error(t, err, bad)
	}
}

// TestCheckLoopOffset: multiples of 32 within a page.
func TestCheckLoopOffset(t *testing.T) {
	for _, off := range []int{0, 32, 64, 4064} {
		assert.NoError(t, CheckLoopOffset(off), off)
	}
	for _, off := range []int{-32, 16, 33, 4096} {
		assert.Error(t, CheckLoopOffset(off), off)
	}
}

// The asi actions: knobs of the switch back, in an asi mode's key only;
// l1d is no knob of the mitigated flavour.
func TestASIActions(t *testing.T) {
	assert.Equal(t, []Mitigation{VERW, RSB, L1D}, ASIActions())
	assert.NotContains(t, EntryMitigations(), L1D)
	asi := Config{World: W64, Mode: ASIPCID, Entry: Syscall, Flavour: Linux, ASIActions: KnobsOf(VERW, L1D)}
	require.NoError(t, asi.Check())
	assert.Equal(t, "width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=verw+l1d", asi.Key())
	back, err := ParseKey(asi.Key())
	require.NoError(t, err)
	assert.Equal(t, asi, back)
	assert.Equal(t, "asi+pcid[verw+l1d]", asi.ModeName())
	m, k, err := ParseModeName(asi.ModeName())
	require.NoError(t, err)
	assert.Equal(t, [2]any{ASIPCID, asi.ASIActions}, [2]any{m, k})
	_, _, err = ParseModeName("asi[verw")
	assert.Error(t, err)
	asi.ASIActions = 0
	assert.Equal(t, "asi+pcid", asi.ModeName())
	assert.Equal(t, "width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none", asi.Key())
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{World: W64, Mode: On, Entry: Syscall, Flavour: Linux, ASIActions: KnobsOf(VERW)}, "asi actions verw need an asi mode"},
		{Config{World: W64, Mode: ASI, Entry: Syscall, Flavour: Minimal, ASIActions: KnobsOf(IBRS)}, "asi actions ibrs: not all are actions of the switch back (verw, rsb, l1d are)"},
		{Config{World: W64, Mode: On, Entry: Syscall, Flavour: Mitigated, Knobs: KnobsOf(L1D)}, "mitigations l1d: not all act on the system call's path or in the context switch"},
	} {
		assert.ErrorContains(t, tc.c.Check(), tc.want, "%v", tc.c)
	}
}
