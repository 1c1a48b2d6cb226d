// Package pmu programs Intel's architectural performance monitoring for
// a measurement: the three fixed-function counters (instructions retired,
// core cycles, reference cycles) and up to MaxGP programmable counters
// with the per-model events of the tables in events.go, all counting in
// ring 0 and ring 3. It reads CPUID leaf 0AH to learn what the CPU has.
//
// Detect and NewSession run in ordinary Go (they may allocate); the
// Session methods Start, Read and Stop are what runs in ring 0 around a
// repeat: they use only the Session's fixed arrays and the CPU interface
// (cpustate.CPU: CPUID and #GP-safe MSR access), and do not allocate.
//
// References: Intel SDM Vol. 3B, "Architectural Performance Monitoring"
// (section 20.2 in the 2023 and later editions, 18.2 before, with the
// same subsections; in the 2008 edition 18.13):
// 20.2.1 version 1 (IA32_PERFEVTSELx, IA32_PMCx), 20.2.2 version 2
// (fixed-function counters, IA32_FIXED_CTR_CTRL, IA32_PERF_GLOBAL_CTRL,
// IA32_PERF_GLOBAL_STATUS, IA32_PERF_GLOBAL_OVF_CTRL), 20.2.3 version 3,
// 20.2.4 version 4 (IA32_PERF_GLOBAL_STATUS_RESET at 390H), 20.2.5
// version 5 (CPUID.0AH:ECX fixed-counter bitmap); the CPUID instruction's
// leaf 0AH in Vol. 2A; the MSRs in Vol. 4, Table 2-2. Linux:
// arch/x86/events/intel/core.c (intel_pmu_init), arch/x86/include/asm/perf_event.h.
package pmu

import (
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/cpustate"
)

// CPU is the processor as the package programs it (CPUID and #GP-safe
// MSR reads and writes); cpustate.Hardware on the machine, a fake bank of
// MSRs in tests.
type CPU = cpustate.CPU

// NumFixed is the fixed-function counters the package uses: 0
// INST_RETIRED.ANY, 1 CPU_CLK_UNHALTED.THREAD (core cycles), 2
// CPU_CLK_UNHALTED.REF_TSC (reference cycles) (SDM Vol. 3B, 20.2.2 /
// 18.2.2, the table associating the fixed-function counters with
// architectural performance events).
const NumFixed = 3

// FixedNames are the fixed counters' events as Intel's event lists name
// them (intel/perfmon IVB/events/ivybridge_core.json, "Fixed counter 0..2").
var FixedNames = [NumFixed]string{"INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD", "CPU_CLK_UNHALTED.REF_TSC"}

// MaxGP is the most programmable counters a Session drives: 8, what a
// core of these generations has with Hyper-Threading off (4 per logical
// processor with it on; CPUID.0AH:EAX[15:8] says which).
const MaxGP = 8

// fixedCtrlOSUSR enables a fixed counter for CPL 0 (bit 0) and CPL > 0
// (bit 1), without AnyThread (bit 2) or PMI (bit 3): one 4-bit field of
// IA32_FIXED_CTR_CTRL per counter (SDM Vol. 3B, 20.2.2 / 18.2.2, the
// layout of IA32_FIXED_CTR_CTRL: "11B enables the counter to increment
// irrespective of privilege levels").
const fixedCtrlOSUSR = 0x3

// Caps is what CPUID leaf 0AH says of the performance-monitoring unit
// (SDM Vol. 2A, CPUID leaf 0AH; Vol. 3B, 20.2).
type Caps struct {
	// Unsupported is why nothing can be counted ("" when something can):
	// not Intel, CPUID's maximum leaf below 0AH, or version 0.
	Unsupported string
	Version     uint8  // EAX[7:0], the architectural PMU version
	GP          int    // EAX[15:8], programmable counters per logical processor
	GPWidth     uint8  // EAX[23:16], their width in bits
	EBXLength   uint8  // EAX[31:24], valid bits in EBX
	Unavailable uint32 // EBX: bit i set = architectural event i not available
	// FixedMask has bit j set for each fixed counter j < NumFixed the
	// package counts: the CPU has it (j < EDX[4:0] with version >= 2, or
	// ECX[j] with version >= 5; version 1 has no fixed-function counters)
	// and EBX does not mark its architectural event unavailable (bit 1
	// instructions retired, bit 0 core cycles, bit 2 reference cycles,
	// where bit < EAX[31:24]). FixedReason says why a bit is clear.
	FixedMask  uint8
	FixedCount uint8 // EDX[4:0], fixed-function counters (version >= 2)
	FixedWidth uint8 // EDX[12:5], the fixed counters' width in bits
}

