package main

import (
	"slices"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/i386pae"
	"github.com/ptilab/ptilab/pti"
)

// runBenchmarks runs the plan's ring-3 benchmarks, in the plan's order.
func runBenchmarks(r *bench.Reporter, plan bench.Plan) {
	if len(plan.Benchmarks) == 0 {
		return
	}
	if err := pti.Setup(); err != nil {
		r.Error("ring3 setup", map[string]any{"error": err.Error()})
		r.Printf("ptilab: %v", err)
		return
	}
	lfence := amd64.SerializeLFENCE()
	r.Printf("ptilab: LFENCE serializing: %s", lfence)
	info := goos.MachineInfo()
	clk := bench.Clock{Hz: info.TSCHz, Source: info.TSCSource, Emulated: info.Emulator != "", Icount: board.Icount()}
	r.Record("timing", map[string]any{"lfence": lfence, "tsc_hz": clk.Hz, "tsc_source": clk.Source,
		"tsc_invariant": amd64.Features.InvariantTSC, "rdtscp": amd64.Features.RDTSCP, "emulated": clk.Emulated, "icount": clk.Icount})
	var null64 []bench.Measurement
	var null32 []bench.Measurement32
	var msg64, msg32 []bench.Messaging
	for _, b := range plan.Benchmarks {
		switch b {
		case "null":
			null64 = bench.NullSyscall(r, plan.Syscall, clk)
		case "work":
			bench.WorkCurve(r, plan.Syscall, clk)
		case "lseek":
			bench.Lseek(r, plan.Syscall, clk)
		case "pingpong":
			bench.PingPongTable(r, plan.PingPong(), clk)
		case "messaging":
			msg64 = bench.MessagingTable(r, plan.Messaging(), clk)
		case "null32":
			if setup32(r) {
				null32 = bench.NullSyscall32(r, plan.Syscall, clk)
				if slices.Contains(plan.Syscall.Flavours, pti.Linux) {
					bench.CopyMethods32(r, plan.Syscall, clk, null32)
				}
			}
		case "work32":
			if setup32(r) {
				bench.WorkCurve32(r, plan.Syscall, clk)
			}
		case "lseek32":
			if setup32(r) {
				bench.Lseek32(r, plan.Syscall, clk)
			}
		case "pingpong32":
			if setup32(r) {
				bench.PingPongTable32(r, plan.PingPong(), clk)
			}
		case "messaging32":
			if setup32(r) {
				msg32 = bench.MessagingTable32(r, plan.Messaging(), clk)
				bench.MessagingPhases32(r, plan.Messaging(), clk)
			}
		case "probe32":
			if setup32(r) {
				bench.Probe32(r, 100)
			}
		case "deadlock":
			bench.Deadlock(r)
		case "probe":
			modes := plan.Syscall.Modes
			if !slices.Contains(modes, pti.On) {
				modes = append(modes, pti.On)
			}
			bench.IsolationProbe(r, modes, []bench.ProbeTarget{
				{Name: "kernel text", Address: efi.Firmware.ImageBase + 0x1000},
				{Name: "entry area", Address: pti.EntryData},
				{Name: "own page", Address: pti.UserData},
			})
		}
	}
	if null64 != nil && null32 != nil {
		bench.SeedNull(r, null64, null32, clk)
	}
	if msg64 != nil && msg32 != nil {
		bench.SeedMessaging(r, msg64, msg32, clk)
	}
}

// setup32 sets up the 32-bit world the first time a benchmark needs it and
// reports whether it is ready.
func setup32(r *bench.Reporter) bool {
	if err := i386pae.Setup(); err != nil {
		r.Error("32-bit setup", map[string]any{"error": err.Error()})
		r.Printf("ptilab: %v", err)
		return false
	}
	return true
}
