package linuxrun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/pmu"
)

// counters are the calling thread's performance counters, opened by
// perf_event_open(2): instructions and core cycles (the generic hardware
// events PERF_COUNT_HW_INSTRUCTIONS and PERF_COUNT_HW_CPU_CYCLES) and the
// image's model events (package pmu: the TLB walks of Intel's event
// lists) as raw events, counted in the kernel and in user mode where
// perf_event_paranoid (or CAP_PERFMON) lets this process count the
// kernel, in user mode alone otherwise, or none: Scope says which
// ("kernel+user", "user", or "unsupported: <why>", the errno named).
// Skipped are the model events not counted, each "name: why".
type counters struct {
	fds     []int
	names   []string
	Scope   string
	Skipped []string
}

// counterEvent is an event to count: its name in the records' PMU
// counts, its perf type and config.
type counterEvent struct {
	name   string
	typ    uint32
	config uint64
}

// genericEvents are the events every PMU perf knows has.
var genericEvents = []counterEvent{
	{"instructions", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_INSTRUCTIONS},
	{"core_cycles", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES},
}

// rawEvents are the model events of CPU c that a plan's pmu_events names
// (nil: the model's first ones), at most gp of them (the programmable
// counters, CPUID.0AH:EAX[15:8]: more would be multiplexed), as raw
// events: config = event code | umask << 8, the IA32_PERFEVTSELx layout
// (SDM Vol. 3B, 20.2.1.1; perf's cpu/event=,umask=/ format). The others
// are skipped, with why.
func rawEvents(c cpuInfo, names []string, gp int) (events []counterEvent, skipped []string) {
	if c.Vendor != "GenuineIntel" {
		return nil, []string{"model events: Intel's event lists only (" + c.Vendor + ")"}
	}
	sig := pmu.Signature{Family: uint8(c.Family), Model: uint8(c.Model), Stepping: uint8(c.Stepping)}
	m, why := pmu.ModelFor(sig)
	if m == nil {
		return nil, []string{"model events: " + why}
	}
	evs, unknown := m.Lookup(names)
	for _, n := range unknown {
		skipped = append(skipped, n+": not in the "+m.Name+" table")
	}
	for i, e := range evs {
		if i >= gp {
			skipped = append(skipped, fmt.Sprintf("%s: %d programmable counters", e.Name, gp))
			continue
		}
		events = append(events, counterEvent{e.Name, unix.PERF_TYPE_RAW, uint64(e.Code) | uint64(e.Umask)<<8})
	}
	return events, skipped
}

// openCounters opens the calling thread's counters, the generic events
// and raw, the model's events the plan names (pmu_events), or none where
// the plan says pmu = off; the caller must stay on its OS thread
// (runtime.LockOSThread) and close them.
func openCounters(c cpuInfo, p Plan) *counters {
	if !p.PMU {
		return &counters{Scope: "unsupported: the plan says pmu = off"}
	}
	raw, skipped := rawEvents(c, p.PMUEvents, pmu.Detect(cpustate.Hardware{}).GP) // CPUID only
	return openEvents(genericEvents, raw, skipped)
}

// openEvents opens the generic events, in kernel and user mode, else in
// user mode, else none; and then each raw event in the same modes, one
// that does not open skipped with its errno.
func openEvents(generic, raw []counterEvent, skipped []string) *counters {
	c := &counters{Skipped: skipped}
	for _, user := range []bool{false, true} {
		err := c.open(generic, user)
		if err == nil {
			c.Scope = "kernel+user"
			if user {
				c.Scope = "user"
			}
			for _, e := range raw {
				if err := c.open([]counterEvent{e}, user); err != nil {
					c.Skipped = append(c.Skipped, e.name+": "+err.Error())
				}
			}
			return c
		}
		c.close()
		c.Scope = "unsupported: " + err.Error()
		if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
			return c
		}
	}
	return c
}

// open opens every event, user mode alone with userOnly.
func (c *counters) open(events []counterEvent, userOnly bool) error {
	for _, e := range events {
		attr := unix.PerfEventAttr{Type: e.typ, Config: e.config, Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Bits: unix.PerfBitExcludeHv, Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING}
		if userOnly {
			attr.Bits |= unix.PerfBitExcludeKernel
		}
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			var en unix.Errno
			if errors.As(err, &en) {
				return fmt.Errorf("perf_event_open %s: %w (%s)", e.name, err, unix.ErrnoName(en))
			}
			return fmt.Errorf("perf_event_open %s: %w", e.name, err)
		}
		c.fds, c.names = append(c.fds, fd), append(c.names, e.name)
	}
	return nil
}

// ok reports whether the counters count.
func (c *counters) ok() bool { return len(c.fds) > 0 }

// reading is a counter's read (read_format TOTAL_TIME_ENABLED and
// TOTAL_TIME_RUNNING: perf_event_open(2)): its count, and the ns it was
// enabled and running; ok false where the read failed.
type reading struct {
	count, enabled, running uint64
	ok                      bool
}

// read returns each counter's reading (nil when they do not count).
func (c *counters) read() []reading {
	if !c.ok() {
		return nil
	}
	out := make([]reading, len(c.fds))
	var b [24]byte
	for i, fd := range c.fds {
		if n, err := unix.Read(fd, b[:]); err == nil && n == len(b) {
			out[i] = reading{binary.NativeEndian.Uint64(b[:]), binary.NativeEndian.Uint64(b[8:]), binary.NativeEndian.Uint64(b[16:]), true}
		}
	}
	return out
}

// perOp returns the counts between before and after per operation (ops
// of them), or why there are none. A counter is left out, with why, where
// a read failed, where it did not advance over the loop ("not counting":
// a hypervisor that accepts the event and never counts it), and where the
// kernel multiplexed it (it ran for less time than it was enabled: more
// events than free counters, as when the NMI watchdog holds one), whose
// count is short.
func (c *counters) perOp(before, after []reading, ops float64) *contract.PMUCounts {
	if !c.ok() || before == nil || after == nil {
		return &contract.PMUCounts{Unsupported: strings.TrimPrefix(c.Scope, "unsupported: ")}
	}
	out := &contract.PMUCounts{PerOp: map[string]float64{}, Skipped: append([]string(nil), c.Skipped...)}
	for i, name := range c.names {
		b, a := before[i], after[i]
		enabled, running := a.enabled-b.enabled, a.running-b.running
		switch {
		case !a.ok || !b.ok:
			out.Skipped = append(out.Skipped, name+": the counter could not be read")
		case a.count == b.count:
			out.Skipped = append(out.Skipped, name+": not counting (read 0 over the loop)")
		case running < enabled:
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s: multiplexed (counted %.0f%% of the loop): not reported", name, 100*float64(running)/float64(enabled)))
		default:
			out.PerOp[name] = float64(a.count-b.count) / ops
		}
	}
	return out
}

// close closes the counters.
func (c *counters) close() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds, c.names = nil, nil
}
