package bench

import (
	"fmt"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/pmu"
	"github.com/ptilab/ptilab/pti"
)

// The performance counters of every figure: before the first benchmark,
// startPMU detects the PMU (CPUID leaf 0AH), programs the fixed-function
// counters and up to cpustate.SampleGP of the plan's events (package pmu) to
// count in ring 0 and ring 3 across the whole run, and names their MSRs
// to both worlds' sample calls (pti.SetSamplePMCs, i386pae.SetSamplePMCs:
// the counters, programmed in long mode, count on across the switch to
// the 32-bit world, whose kernel reads them by RDMSR) and to ReadSample:
// every cpustate.Sample then carries them, in slots 0-2 (fixed) and 3..
// (programmable). Every PMU MSR it writes is saved in cpustate.Saved
// first, with the firmware's value: a pmu-firmware record lists them, and
// warns of a counter the firmware left enabled; every way out of the run
// gives them back (RestoreMSRs, the kernel's endRun). stopPMU stops the
// counters after the benchmarks.

// pmuFixedNames are the record names of the fixed-function counters
// (pmu.FixedNames in Intel's spelling).
var pmuFixedNames = [pmu.NumFixed]string{"instructions", "core_cycles", "ref_cycles"}

// pmuState is what the counters count, or why they do not.
type pmuState struct {
	on      bool
	standIn bool   // the test image's IA32_TSC stand-in (pmutsc.go): nothing programmed
	reason  string // why nothing counts (when !on)
	sess    pmu.Session
	// frozen is set when IA32_DEBUGCTL.FREEZE_WHILE_SMM keeps SMM's
	// instructions and cycles out of the counts.
	frozen  bool
	names   [cpustate.SamplePMCs]string // record name per slot, "" for none
	msrs    cpustate.SamplePMCMSRs
	skipped []string // "name: reason"
}

// pmuNow is the run's PMU: not programmed until startPMU.
var pmuNow = pmuState{reason: "not programmed (no benchmark has run)"}

// startPMU programs the counters for the plan on c (cpustate.Hardware on
// the machine) and prints a line of it; where the PMU's MSRs were saved,
// it writes their pmu-firmware record first, with a warning line when the
// firmware left a counter enabled. It runs once, before the first
// benchmark of either world. In a test image (pmuTSCStandIn), a PMU that
// cannot count gives way to the IA32_TSC stand-in.
func startPMU(r *Reporter, plan Plan, c pmu.CPU) {
	line, fw := programPMU(plan, c)
	if pmuTSCStandIn && plan.PMU && !pmuNow.on {
		pmuNow = tscStandIn()
		pmuNow.nameToSampleCalls()
		line += "; " + pmuStandInNote
	}
	if fw != nil {
		if len(fw.InUse) > 0 {
			r.Printf("ptilab: PMU: WARNING: the firmware left performance counters enabled (%s): ptilab takes them for the run and gives every MSR back its value at the end; a Linux booted after this firmware alone would log \"the BIOS has corrupted hw-PMU resources\"", strings.Join(fw.InUse, "; "))
		}
		r.Record(*fw)
	}
	r.Printf("%s", line)
}

// programPMU is startPMU's work on a CPU: pmuNow counting, or why not,
// and the line of it; and the pmu-firmware record of the MSRs it saved
// (nil when it saved none).
func programPMU(plan Plan, c pmu.CPU) (line string, fw *contract.PMUFirmware) {
	st := pmuState{}
	defer func() { pmuNow = st }()
	if !plan.PMU {
		st.reason = "off in the plan (pmu = off)"
		return "ptilab: PMU: unsupported: " + st.reason, nil
	}
	caps := pmu.Detect(c)
	if !caps.Supported() {
		st.reason = caps.Unsupported
		return "ptilab: PMU: unsupported: " + st.reason, nil
	}
	var events []pmu.Event
	sig := pmu.ReadSignature(c)
	if m, why := pmu.ModelFor(sig); m == nil {
		for _, n := range plan.PMUEvents {
			st.skipped = append(st.skipped, n+": "+why)
		}
	} else {
		var unknown []string
		events, unknown = m.Lookup(plan.PMUEvents)
		for _, n := range unknown {
			st.skipped = append(st.skipped, n+": not in the "+m.Name+" table")
		}
	}
	if len(events) > cpustate.SampleGP {
		for _, e := range events[cpustate.SampleGP:] {
			st.skipped = append(st.skipped, fmt.Sprintf("%s: the sample call reads at most %d programmable counters", e.Name, cpustate.SampleGP))
		}
		events = events[:cpustate.SampleGP]
	}
	sess, skipped := pmu.NewSession(caps, events)
	for _, s := range skipped {
		st.skipped = append(st.skipped, s.Name+": "+s.Reason)
	}
	mark := cpustate.Saved.Len()
	msr, op := sess.Start(c, &cpustate.Saved)
	if cpustate.Saved.Len() > mark {
		fw = &contract.PMUFirmware{InUse: pmu.InUse(c, caps, &cpustate.Saved), MSRs: []contract.FirmwareMSR{}}
	}
	if msr != 0 {
		st.reason = fmt.Sprintf("CPUID.0AH lists architectural performance monitoring version %d, but %s %#x raised #GP", caps.Version, op, msr)
		return "ptilab: PMU: unsupported: " + st.reason, firmwareMSRs(fw, mark)
	}
	st.on, st.sess = true, sess
	freeze := "not frozen in SMM: version 1 has no IA32_PERF_GLOBAL_CTRL, whose enable bits FREEZE_WHILE_SMM clears"
	if caps.Global() {
		freeze = "not frozen in SMM"
		var why string
		if st.frozen, why = pmu.FreezeWhileSMM(c, &cpustate.Saved); st.frozen {
			freeze = "frozen in SMM (IA32_DEBUGCTL.FREEZE_WHILE_SMM)"
		} else {
			freeze += ": " + why
		}
	}
	var counted []string
	for j := 0; j < pmu.NumFixed; j++ {
		if sess.Fixed(j) {
			st.names[j], st.msrs[j] = pmuFixedNames[j], amd64.MSR_IA32_FIXED_CTR0+uint32(j)
			counted = append(counted, pmuFixedNames[j])
		}
	}
	for i, n := range sess.Events() {
		st.names[pmu.NumFixed+i], st.msrs[pmu.NumFixed+i] = n, amd64.MSR_IA32_PMC0+uint32(i)
		counted = append(counted, n)
	}
	st.nameToSampleCalls()
	line = fmt.Sprintf("ptilab: PMU: version %d, CPU %s: counting %s; %s", caps.Version, sig, strings.Join(counted, ", "), freeze)
	if len(st.skipped) > 0 {
		line += "; not counted: " + strings.Join(st.skipped, "; ")
	}
	return line, firmwareMSRs(fw, mark)
}

