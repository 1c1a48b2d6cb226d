package pmu

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/cpustate/cpustatetest"
)

// TestModelsHoldTheTLBEvents: every table has dTLB load walks completed,
// iTLB walks completed, load STLB hits and load page-walk cycles, each
// name once, with its source file.
func TestModelsHoldTheTLBEvents(t *testing.T) {
	for _, m := range Models {
		t.Run(m.Name, func(t *testing.T) {
			names := map[string]bool{}
			codes := map[[2]uint8]bool{}
			for _, e := range m.Events {
				assert.False(t, names[e.Name], "%s twice", e.Name)
				names[e.Name] = true
				assert.False(t, codes[[2]uint8{e.Code, e.Umask}], "%s: code and umask twice", e.Name)
				codes[[2]uint8{e.Code, e.Umask}] = true
				assert.True(t, strings.HasPrefix(e.Source, "intel/perfmon ") && strings.HasSuffix(e.Source, "_core.json"), e.Source)
			}
			for _, n := range []string{"DTLB_LOAD_MISSES.WALK_COMPLETED", "ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.STLB_HIT"} {
				assert.True(t, names[n], "%s missing", n)
			}
			assert.True(t, names["DTLB_LOAD_MISSES.WALK_DURATION"] || names["DTLB_LOAD_MISSES.WALK_PENDING"], "load page-walk cycles")
			assert.Equal(t, "DTLB_LOAD_MISSES.WALK_COMPLETED", m.Events[0].Name, "the default set starts with the walks")
		})
	}
}

// TestEventCodes pins the values read from intel/perfmon, by file and
// event name, so a slip in the table shows here too.
func TestEventCodes(t *testing.T) {
	want := map[string]map[string][2]uint8{
		"Ivy Bridge": {
			"DTLB_LOAD_MISSES.WALK_COMPLETED": {0x08, 0x82}, "DTLB_LOAD_MISSES.WALK_DURATION": {0x08, 0x84},
			"DTLB_LOAD_MISSES.STLB_HIT": {0x5f, 0x04}, "ITLB_MISSES.WALK_COMPLETED": {0x85, 0x02},
			"ITLB_MISSES.WALK_DURATION": {0x85, 0x04}, "ITLB_MISSES.STLB_HIT": {0x85, 0x10},
		},
		"Skylake (client)": {
			"DTLB_LOAD_MISSES.WALK_COMPLETED": {0x08, 0x0e}, "DTLB_LOAD_MISSES.WALK_PENDING": {0x08, 0x10},
			"DTLB_LOAD_MISSES.STLB_HIT": {0x08, 0x20}, "ITLB_MISSES.WALK_COMPLETED": {0x85, 0x0e},
			"ITLB_MISSES.WALK_PENDING": {0x85, 0x10}, "ITLB_MISSES.STLB_HIT": {0x85, 0x20},
		},
	}
	want["Ivy Bridge-EP (Ivytown)"] = want["Ivy Bridge"]
	want["Skylake-SP"] = want["Skylake (client)"]
	require.Len(t, Models, len(want))
	for _, m := range Models {
		got := map[string][2]uint8{}
		for _, e := range m.Events {
			got[e.Name] = [2]uint8{e.Code, e.Umask}
		}
		assert.Equal(t, want[m.Name], got, m.Name)
	}
}

func TestReadSignature(t *testing.T) {
	for eax, want := range map[uint32]Signature{
		0x306a9:  {6, 0x3a, 9},    // i7-3770K
		0x306e4:  {6, 0x3e, 4},    // Ivy Bridge-EP
		0x506e3:  {6, 0x5e, 3},    // i5-6400T
		0x806e9:  {6, 0x8e, 9},    // i7-7500U
		0x50654:  {6, 0x55, 4},    // Skylake-SP
		0x50657:  {6, 0x55, 7},    // Cascade Lake
		0xa20f10: {0x19, 0x21, 0}, // AMD Zen 3: family 0FH + extended 0AH
	} {
		got := ReadSignature(&fakeCPU{Leaves: cpustatetest.ByLeaf(map[uint32][4]uint32{1: {eax}})})
		assert.Equal(t, want, got, "%#x", eax)
	}
}

func TestModelFor(t *testing.T) {
	for sig, name := range map[Signature]string{
		{6, 0x3a, 9}: "Ivy Bridge", {6, 0x3e, 4}: "Ivy Bridge-EP (Ivytown)",
		{6, 0x4e, 3}: "Skylake (client)", {6, 0x5e, 3}: "Skylake (client)",
		{6, 0x8e, 9}: "Skylake (client)", {6, 0x9e, 9}: "Skylake (client)",
		{6, 0x55, 4}: "Skylake-SP",
	} {
		m, why := ModelFor(sig)
		require.NotNil(t, m, why)
		assert.Equal(t, name, m.Name, sig.String())
	}
	for _, sig := range []Signature{{6, 0x55, 7}, {6, 0x3c, 3}, {0x19, 0x21, 0}} {
		m, why := ModelFor(sig)
		assert.Nil(t, m)
		assert.Equal(t, "no event table for CPU "+sig.String(), why)
	}
}

func TestLookup(t *testing.T) {
	m, _ := ModelFor(Signature{6, 0x3a, 9})
	ev, unknown := m.Lookup([]string{"ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.WALK_PENDING"})
	require.Len(t, ev, 1)
	assert.Equal(t, "ITLB_MISSES.WALK_COMPLETED", ev[0].Name)
	assert.Equal(t, []string{"DTLB_LOAD_MISSES.WALK_PENDING"}, unknown, "Ivy Bridge has WALK_DURATION, not WALK_PENDING")
	all, unknown := m.Lookup(nil)
	assert.Equal(t, m.Events, all)
	assert.Empty(t, unknown)
}

func TestEventNames(t *testing.T) {
	n := EventNames()
	assert.Equal(t, []string{
		"DTLB_LOAD_MISSES.WALK_COMPLETED", "ITLB_MISSES.WALK_COMPLETED", "DTLB_LOAD_MISSES.STLB_HIT",
		"DTLB_LOAD_MISSES.WALK_DURATION", "ITLB_MISSES.WALK_DURATION", "ITLB_MISSES.STLB_HIT",
		"DTLB_LOAD_MISSES.WALK_PENDING", "ITLB_MISSES.WALK_PENDING",
	}, n)
}
