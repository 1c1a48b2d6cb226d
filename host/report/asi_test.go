package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/ptilab/ptilab/contract"
)

// asiPath is the synthetic asi fixture: asiLog's output (go test -update
// rewrites it; TestASIFixture holds them equal).
const asiPath = "testdata/synthetic-asi.log"

// asiModes are the asi fixture's modes: asi beside the other kinds of
// switch.
var asiModes = []string{"off", "on", "on-defer", "on-noswitch", "asi", "asi+pcid"}

// asiLog returns the asi fixture's bytes: a run shaped as a hardware
// run's (synthStats) of the 64-bit work curve, null call, lseek,
// ping-pong and sched-messaging in asiModes, the asi rows carrying their
// transitions as README's "Address Space Isolation" counts them (none
// for getppid, the work call and lseek, 4 per round trip, 2 per message
// and 2 per task). Made-up figures, not a measurement.
func asiLog() []byte {
	var b logBuilder
	rec := b.rec
	fmt.Fprintln(&b, "SYNTHETIC TEST FIXTURE of host/report: made-up asi figures in a hardware run's shape, not a measurement")
	rec(contract.Machine{Vendor: "GenuineIntel", Brand: "SYNTHETIC ASI FIXTURE (not a measurement)", Family: 6, Model: 0x55,
		TSCHz: synthHz, TSCSource: "cpuid-15h", TSCInvariant: true, PCID: true, PGE: true, RDTSCP: true, NX: true})
	rec(contract.Timing{LFENCE: "serializing", TSCHz: synthHz, TSCSource: "cpuid-15h", TSCInvariant: true, RDTSCP: true, Modes: asiModes})
	sub := func(bench, mode, flavour string) contract.Subject {
		return contract.Subject{Bench: bench, Width: 64, Mode: mode, Entry: "syscall", Flavour: flavour}
	}
	// Cycles a mode adds to a call, and its transitions per call, round
	// trip and message (the asi modes').
	add := map[string]float64{"off": 0, "on": 450, "on-defer": 420, "on-noswitch": 30, "asi": 40, "asi+pcid": 45}
	transitions := func(mode string, count uint64) *uint64 {
		if mode != "asi" && mode != "asi+pcid" {
			return nil
		}
		return &count
	}
	const warmup = 2
	for _, ns := range []int64{0, 100, 2000} {
		base := 60 + float64(ns)*synthHz/1e9
		for _, mode := range asiModes {
			s := sub("work", mode, "minimal")
			s.WorkNs = &ns
			c := base + add[mode]
			rec(contract.Syscall{Subject: s, N: synthN / 10, R: synthR, Warmup: warmup, Stats: synthStats(c, c/base), NsPerCall: synthNs(c),
				EmptyLoopCycles: 30, ASITransitions: transitions(mode, 0)})
		}
	}
	for _, mode := range asiModes {
		for _, fl := range []string{"minimal", "linux"} {
			c := 280 + add[mode]
			rec(contract.Syscall{Subject: sub("null", mode, fl), N: synthN, R: synthR, Warmup: warmup, Stats: synthStats(c, c/280),
				NsPerCall: synthNs(c), EmptyLoopCycles: 30, ASITransitions: transitions(mode, 0)})
		}
	}
	for _, mode := range asiModes {
		c := 650 + add[mode]
		rec(contract.Syscall{Subject: sub("lseek", mode, "linux"), N: synthN, R: synthR, Warmup: warmup, Stats: synthStats(c, c/650),
			NsPerCall: synthNs(c), EmptyLoopCycles: 30, ASITransitions: transitions(mode, 0)})
	}
	const roundTrips = 200 * (synthR + warmup)
	for _, mode := range asiModes {
		for ti, tasks := range []string{"processes", "threads"} {
			s := sub("pingpong", mode, "linux")
			s.Tasks = tasks
			off := []float64{6000, 4000}[ti]
			c := off + 2*add[mode]
			cr3 := uint64(2*roundTrips + 1)
			if tasks == "threads" {
				cr3 = 0
			}
			rec(contract.PingPong{Subject: s, N: 200, R: synthR, Warmup: warmup, Stats: synthStats(c, c/off), NsPerRoundTrip: synthNs(c),
				RoundTrips: roundTrips, Switches: 2*roundTrips + 1, CR3Loads: cr3, ASITransitions: transitions(mode, 4*roundTrips)})
		}
	}
	wl := contract.Workload{Groups: 1, Loops: 4, Size: 100, IPC: "pipe"}
	const messages, tasks = 20 * 20 * 4, 41 // a starter and 40 workers
	for _, mode := range asiModes {
		for _, kind := range []string{"processes", "threads"} {
			s := sub("messaging", mode, "linux")
			s.Tasks = kind
			c := 4e6 + messages*add[mode]
			rec(contract.Messaging{Subject: s, Workload: wl, R: synthR, Warmup: warmup, Stats: synthStats(c, c/4e6),
				Seconds: c / synthHz, Messages: messages, PerMessage: c / messages, Switches: 3300, ChecksumsOK: true,
				ASITransitions: transitions(mode, 2*messages+2*tasks)})
		}
	}
	return b.end(contract.End{Status: "ok", Failed: []string{}, ElapsedMs: 60000})
}

