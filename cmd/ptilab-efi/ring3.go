package main

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/goos"
)

// runBenchmarks runs the plan's benchmarks (bench.Registry) with the
// clock of this machine: the TSC's frequency and source, and whether its
// figures are emulated (QEMU's TCG) or count instructions (QEMU -icount).
func runBenchmarks(r *bench.Reporter, plan bench.Plan) {
	info := goos.MachineInfo()
	clk := bench.Clock{Hz: info.TSCHz, Source: info.TSCSource, Emulated: amd64.Features.HypervisorVendor() == "TCGTCGTCGTCG", Icount: board.Icount()}
	bench.RunPlan(r, plan, clk)
}
