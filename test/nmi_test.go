package test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/host/qemu"
)

// nmiPlan is TestNMIs's plan: both worlds, isolation off and on and the
// deferred modes (NMIs on the trampoline stack, between the dispatcher's
// CR3 writes, in the no-switch handlers), the trampolines of every
// flavour, task switches (pingpong, messaging) and the tasks kernel's Go
// handlers, kept small.
const nmiPlan = "benchmarks = null,pingpong,messaging,null32,pingpong32\nmodes = off,on,on-defer,on-noswitch\nn = 2000\nr = 5\nwarmup = 1\nmessaging_groups = 1\nmessaging_loops = 3\n"

// nmiInterval is the time between two injected NMIs: about 33 a second.
const nmiInterval = 30 * time.Millisecond

// TestNMIs boots nmiPlan, with the screen on (every console line also
// goes through the firmware gate) and off, while QEMU's monitor injects
// an NMI every nmiInterval from the image's first line ("ptilab:
// booting", printed after the NMI handlers are in place) to its
// PTILAB-END line: into Go code, firmware calls, the gate, ring 3, the
// trampolines and the 32-bit world. The run must end as it does without
// them: no fault, no firmware exception, PTILAB-END ok, every PTILAB line
// whole and decodable; and PTILAB-END must count the NMIs (at least one,
// at most as many as were injected: NMIs that arrive while one is
// pending merge, SDM Vol. 3A, 6.7.1).
//
// The screen=on run boots the test image that plays an awkward firmware
// (oddFirmware), whose code selector, 0x28, names ptilab's USER_DS: the
// gate then passes through a selector free in both GDTs, with the
// firmware's calls on a copy of its GDT, and the NMIs land in those
// switches too (QEMU's TCG has no PCID: its CR4 stays OVMF's).
func TestNMIs(t *testing.T) {
	for _, screen := range []string{"on", "off"} {
		t.Run("screen="+screen, func(t *testing.T) {
			var image string
			if screen == "on" {
				_, image = taggedImage(t, oddFirmware...)
			}
			mon := filepath.Join(t.TempDir(), "monitor")
			w := newSerialWatch("ptilab: booting", contract.EndTag+" ")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			sent := make(chan injected, 1)
			go func() { sent <- injectNMIs(ctx, mon, w) }()

			res := boot(t, qemu.Options{
				Image:   image,
				Plan:    []byte(nmiPlan + "screen = " + screen + "\n"),
				Monitor: mon,
				Echo:    w,
				// The boot took 20 to 47 s here, on two cores with a load
				// average of 8 to 11; 4 minutes is 5 times the longest.
				Timeout: 4 * time.Minute,
			})
			cancel()
			inj := <-sent
			require.NoError(t, inj.err, "injecting NMIs")
			requireOK(t, res)

			_, err := res.Decoded()
			require.NoError(t, err, "every PTILAB line decodes")
			for i, l := range res.Lines() {
				if strings.Contains(l, contract.RecordTag) {
					assert.True(t, strings.HasPrefix(l, contract.RecordTag+" ") || strings.HasPrefix(l, contract.EndTag+" "),
						"line %d: a PTILAB record that does not start its line: %q", i+1, l)
				}
				assert.NotContains(t, l, "NMI Interrupt", "line %d: the firmware's NMI handler ran", i+1)
			}
			e := ended(t, res)
			t.Logf("NMIs injected %d, counted %d; run %v", inj.n, e.NMIs, res.Duration.Round(time.Millisecond))
			require.Positive(t, inj.n, "no NMI injected: the run ended before the first")
			assert.Positive(t, e.NMIs, "PTILAB-END counts the NMIs")
			assert.LessOrEqual(t, e.NMIs, inj.n, "counted more NMIs than were injected")
			lineIndex(t, res.Lines(), "ptilab: NMI: ")
			requireNMIDisturbed(t, res)
			if image != "" {
				requireGDTCopy(t, res)
			}
		})
	}
}

