// Package tlb holds ptilab's TLB mechanism: the flush loops the flush-cost
// table times (FlushLoop, FlushCost), the CR3 retention probe
// (CR3Retention, RetentionProbe), and the working-set sweep's regions,
// block and mapping (MapSweep). The benchmarks of package bench register,
// repeat and report them; what they build, run and decide is here.
//
// It imports the CPU primitives (amd64) and the kernel's frames (goos),
// never pti or bench: pti imports it for the sweep's regions. The manual
// references are to the Intel SDM.
package tlb