func TestASIFixture(t *testing.T) { sameFixture(t, asiPath, asiLog()) }

// TestASITables: the report's 64-bit tables of a plan with asi modes
// have the transitions per operation beside the figures: 0 per call for
// getppid and lseek, 4 per round trip, (2*1600 + 2*41)/1600 = 2.05 per
// message; "-" in the other modes' rows. The JSON figures carry them.
func TestASITables(t *testing.T) {
	rep := Build(load1(t, asiPath))
	cell := func(table, head, mode string, nth int) string {
		i := slices.IndexFunc(rep.Tables, func(tb Table) bool { return tb.Name == table })
		require.GreaterOrEqual(t, i, 0, table)
		tb := rep.Tables[i]
		col := -1
		for k, h := range tb.Heads() {
			if h == head {
				if col = k; nth == 0 {
					break
				}
				nth--
			}
		}
		require.GreaterOrEqual(t, col, 0, "%s: no column %s", table, head)
		for _, row := range tb.Rows {
			if row[0] == mode {
				return row[col]
			}
		}
		t.Fatalf("%s: no row %s", table, mode)
		return ""
	}
	for _, c := range []struct {
		table, head, mode string
		nth               int
		want              string
	}{
		{"null64", "asi/call", "asi", 0, "0.00"},
		{"null64", "asi/call", "off", 0, "-"},
		{"null64", "asi/call", "on-noswitch", 0, "-"},
		{"lseek64", "asi/call", "asi+pcid", 0, "0.00"},
		{"lseek64", "asi/call", "on", 0, "-"},
		{"pingpong64", "asi/rt", "asi", 0, "4.00"},
		{"pingpong64", "asi/rt", "asi+pcid", 1, "4.00"},
		{"pingpong64", "asi/rt", "on-defer", 1, "-"},
		{"messaging64", "asi/msg", "asi", 0, "2.05"},
		{"messaging64", "asi/msg", "asi+pcid", 1, "2.05"},
		{"messaging64", "asi/msg", "off", 1, "-"},
	} {
		assert.Equal(t, c.want, cell(c.table, c.head, c.mode, c.nth), "%s %s %s", c.table, c.mode, c.head)
	}
	perOp, n := map[string]float64{}, 0
	for _, f := range rep.Figures {
		if f.ASIPerOp != nil {
			perOp[f.Bench+" "+f.Mode+" "+f.Tasks] = *f.ASIPerOp
			n++
		} else {
			assert.NotContains(t, []string{"asi", "asi+pcid"}, f.Mode, "%s: an asi figure without transitions", f.Key)
		}
	}
	assert.Equal(t, 0.0, perOp["null asi "])
	assert.Equal(t, 4.0, perOp["pingpong asi+pcid threads"])
	assert.Equal(t, 3282.0/1600, perOp["messaging asi processes"])
	assert.Equal(t, 2*(3+2+1+2+2), n, "per asi mode: the work curve's 3 points, null's 2 flavours, lseek, the tasks' 2 kinds each")
}

// TestASIPlots: the plots show the asi modes beside off, on, on-defer
// and on-noswitch, in the plan's order.
func TestASIPlots(t *testing.T) {
	ps, err := Plots(load1(t, asiPath))
	require.NoError(t, err)
	series := map[string][]string{}
	for _, p := range ps {
		series[p.Name] = p.Series
	}
	assert.Equal(t, []string{"PTI off", "PTI on", "PTI on-defer", "PTI on-noswitch", "PTI asi", "PTI asi+pcid"}, series["work64"])
	assert.Equal(t, []string{"PTI on vs off", "PTI on-defer vs off", "PTI on-noswitch vs off", "PTI asi vs off", "PTI asi+pcid vs off",
		"Linux, a 2 µs call under PTI (docs/references.md)"}, series["overhead64"])
	files, err := WritePlots(t.TempDir(), []*Run{load1(t, asiPath)})
	require.NoError(t, err)
	i := slices.IndexFunc(ps, func(p Plot) bool { return p.Name == "null64" })
	require.GreaterOrEqual(t, i, 0)
	_, texts, _ := svgTexts(t, files[i])
	for _, m := range asiModes {
		assert.Contains(t, texts, "PTI "+m, "the null call's group of %s", m)
	}
}

// TestLineDashes: a line plot's series past the palette's seven colors
// (a plan of more than seven modes) are dashed, so that asi's line is not
// drawn as off's; the first seven are solid, as before.
func TestLineDashes(t *testing.T) {
	dashed := func(k int) int {
		p := plot.New()
		for i := range k {
			require.NoError(t, addLine(p, i, fmt.Sprint("series ", i), errPoints{{x: 0, y: float64(i)}, {x: 1, y: float64(i)}}))
		}
		c := vgsvg.New(plotWidth, plotHeight)
		p.Draw(draw.New(c))
		var b bytes.Buffer
		_, err := c.WriteTo(&b)
		require.NoError(t, err)
		return strings.Count(b.String(), "stroke-dasharray")
	}
	assert.Zero(t, dashed(7))
	assert.Equal(t, 4, dashed(9), "the 8th and 9th lines and their legend's")
}
