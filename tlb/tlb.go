// Package tlb holds ptilab's TLB mechanism: the flush loops the flush-cost
// table times (FlushLoop, FlushCost). The benchmarks of package bench
// register, repeat and report it; what they build, run and decide is
// here.
//
// It imports the CPU primitives (amd64), never pti or bench. The manual
// references are to the Intel SDM.
package tlb