// fixedArchBit is the CPUID.0AH:EBX bit of fixed counter j's
// architectural event (SDM Vol. 2A, CPUID leaf 0AH: bit 0 core cycles,
// bit 1 instructions retired, bit 2 reference cycles).
var fixedArchBit = [NumFixed]uint8{1, 0, 2}

func (c Caps) archUnavailable(j int) bool {
	b := fixedArchBit[j]
	return b < c.EBXLength && c.Unavailable&(1<<b) != 0
}

// FixedReason is why fixed counter j is not counted, "" when it is.
func (c Caps) FixedReason(j int) string {
	switch {
	case c.FixedMask&(1<<j) != 0:
		return ""
	case !c.Supported():
		return c.Unsupported
	case c.Version < 2:
		return "architectural performance monitoring version 1 has no fixed-function counters"
	case c.archUnavailable(j):
		return "CPUID.0AH:EBX[" + strconv.Itoa(int(fixedArchBit[j])) + "] marks " + FixedNames[j] + " unavailable"
	}
	r := "CPUID.0AH:EDX[4:0] lists " + strconv.Itoa(int(c.FixedCount)) + " fixed-function counters"
	if c.Version >= 5 {
		r += " and ECX[" + strconv.Itoa(j) + "] is clear"
	}
	return r
}

// Supported reports whether anything can be counted.
func (c Caps) Supported() bool { return c.Unsupported == "" }

// Global reports whether the CPU has IA32_PERF_GLOBAL_CTRL, _STATUS and
// _OVF_CTRL (version 2 and later, SDM Vol. 3B, 20.2.2).
func (c Caps) Global() bool { return c.Version >= 2 }

// Detect reads CPUID leaves 0, 1 and 0AH. An AMD (or other non-Intel)
// CPU is unsupported: its counters are the PerfCtr/PerfEvtSel MSRs of
// AMD's APM Vol. 2, 13.2, which this package does not program.
func Detect(c CPU) Caps {
	max, b, cx, d := c.CPUID(0, 0)
	switch {
	case b == 0x68747541 && d == 0x69746e65 && cx == 0x444d4163: // "AuthenticAMD"
		return Caps{Unsupported: "AMD: its core performance counters (AMD APM Vol. 2, 13.2) are not programmed by ptilab"}
	case b != 0x756e6547 || d != 0x49656e69 || cx != 0x6c65746e: // "GenuineIntel"
		return Caps{Unsupported: "not an Intel CPU"}
	case max < 0x0a:
		return Caps{Unsupported: "CPUID leaf 0AH absent (maximum leaf below 0AH)"}
	}
	a, eb, ec, ed := c.CPUID(0x0a, 0)
	caps := Caps{
		Version:     uint8(a),
		GP:          int(uint8(a >> 8)),
		GPWidth:     uint8(a >> 16),
		EBXLength:   uint8(a >> 24),
		Unavailable: eb,
	}
	if caps.Version == 0 {
		return Caps{Unsupported: "no architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)"}
	}
	if caps.Version >= 2 {
		caps.FixedWidth = uint8(ed >> 5)
		caps.FixedCount = uint8(ed & 0x1f)
		n := int(caps.FixedCount)
		for j := 0; j < NumFixed; j++ {
			if j < n || (caps.Version >= 5 && ec&(1<<j) != 0) {
				caps.FixedMask |= 1 << j
			}
		}
		if caps.FixedWidth == 0 {
			caps.FixedMask = 0
		}
		for j := 0; j < NumFixed; j++ {
			if caps.archUnavailable(j) {
				caps.FixedMask &^= 1 << j
			}
		}
	}
	if caps.GPWidth == 0 {
		caps.GP = 0
	}
	if caps.GP == 0 && caps.FixedMask == 0 {
		return Caps{Unsupported: "CPUID.0AH lists no usable counter", Version: caps.Version}
	}
	return caps
}