// firmwareMSRs fills fw (when not nil) with the MSRs saved in
// cpustate.Saved from index mark on: the PMU's, with the firmware's
// values.
func firmwareMSRs(fw *contract.PMUFirmware, mark int) *contract.PMUFirmware {
	if fw == nil {
		return nil
	}
	for _, e := range cpustate.Saved.Entries()[mark:] {
		fw.MSRs = append(fw.MSRs, contract.FirmwareMSR{Name: e.Name, MSR: fmt.Sprintf("%#x", e.MSR), Value: fmt.Sprintf("%#x", e.Value)})
	}
	return fw
}

// nameToSampleCalls names the counters' MSRs to both worlds' sample
// calls.
func (st *pmuState) nameToSampleCalls() {
	pti.SetSamplePMCs(st.msrs)
	pti.SetSampling(counters | cpustate.SamplePMU)
	i386pae.SetSamplePMCs(st.msrs)
	i386pae.SetSampling(counters | cpustate.SamplePMU)
}

// stopPMU stops the counters startPMU started and takes them from the
// sample call. Their MSRs get the firmware's values back with the rest
// of cpustate.Saved (RestoreMSRs).
func stopPMU(c pmu.CPU) {
	if pmuNow.on {
		if !pmuNow.standIn {
			pmuNow.sess.Stop(c, nil)
		}
		pti.SetSampling(counters)
		pti.SetSamplePMCs(cpustate.SamplePMCMSRs{})
		i386pae.SetSampling(counters)
		i386pae.SetSamplePMCs(cpustate.SamplePMCMSRs{})
	}
	pmuNow = pmuState{reason: "stopped"}
}

// pmuPerOp is the counts per operation of a figure's measured repeats of
// ops operations each, from their deltas (cpustate.Delta, one per
// repeat), each counter's delta masked to its width (pmu.Session.Sub);
// nil when nothing counts or nothing was sampled per repeat.
func (st *pmuState) perOp(deltas []cpustate.Sample, ops int, sampled string) map[string]float64 {
	if !st.on || sampled != SampledRepeat || len(deltas) == 0 || ops <= 0 {
		return nil
	}
	var sum [cpustate.SamplePMCs]uint64
	for _, d := range deltas {
		for i, v := range st.counts(d.PMC) {
			sum[i] += v
		}
	}
	out := map[string]float64{}
	all := float64(ops * len(deltas))
	for i, n := range st.names {
		if n != "" {
			out[n] = Round(float64(sum[i]) / all)
		}
	}
	return out
}

// counts are a delta's counters (Sample.PMC, by slot) masked to their
// widths (pmu.Session.Sub).
func (st *pmuState) counts(pmc [cpustate.SamplePMCs]uint64) (out [cpustate.SamplePMCs]uint64) {
	var end pmu.Sample
	copy(end.Fixed[:], pmc[:pmu.NumFixed])
	copy(end.GP[:], pmc[pmu.NumFixed:])
	c := st.sess.Sub(&end, &pmu.Sample{})
	copy(out[:pmu.NumFixed], c.Fixed[:])
	copy(out[pmu.NumFixed:], c.GP[:cpustate.SampleGP])
	return out
}

// record is the record form of a figure's per-operation counts (in
// either world: both sample calls read the counters).
func (st *pmuState) record(perOp map[string]float64) *contract.PMUCounts {
	switch {
	case !st.on:
		return &contract.PMUCounts{Unsupported: st.reason}
	case perOp == nil:
		return &contract.PMUCounts{Unsupported: "not sampled around every repeat", Skipped: st.skipped}
	}
	return &contract.PMUCounts{PerOp: perOp, Skipped: st.skipped}
}

// PMUCPU is the CPU the counters are programmed on: the hardware; the
// host tests of the engine set a CPU without a PMU (cpustatetest.CPU),
// as the host has no WRMSR.
var PMUCPU pmu.CPU = cpustate.Hardware{}