// requireGDTCopy checks a run of the oddFirmware test image under OVMF
// (EDK2's GDT: nine entries, 0x38 its 64-bit code): the pretend
// firmware's 0x28 collides with ptilab's USER_DS, so the gate passes
// through 0x50, the first entry null in ptilab's GDT and beyond the
// firmware's (7 is the firmware's own code, 8 and 9 ptilab's TSS), on a
// copy of the firmware's GDT; boot says so, and the cpu-state record and
// line; the firmware's CS at entry stays OVMF's.
func requireGDTCopy(t *testing.T, res serialLog) {
	t.Helper()
	lines := res.Lines()
	lineIndex(t, lines, "ptilab: the firmware's code selector 0x28 names another segment in ptilab's GDT: firmware calls run on a copy of the firmware's GDT, through code selector 0x50")
	sts := recordsOf[contract.CPUState](t, res)
	require.Len(t, sts, 1)
	assert.Equal(t, "0x38", sts[0].Selectors["cs"], "the CS the firmware entered with")
	assert.Equal(t, "0x50", sts[0].TransitCS)
	assert.True(t, sts[0].FirmwareGDTCopy)
	l := lines[lineIndex(t, lines, "ptilab cpu-state: firmware: ")]
	assert.Contains(t, l, " | firmware calls on a copy of its GDT, through code selector 0x50 | ")
}

// figure is a figure record's repeats and core clock, disturbances
// included.
type figure struct {
	name string
	r    int
	core contract.Core
}

// requireNMIDisturbed checks that the NMIs reached the figures: no record
// reports more disturbed repeats than it has, and at least one counted
// NMIs during its measured repeats and marked repeats disturbed.
func requireNMIDisturbed(t *testing.T, res serialLog) {
	t.Helper()
	var figs []figure
	for _, f := range recordsOf[contract.Syscall](t, res) {
		figs = append(figs, figure{f.Key(), f.R, f.Core})
	}
	for _, f := range recordsOf[contract.PingPong](t, res) {
		figs = append(figs, figure{f.Key(), f.R, f.Core})
	}
	for _, f := range recordsOf[contract.Messaging](t, res) {
		figs = append(figs, figure{f.Key(), f.R, f.Core})
	}
	require.NotEmpty(t, figs)
	disturbed, repeats, nmis, marked := 0, 0, uint64(0), 0
	for _, f := range figs {
		assert.LessOrEqual(t, f.core.Disturbed, f.r, "%s: disturbed repeats of all", f.name)
		assert.Equal(t, f.core.NMIs > 0, f.core.Disturbed > 0, "%s: NMIs during its repeats and disturbed repeats go together (no SMI counter here)", f.name)
		disturbed += f.core.Disturbed
		repeats += f.r
		nmis += f.core.NMIs
		if f.core.Disturbed > 0 && f.core.NMIs > 0 {
			marked++
		}
	}
	t.Logf("%d of %d figures saw NMIs: %d NMIs in their repeats, %d of %d repeats disturbed", marked, len(figs), nmis, disturbed, repeats)
	assert.Positive(t, marked, "no figure counted an NMI during its repeats")
}

// injected is what injectNMIs did: how many NMIs it sent, and why it
// stopped early, if it did.
type injected struct {
	n   uint64
	err error
}

// injectNMIs connects to QEMU's monitor at mon and, once w has seen its
// first marker, sends "nmi" every nmiInterval until w sees its second (or
// ctx ends: the run is over).
func injectNMIs(ctx context.Context, mon string, w *serialWatch) injected {
	m, err := qemu.DialMonitor(ctx, mon)
	if err != nil {
		return injected{err: err}
	}
	defer m.Close()
	select {
	case <-w.seen[0]:
	case <-ctx.Done():
		return injected{}
	}
	var n uint64
	tick := time.NewTicker(nmiInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.seen[1]:
			return injected{n: n}
		case <-ctx.Done():
			return injected{n: n}
		case <-tick.C:
		}
		if err := m.Command("nmi"); err != nil {
			// QEMU exited between the last line and the command.
			return injected{n: n}
		}
		n++
	}
}

// serialWatch is an Options.Echo writer that closes seen[i] when the
// serial output first contains markers[i].
type serialWatch struct {
	mu      sync.Mutex
	markers []string
	seen    []chan struct{}
	tail    []byte
}

func newSerialWatch(markers ...string) *serialWatch {
	w := &serialWatch{markers: markers}
	for range markers {
		w.seen = append(w.seen, make(chan struct{}))
	}
	return w
}

func (w *serialWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := append(w.tail, p...)
	keep := 0
	for i, m := range w.markers {
		keep = max(keep, len(m))
		select {
		case <-w.seen[i]:
		default:
			if bytes.Contains(buf, []byte(m)) {
				close(w.seen[i])
			}
		}
	}
	w.tail = append(w.tail[:0], buf[max(0, len(buf)-keep):]...)
	return len(p), nil
}