// EventSelect is IA32_PERFEVTSELx for event code and umask, counting in
// ring 0 (OS, bit 17) and ring 3 (USR, bit 16), enabled (EN, bit 22), no
// edge, invert, counter mask or PMI (SDM Vol. 3B, 20.2.1.1 / 18.2.1.1,
// the layout of IA32_PERFEVTSELx).
func EventSelect(code, umask uint8) uint64 {
	return uint64(code) | uint64(umask)<<8 | amd64.PERFEVTSEL_USR | amd64.PERFEVTSEL_OS | amd64.PERFEVTSEL_EN
}

// Session is a measurement's programming: which fixed counters and which
// events on which programmable counters. Build it with NewSession.
type Session struct {
	caps    Caps
	nGP     int
	evtsel  [MaxGP]uint64
	names   [MaxGP]string
	fixed   uint8  // fixed counters used (bit j)
	enable  uint64 // the IA32_PERF_GLOBAL_CTRL value
	gpMask  uint64 // 2^GPWidth - 1
	fixMask uint64 // 2^FixedWidth - 1
}

// Skipped is an event asked for that the session does not count, and why.
type Skipped struct {
	Name, Reason string
}

// NewSession programs the fixed counters the CPU has and events, in
// order, on programmable counters 0, 1, ...: an event beyond the CPU's
// counters (CPUID.0AH:EAX[15:8], or MaxGP) is returned in skipped with the
// reason, never dropped silently. caps must be Supported.
func NewSession(caps Caps, events []Event) (s Session, skipped []Skipped) {
	s.caps = caps
	s.gpMask = widthMask(caps.GPWidth)
	s.fixMask = widthMask(caps.FixedWidth)
	s.fixed = caps.FixedMask
	if caps.Global() {
		for j := 0; j < NumFixed; j++ {
			if s.fixed&(1<<j) != 0 {
				s.enable |= 1 << (32 + j)
			}
		}
	}
	limit := min(caps.GP, MaxGP)
	for _, e := range events {
		if s.nGP >= limit {
			skipped = append(skipped, Skipped{e.Name, "no programmable counter left: CPUID.0AH:EAX[15:8] lists " + strconv.Itoa(caps.GP)})
			continue
		}
		s.evtsel[s.nGP] = EventSelect(e.Code, e.Umask)
		s.names[s.nGP] = e.Name
		if caps.Global() {
			s.enable |= 1 << s.nGP
		}
		s.nGP++
	}
	return s, skipped
}

// Events returns the names of the events on programmable counters 0..n-1.
func (s *Session) Events() []string { return append([]string(nil), s.names[:s.nGP]...) }

// Fixed reports whether fixed counter j counts.
func (s *Session) Fixed(j int) bool { return s.fixed&(1<<j) != 0 }

// MSR names, for the registry of saved MSRs (cpustate.SavedMSRs) and
// the log (SDM Vol. 4, Table 2-2).
var (
	pmcNames    = [MaxGP]string{"IA32_PMC0", "IA32_PMC1", "IA32_PMC2", "IA32_PMC3", "IA32_PMC4", "IA32_PMC5", "IA32_PMC6", "IA32_PMC7"}
	evtselNames = [MaxGP]string{"IA32_PERFEVTSEL0", "IA32_PERFEVTSEL1", "IA32_PERFEVTSEL2", "IA32_PERFEVTSEL3",
		"IA32_PERFEVTSEL4", "IA32_PERFEVTSEL5", "IA32_PERFEVTSEL6", "IA32_PERFEVTSEL7"}
	fixedCtrNames = [NumFixed]string{"IA32_FIXED_CTR0", "IA32_FIXED_CTR1", "IA32_FIXED_CTR2"}
)

// Operations a Start can fail in.
const (
	OpRDMSR = "RDMSR" // saving an MSR's value before the first write
	OpWRMSR = "WRMSR"
)

