package main

import (
	"fmt"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/goos"
)

// runBenchmarks runs the plan's benchmarks (bench's registry, which
// package bench/all fills) with the
// clock of this machine: the TSC's frequency and source, whether its
// figures are emulated and by which emulator (QEMU's TCG, Bochs), and
// whether the TSC counts instructions (QEMU -icount, Bochs); with the
// core-clock and SMI counters read around every repeat, the P-state the
// plan's pstate asks for and, once the clock has settled, the
// disturbance baseline; and every MSR the run wrote (the P-state request,
// the PMU's) given back its value from before at the end.
func runBenchmarks(r *bench.Reporter, plan bench.Plan, power cpustate.Power) {
	info := goos.MachineInfo()
	clk := bench.Clock{Hz: info.TSCHz, Source: info.TSCSource, Emulator: info.Emulator, Icount: board.Icount()}
	if ucode, ok := microcode(info); ok {
		clk.Microcode = fmt.Sprintf("%#x", ucode)
	}
	if len(plan.Benchmarks) == 0 {
		return
	}
	bench.SetCounters(power.Sources())
	bench.SetPState(r, plan.PState, power, cpustate.Hardware{}, clk.Hz)
	bench.RunBaseline(r, plan, clk)
	bench.RunPlan(r, plan, clk)
	bench.RestoreMSRs(r, cpustate.Hardware{})
}
