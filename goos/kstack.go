package goos

import "unsafe"

// Kernel stacks. Kernel code is ordinary Go compiled by the stock compiler,
// so every function begins by comparing SP with the stack guard of the g in
// R14 (the Go internal ABI's g register). Kernel code runs under kernelG, a
// g with nothing but stack bounds: its ABI0 entry wrappers load R14 from
// -8(FS) (the ELF TLS slot of g), so the entry code points the FS base at
// kernelTLS, whose first word holds kernelG's address.
//
// All kernel stacks sit in one region, so that the one kernelG covers them;
// each is preceded by an unmapped guard page once the kernel's page tables
// are live, so that an overflow faults instead of running into the next.
//
// Layout, from low to high (each stack preceded by a guard page):
//
//	IST1 exceptions  32 KiB   every exception but #DF, NMI and #MC
//	IST2 #DF         16 KiB
//	IST3 NMI         16 KiB
//	IST4 #MC         16 KiB
//	kernel           64 KiB   the boot code and the system-call handler
const (
	guardSize     = 4096
	istExcSize    = 32 << 10
	istDFSize     = 16 << 10
	istNMISize    = 16 << 10
	istMCSize     = 16 << 10
	kernelStackSz = 64 << 10

	istExcTop = guardSize + istExcSize
	istDFTop  = istExcTop + guardSize + istDFSize
	istNMITop = istDFTop + guardSize + istNMISize
	istMCTop  = istNMITop + guardSize + istMCSize

	kstackRegionSize = istMCTop + guardSize + kernelStackSz

	// kstackGuard is where kernelG's stack guard sits above the region's
	// base: the lowest stack starts above the first guard page.
	kstackGuard = guardSize
)

// guardOffsets are the offsets of the guard pages in the region.
var guardOffsets = [...]uint64{0, istExcTop, istDFTop, istNMITop, istMCTop}

// kstackRegion holds the kernel stacks; the entry code page-aligns its
// start into kstackBase.
var kstackRegion [kstackRegionSize + 4096]byte

var (
	kstackBase uint64 // page-aligned start of the stacks
	kstackTop  uint64 // top of the kernel stack: kstackBase + kstackRegionSize
)

// kernelG stands for the runtime's g while kernel code runs: stack.lo,
// stack.hi, stackguard0, stackguard1 (runtime/runtime2.go); the rest is
// zero. The entry code fills it.
var kernelG [32]uint64

// kernelTLS is the FS-based TLS block of kernel code: kernelTLS[0] holds
// &kernelG and the FS base is &kernelTLS[1].
var kernelTLS [2]uint64

// kernelFS is the FS base kernel code runs with: &kernelTLS[1].
var kernelFS uint64

func addr[T any](p *T) uint64 { return uint64(uintptr(unsafe.Pointer(p))) }

// KernelContext returns what other kernel code needs to run Go under
// kernelG: the top of the kernel stack and the FS base whose -8 slot holds
// kernelG's address. The ring-3 tasks' kernel (package tasks) runs its Go
// system-call handlers there while a task runs: the Go program is then
// suspended in pti's enterUser, off the kernel stack.
func KernelContext() (stackTop, fsBase uint64) { return kstackTop, kernelFS }
