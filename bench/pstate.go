package bench

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
)

// Settling after a P-state request (cpustate.WaitSettled): APERF/MPERF
// over 2 ms intervals, for at most 500 ms. Without a request, MPERF's
// rate is measured over a busy interval of its own (mperfRateMs).
const (
	settleIntervalMs = 2
	settleMaxMs      = 500
	mperfRateMs      = 10
)

// SetPState does what the plan's pstate says before the benchmarks: it
// requests the nominal ratio (cpustate.PlanPState), its MSR saved in
// cpustate.Saved first (every way out of the run gives the firmware's
// request back: RestoreMSRs, and the kernel's way out), and waits until
// the clock settles. Where the CPU has APERF and MPERF it takes MPERF's
// rate against the TSC's over that wait (or over a busy interval of
// mperfRateMs without one) and scales every figure's core clock by it
// where it is not 1 (cpustate.MPERFScale). It prints a line and writes a
// pstate record of it all.
func SetPState(r *Reporter, mode string, p cpustate.Power, cpu cpustate.CPU, tscHz uint64) {
	req := cpustate.PlanPState(p, mode)
	rec := contract.PState{Mode: mode, Why: req.Why, Ratio: int(req.Ratio)}
	var settled cpustate.Settle
	if req.MSR != 0 {
		rec.MSR, rec.Value, rec.Firmware = req.MSRName(), fmt.Sprintf("%#x", req.Value), fmt.Sprintf("%#x", req.Restore)
		rec.Applied = req.Apply(cpu, &cpustate.Saved)
		if rec.Applied && p.APERF {
			settled = cpustate.WaitSettled(cpu, tscHz, settleIntervalMs, settleMaxMs)
			rec.Settled, rec.SettleMs = settled.Settled, Round(settled.Ms)
		}
	}
	rate := ""
	mperfScale = 1
	if p.APERF {
		m := settled.MPERFPerTSC
		if settled.Intervals == 0 {
			m = cpustate.MPERFRate(cpu, tscHz, mperfRateMs)
		}
		mperfScale, rate = cpustate.MPERFScale(m)
		rec.MPERFPerTSC, rec.MPERFScaled = math.Round(m*1e6)/1e6, mperfScale != 1
		rate = "; " + rate
	}
	rec.CoreMHz = Round(settled.MHz * mperfScale)
	r.Printf("ptilab pstate: %s: %s%s%s", mode, req.Why, pstateOutcome(rec), rate)
	r.Record(rec)
}

// RestoreMSRs gives every MSR the run wrote (cpustate.Saved: the P-state
// request, the PMU's) back its value from before, and prints and records
// what it did (an msr-restore record, at "end"); nothing when nothing was
// written. It is the program's way out, after the benchmarks; the
// kernel replays the same registry on every other (goos's endRun).
func RestoreMSRs(r *Reporter, cpu cpustate.CPU) {
	e := cpustate.Saved.Restore(cpu)
	if e == nil {
		return
	}
	var line [cpustate.MaxSaved * 192]byte
	r.Printf("%s", line[:cpustate.WriteRestoreLine(line[:], restoredAtEnd, e)])
	r.Record(cpustate.RestoreRecord(restoredAtEnd, e))
}

// restoredAtEnd is the msr-restore record's "at" of the program's end.
const restoredAtEnd = "end"

// pstateOutcome says how a request went, for the pstate line.
func pstateOutcome(rec contract.PState) string {
	switch {
	case rec.MSR == "":
		return ""
	case !rec.Applied:
		return "; the write raised #GP: nothing changed"
	case rec.Settled:
		return fmt.Sprintf("; the core clock settled at %.0f MHz after %.1f ms", rec.CoreMHz, rec.SettleMs)
	case rec.CoreMHz != 0:
		return fmt.Sprintf("; the core clock did not settle within %d ms (last %.0f MHz)", settleMaxMs, rec.CoreMHz)
	}
	return "; no APERF/MPERF to watch it settle"
}

