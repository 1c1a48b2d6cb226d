package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
)

// Settling after a P-state request (cpustate.WaitSettled): APERF/MPERF
// over 2 ms intervals, for at most 500 ms.
const (
	settleIntervalMs = 2
	settleMaxMs      = 500
)

// SetPState does what the plan's pstate says before the benchmarks: it
// requests the maximum non-turbo ratio (cpustate.PlanPState), waits
// until the clock settles, and prints a line and writes a pstate record
// of it. It returns the function that restores the firmware's request
// (and prints and records that) at the end of the run.
func SetPState(r *Reporter, mode string, p cpustate.Power, cpu cpustate.CPU, tscHz uint64) (restore func()) {
	req := cpustate.PlanPState(p, mode)
	rec := contract.PState{Mode: mode, Why: req.Why, Ratio: int(req.Ratio)}
	if req.MSR != 0 {
		rec.MSR, rec.Value, rec.Firmware = msrName(req.MSR), fmt.Sprintf("%#x", req.Value), fmt.Sprintf("%#x", req.Restore)
		rec.Applied = req.Apply(cpu)
		if rec.Applied && p.APERF {
			s := cpustate.WaitSettled(cpu, tscHz, settleIntervalMs, settleMaxMs)
			rec.Settled, rec.SettleMs, rec.CoreMHz = s.Settled, Round(s.Ms), Round(s.MHz)
		}
	}
	r.Printf("ptilab pstate: %s: %s%s", mode, req.Why, pstateOutcome(rec))
	r.Record(rec)
	return func() {
		if req.MSR == 0 || !rec.Applied {
			return
		}
		rec.Restored = req.Undo(cpu)
		r.Printf("ptilab pstate: the firmware's %s %s restored: %s", rec.MSR, rec.Firmware, yn(rec.Restored))
		r.Record(rec)
	}
}

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

// msrName names the P-state request MSRs.
func msrName(msr uint32) string {
	return map[uint32]string{0x199: "IA32_PERF_CTL", 0x774: "IA32_HWP_REQUEST"}[msr]
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