// FullWidthWrites reports whether IA32_A_PMCx writes the programmable
// counters' full width: IA32_PERF_CAPABILITIES (CPUID.01H:ECX[15], PDCM)
// bit 13 (SDM Vol. 3B, "Full-Width Writes to Performance Counter
// Registers"; Linux: x86_pmu.intel_cap.full_width_write).
func FullWidthWrites(c CPU) bool {
	if _, _, ecx, _ := c.CPUID(1, 0); ecx&amd64.CPUID_01_ECX_PDCM == 0 {
		return false
	}
	caps, ok := c.ReadMSR(amd64.MSR_IA32_PERF_CAPABILITIES)
	return ok && caps&amd64.PERF_CAPABILITIES_FW_WRITE != 0
}

// save records in saved, before any is written, every MSR Start writes,
// in this order: IA32_PERF_GLOBAL_CTRL, the counters (IA32_PMCx, written
// back through IA32_A_PMCx where the CPU has full-width writes, and
// IA32_FIXED_CTRx), IA32_PERF_GLOBAL_OVF_CTRL, then the controls
// (IA32_PERFEVTSELx, IA32_FIXED_CTR_CTRL). The registry restores the last
// saved first: the controls go back first (the session's counting stops,
// unless the firmware's own controls enable a counter), then the counts
// (exact, since nothing of ptilab's counts any more), then the global
// enables. It returns the MSR whose read raised #GP, or 0.
// IA32_PERF_GLOBAL_OVF_CTRL, a write-1-to-clear control that holds no
// state, may be unreadable (IA32_PERF_GLOBAL_STATUS_RESET from version
// 4): it is then written all the same, and not restored.
func (s *Session) save(c CPU, saved *cpustate.SavedMSRs) uint32 {
	global := s.caps.Global()
	if global && !saved.Save(c, amd64.MSR_IA32_PERF_GLOBAL_CTRL, "IA32_PERF_GLOBAL_CTRL") {
		return amd64.MSR_IA32_PERF_GLOBAL_CTRL
	}
	pmcVia := uint32(amd64.MSR_IA32_PMC0)
	if s.nGP > 0 && FullWidthWrites(c) {
		pmcVia = amd64.MSR_IA32_A_PMC0
	}
	for i := 0; i < s.nGP; i++ {
		if !saved.SaveVia(c, amd64.MSR_IA32_PMC0+uint32(i), pmcVia+uint32(i), pmcNames[i]) {
			return amd64.MSR_IA32_PMC0 + uint32(i)
		}
	}
	for j := 0; j < NumFixed; j++ {
		if s.Fixed(j) && !saved.Save(c, amd64.MSR_IA32_FIXED_CTR0+uint32(j), fixedCtrNames[j]) {
			return amd64.MSR_IA32_FIXED_CTR0 + uint32(j)
		}
	}
	if global {
		saved.Save(c, amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL, "IA32_PERF_GLOBAL_OVF_CTRL")
	}
	for i := 0; i < s.nGP; i++ {
		if !saved.Save(c, amd64.MSR_IA32_PERFEVTSEL0+uint32(i), evtselNames[i]) {
			return amd64.MSR_IA32_PERFEVTSEL0 + uint32(i)
		}
	}
	if global && s.fixed != 0 && !saved.Save(c, amd64.MSR_IA32_FIXED_CTR_CTRL, "IA32_FIXED_CTR_CTRL") {
		return amd64.MSR_IA32_FIXED_CTR_CTRL
	}
	return 0
}