// CPUStateLines are the human lines of the cpu-state record.
func CPUStateLines(s contract.CPUState) []string {
	sel := func(n string) string { return n + " " + s.Selectors[n] }
	onOff := func(b *bool, on, off string) string {
		switch {
		case b == nil:
			return "unknown"
		case *b:
			return on
		}
		return off
	}
	smt := yn(s.SMT)
	shipped := fmt.Sprintf("%s per core, CPUID %s", plural(s.ThreadsPerCore, "thread", "threads"), s.TopologyLeaf)
	switch {
	case s.SMTSource == cpustate.SMTFromMSR && s.TopologyLeaf != "none":
		smt += fmt.Sprintf(" (%s on %s enabled, MSR_CORE_THREAD_COUNT; as shipped %s)",
			plural(s.ThreadCount, "thread", "threads"), plural(s.CoreCount, "core", "cores"), shipped)
	case s.SMTSource == cpustate.SMTFromMSR:
		smt += fmt.Sprintf(" (%s on %s enabled, MSR_CORE_THREAD_COUNT)", plural(s.ThreadCount, "thread", "threads"), plural(s.CoreCount, "core", "cores"))
	case s.TopologyLeaf == "none":
		smt = "unknown (no CPUID leaf 0BH or 1FH, no MSR_CORE_THREAD_COUNT)"
	default:
		smt += " (" + shipped + ")"
	}
	lines := []string{
		fmt.Sprintf("ptilab cpu-state: firmware at entry: CR0 %s CR4 %s EFER %s | %s %s %s %s %s %s %s | IF %d",
			s.CR0, s.CR4, s.EFER, sel("cs"), sel("ss"), sel("ds"), sel("es"), sel("fs"), sel("gs"), sel("tr"), map[bool]int{false: 0, true: 1}[s.IF]),
		fmt.Sprintf("ptilab cpu-state: core clock %s | SMI count %s | max non-turbo ratio %d, current %d | EIST %s | turbo %s | HWP %s | fast strings %s, ERMSB %s | SMT siblings %s | FRED %s, LASS %s",
			s.CoreClock, s.SMICount, s.MaxNonTurboRatio, s.CurrentRatio, onOff(s.EIST, "on", "off"),
			turboText(s), hwpText(s), onOff(s.FastStrings, "on", "off"), yn(s.ERMSB), smt, yn(s.FRED), yn(s.LASS)),
	}
	var msrs []string
	for _, k := range slices.Sorted(maps.Keys(s.MSRs)) {
		msrs = append(msrs, k+" "+s.MSRs[k])
	}
	lines = append(lines, "ptilab cpu-state: MSRs: "+strings.Join(msrs, ", "))
	leaf := func(name string, v []uint32) string {
		if v == nil {
			return name + " absent"
		}
		return fmt.Sprintf("%s %#x %#x %#x %#x", name, v[0], v[1], v[2], v[3])
	}
	xs := "firmware's XSAVE: CR4.OSXSAVE clear"
	if s.XCR0 != "" {
		xs = "firmware's XCR0 " + s.XCR0 + map[bool]string{true: ", state put in its initial configuration before OSXSAVE was cleared",
			false: ", no AVX: nothing to clean"}[s.XStateInit]
	}
	lines = append(lines, "ptilab cpu-state: CPUID max leaf "+cpuidLimitText(s)+" | "+leaf("15H", s.CPUID15H)+" | "+leaf("16H", s.CPUID16H)+" | "+xs)
	return lines
}

// cpuidLimitText says what the firmware's CPUID limit was and what boot
// did with it.
func cpuidLimitText(s contract.CPUState) string {
	const bit = "limit IA32_MISC_ENABLE[22]"
	switch {
	case s.CPUIDLimit == nil:
		return fmt.Sprintf("%#x (%s not read)", s.MaxLeaf, bit)
	case !*s.CPUIDLimit:
		return fmt.Sprintf("%#x (%s off)", s.MaxLeaf, bit)
	case s.CPUIDLimitCleared:
		return fmt.Sprintf("%#x (%s set by the firmware, cleared by ptilab: was %#x)", s.MaxLeaf, bit, s.MaxLeafAtEntry)
	}
	return fmt.Sprintf("%#x (%s set by the firmware and not cleared: the leaves above 2 are hidden)", s.MaxLeaf, bit)
}

func turboText(s contract.CPUState) string {
	switch {
	case !s.Turbo:
		return "absent"
	case s.TurboDisabled == nil:
		return "present"
	case *s.TurboDisabled:
		return "present but disabled (IA32_MISC_ENABLE[38])"
	}
	return "enabled"
}

func hwpText(s contract.CPUState) string {
	switch {
	case !s.HWP:
		return "absent"
	case s.HWPEnabled:
		return "enabled"
	}
	return "present, not enabled"
}
