package main

import (
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/goos"
)

// runBenchmarks runs the plan's benchmarks (bench.Registry) with the
// clock of this machine: the TSC's frequency and source, whether its
// figures are emulated and by which emulator (QEMU's TCG, Bochs), and
// whether the TSC counts instructions (QEMU -icount, Bochs).
func runBenchmarks(r *bench.Reporter, plan bench.Plan) {
	info := goos.MachineInfo()
	clk := bench.Clock{Hz: info.TSCHz, Source: info.TSCSource, Emulator: info.Emulator, Icount: board.Icount()}
	bench.RunPlan(r, plan, clk)
}