// Start saves and then programs and starts the counters. First every MSR
// it writes is saved in saved with its value (save: the registry that
// every way out of the run restores), before any is written: an MSR whose
// read raises #GP ends Start with nothing written. Then (SDM Vol. 3B,
// 20.2.2): with version >= 2, IA32_PERF_GLOBAL_CTRL = 0 first (nothing
// counts while it is set up), IA32_FIXED_CTR_CTRL = 0x3 (OS and USR) in
// each used counter's field, IA32_PERFEVTSELx with event, umask, USR, OS
// and EN, IA32_PMCx and IA32_FIXED_CTRx cleared, stale overflow bits of
// those counters cleared through IA32_PERF_GLOBAL_OVF_CTRL, and
// IA32_PERF_GLOBAL_CTRL enabling exactly those counters, last. With
// version 1 (no global control) the event select's EN starts each
// counter: the counter is cleared before its event select is written.
// It returns 0, or the MSR whose read (op OpRDMSR) or write (OpWRMSR)
// raised #GP (after a failed read nothing is written and nothing stays
// saved; after a failed write the counters are stopped as far as
// possible and what was saved stays saved, for the restore). It runs in
// ring 0 and does not allocate.
func (s *Session) Start(c CPU, saved *cpustate.SavedMSRs) (msr uint32, op string) {
	mark := saved.Len()
	if m := s.save(c, saved); m != 0 {
		saved.Truncate(mark)
		return m, OpRDMSR
	}
	if !s.caps.Global() {
		for i := 0; i < s.nGP; i++ {
			if !c.WriteMSR(amd64.MSR_IA32_PMC0+uint32(i), 0) {
				s.Stop(c, nil)
				return amd64.MSR_IA32_PMC0 + uint32(i), OpWRMSR
			}
			if !c.WriteMSR(amd64.MSR_IA32_PERFEVTSEL0+uint32(i), s.evtsel[i]) {
				s.Stop(c, nil)
				return amd64.MSR_IA32_PERFEVTSEL0 + uint32(i), OpWRMSR
			}
		}
		return 0, ""
	}
	if !c.WriteMSR(amd64.MSR_IA32_PERF_GLOBAL_CTRL, 0) {
		return amd64.MSR_IA32_PERF_GLOBAL_CTRL, OpWRMSR
	}
	var fixedCtrl uint64
	for j := 0; j < NumFixed; j++ {
		if s.Fixed(j) {
			fixedCtrl |= fixedCtrlOSUSR << (4 * j)
		}
	}
	if s.fixed != 0 && !c.WriteMSR(amd64.MSR_IA32_FIXED_CTR_CTRL, fixedCtrl) {
		return amd64.MSR_IA32_FIXED_CTR_CTRL, OpWRMSR
	}
	for i := 0; i < s.nGP; i++ {
		if !c.WriteMSR(amd64.MSR_IA32_PERFEVTSEL0+uint32(i), s.evtsel[i]) {
			return amd64.MSR_IA32_PERFEVTSEL0 + uint32(i), OpWRMSR
		}
	}
	// IA32_PMCx takes a 32-bit write sign-extended to the counter's width
	// (SDM Vol. 3B, "Full-Width Writes to Performance Counter Registers"):
	// 0 stays 0.
	for i := 0; i < s.nGP; i++ {
		if !c.WriteMSR(amd64.MSR_IA32_PMC0+uint32(i), 0) {
			return amd64.MSR_IA32_PMC0 + uint32(i), OpWRMSR
		}
	}
	for j := 0; j < NumFixed; j++ {
		if s.Fixed(j) && !c.WriteMSR(amd64.MSR_IA32_FIXED_CTR0+uint32(j), 0) {
			return amd64.MSR_IA32_FIXED_CTR0 + uint32(j), OpWRMSR
		}
	}
	if !c.WriteMSR(amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL, s.enable) {
		return amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL, OpWRMSR
	}
	if !c.WriteMSR(amd64.MSR_IA32_PERF_GLOBAL_CTRL, s.enable) {
		return amd64.MSR_IA32_PERF_GLOBAL_CTRL, OpWRMSR
	}
	return 0, ""
}

