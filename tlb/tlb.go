// Package tlb holds ptilab's TLB mechanism: the flush loops the flush-cost
// table times (FlushLoop, FlushCost), the CR3 retention probe
// (CR3Retention, RetentionProbe), the working-set sweep's regions, block
// and mapping (MapSweep), and the kernel text as global pages
// (KernelText). The benchmarks of package bench register, repeat and
// report them; what they build, run and decide is here.
//
// It imports the CPU primitives (amd64), the kernel's tables and frames
// (goos) and the image's sections (efi), never pti or bench: pti imports
// it for the sweep's regions and the global kernel text. The manual
// references are to the Intel SDM.
package tlb