// InUse lists the counters the CPU has whose enable bits were set
// before ptilab's first write, as Linux's check_hw_exists
// (arch/x86/events/core.c) looks for them before it trusts the PMU:
// IA32_PERFEVTSELx.EN (bit 22) of each programmable counter
// (CPUID.0AH:EAX[15:8], at most MaxGP), and with version >= 2 the enable
// field ([1:0]: OS, USR) of each fixed counter's 4 bits of
// IA32_FIXED_CTR_CTRL (CPUID.0AH:EDX[4:0] counters). An MSR in saved
// (Start's writes) counts with its value from before; the others are
// read now (#GP-safely: an MSR whose read raises #GP is skipped). They
// are the firmware's (or a tool's run before ptilab): a counter it uses.
// Each is "MSR = value: what is enabled". IA32_PERF_GLOBAL_CTRL is not
// looked at: its enable bits count only ANDed with those (SDM Vol. 3B,
// 20.2.2), and Linux does not look at it either. It allocates (ordinary
// Go, before the benchmarks).
func InUse(c CPU, caps Caps, saved *cpustate.SavedMSRs) []string {
	if !caps.Supported() {
		return nil
	}
	read := func(msr uint32) (uint64, bool) {
		if v, ok := saved.Value(msr); ok {
			return v, true
		}
		return c.ReadMSR(msr)
	}
	var out []string
	for i := 0; i < min(caps.GP, MaxGP); i++ {
		v, ok := read(amd64.MSR_IA32_PERFEVTSEL0 + uint32(i))
		if ok && v&amd64.PERFEVTSEL_EN != 0 {
			out = append(out, evtselNames[i]+" = "+hexString(v)+": counter "+strconv.Itoa(i)+" enabled")
		}
	}
	if !caps.Global() || caps.FixedCount == 0 {
		return out
	}
	v, ok := read(amd64.MSR_IA32_FIXED_CTR_CTRL)
	if !ok {
		return out
	}
	var on []string
	for j := 0; j < min(int(caps.FixedCount), 16); j++ {
		if v>>(4*j)&fixedCtrlOSUSR != 0 {
			on = append(on, strconv.Itoa(j))
		}
	}
	if len(on) > 0 {
		out = append(out, "IA32_FIXED_CTR_CTRL = "+hexString(v)+": fixed counter "+strings.Join(on, ", ")+" enabled")
	}
	return out
}

func hexString(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// Sample is the counters as read: Fixed[j] and GP[i] masked to the
// counters' widths, and, after Stop with version >= 2, the
// IA32_PERF_GLOBAL_STATUS overflow bits of the session's counters.
type Sample struct {
	Fixed    [NumFixed]uint64
	GP       [MaxGP]uint64
	Overflow uint64
	// OverflowKnown is false with version 1: there is no overflow status,
	// and a counter that wrapped more than once between two samples is not
	// seen (2^40 events at the narrowest width: minutes at GHz rates).
	OverflowKnown bool
}

// Read reads the session's counters into out without stopping them, for
// a snapshot at a repeat's start and end; Sub takes the difference. A
// counter whose read raises #GP reads as 0. It runs in ring 0 and does
// not allocate.
func (s *Session) Read(c CPU, out *Sample) {
	for j := 0; j < NumFixed; j++ {
		if s.Fixed(j) {
			v, _ := c.ReadMSR(amd64.MSR_IA32_FIXED_CTR0 + uint32(j))
			out.Fixed[j] = v & s.fixMask
		}
	}
	for i := 0; i < s.nGP; i++ {
		v, _ := c.ReadMSR(amd64.MSR_IA32_PMC0 + uint32(i))
		out.GP[i] = v & s.gpMask
	}
}

// Stop stops the counters (IA32_PERF_GLOBAL_CTRL = 0 with version >= 2;
// with version 1 each IA32_PERFEVTSELx without EN), reads them into out
// (when out is not nil), and with version >= 2 reads
// IA32_PERF_GLOBAL_STATUS, keeps the session's counters' overflow bits
// in out.Overflow and clears them by writing them to
// IA32_PERF_GLOBAL_OVF_CTRL (SDM Vol. 3B, 20.2.2). It runs in ring 0 and
// does not allocate.
func (s *Session) Stop(c CPU, out *Sample) {
	if s.caps.Global() {
		c.WriteMSR(amd64.MSR_IA32_PERF_GLOBAL_CTRL, 0)
	} else {
		for i := 0; i < s.nGP; i++ {
			c.WriteMSR(amd64.MSR_IA32_PERFEVTSEL0+uint32(i), s.evtsel[i]&^amd64.PERFEVTSEL_EN)
		}
	}
	var tmp Sample
	if out == nil {
		out = &tmp
	}
	s.Read(c, out)
	out.Overflow, out.OverflowKnown = 0, false
	if !s.caps.Global() {
		return
	}
	st, ok := c.ReadMSR(amd64.MSR_IA32_PERF_GLOBAL_STATUS)
	if !ok {
		return
	}
	out.OverflowKnown = true
	out.Overflow = st & s.enable
	if out.Overflow != 0 {
		c.WriteMSR(amd64.MSR_IA32_PERF_GLOBAL_OVF_CTRL, out.Overflow)
	}
}

// Counts are the events counted between two samples.
type Counts struct {
	Fixed [NumFixed]uint64
	GP    [MaxGP]uint64
	// Wrapped has bit i (programmable) or 32+j (fixed) set for a counter
	// whose overflow bit end carries: it wrapped past its width at least
	// once, and the count assumes exactly once.
	Wrapped uint64
}

// Sub returns end - start per counter modulo the counter's width (a
// counter that wrapped once between the samples still gives its count);
// a counter with its overflow bit set in end.Overflow whose value did not
// go below start's is credited with one full wrap (2^width). It does not
// allocate.
func (s *Session) Sub(end, start *Sample) Counts {
	var d Counts
	for j := 0; j < NumFixed; j++ {
		if s.Fixed(j) {
			d.Fixed[j] = s.delta(end.Fixed[j], start.Fixed[j], s.fixMask, end.Overflow&(1<<(32+j)) != 0)
			if end.Overflow&(1<<(32+j)) != 0 {
				d.Wrapped |= 1 << (32 + j)
			}
		}
	}
	for i := 0; i < s.nGP; i++ {
		d.GP[i] = s.delta(end.GP[i], start.GP[i], s.gpMask, end.Overflow&(1<<i) != 0)
		if end.Overflow&(1<<i) != 0 {
			d.Wrapped |= 1 << i
		}
	}
	return d
}

func (s *Session) delta(end, start, mask uint64, overflowed bool) uint64 {
	d := (end - start) & mask
	if overflowed && end >= start {
		d += mask + 1
	}
	return d
}

// widthMask is 2^w - 1 (all ones for w >= 64).
func widthMask(w uint8) uint64 {
	if w >= 64 {
		return ^uint64(0)
	}
	return 1<<w - 1
}

// FreezeWhileSMM sets IA32_DEBUGCTL.FREEZE_WHILE_SMM (bit 14) where the
// CPU has it: IA32_PERF_CAPABILITIES exists (CPUID.01H:ECX[15], PDCM)
// and its bit 12 is set. The processor then clears the enable bits of
// IA32_PERF_GLOBAL_CTRL when it delivers an SMI and sets them again after
// the handler's RSM, so that the SMM handler's instructions and cycles
// are not counted (SDM Vol. 3B, 17.4.1, IA32_DEBUGCTL). IA32_DEBUGCTL is
// saved in saved first (the registry every way out of the run
// restores). It reports whether it set the bit, or why not. It runs in
// ring 0 and does not allocate.
func FreezeWhileSMM(c CPU, saved *cpustate.SavedMSRs) (ok bool, why string) {
	if _, _, ecx, _ := c.CPUID(1, 0); ecx&amd64.CPUID_01_ECX_PDCM == 0 {
		return false, "CPUID.01H:ECX[15] (PDCM) is clear: no IA32_PERF_CAPABILITIES"
	}
	caps, read := c.ReadMSR(amd64.MSR_IA32_PERF_CAPABILITIES)
	switch {
	case !read:
		return false, "RDMSR IA32_PERF_CAPABILITIES raised #GP"
	case caps&amd64.PERF_CAPABILITIES_FREEZE_WHILE_SMM == 0:
		return false, "IA32_PERF_CAPABILITIES[12] is clear: no FREEZE_WHILE_SMM"
	}
	if !saved.Save(c, amd64.MSR_IA32_DEBUGCTL, "IA32_DEBUGCTL") {
		return false, "RDMSR IA32_DEBUGCTL raised #GP"
	}
	old, _ := saved.Value(amd64.MSR_IA32_DEBUGCTL)
	if !c.WriteMSR(amd64.MSR_IA32_DEBUGCTL, old|amd64.DEBUGCTL_FREEZE_WHILE_SMM) {
		return false, "WRMSR IA32_DEBUGCTL raised #GP"
	}
	return true, ""
}
