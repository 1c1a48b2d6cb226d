package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/linuxabi"
)

// excFrame is what excCommon builds on the IST stack: the general
// registers, the vector and error code, and the frame the CPU pushed (SDM
// Vol. 3A, 6.14.2, Figure 6-9).
type excFrame struct {
	R15, R14, R13, R12, BP, BX, R11, R10, R9, R8 uint64
	AX, CX, DX, SI, DI                           uint64
	Vector, Error                                uint64
	IP, CS, Flags, SP, SS                        uint64
}

// Fault is the record of a fatal CPU exception.
type Fault struct {
	Vector, ErrorCode, IP, CR2, SP uint64
	InKernel                       bool // the exception hit kernel code (boot, the system-call handler, an exception handler)
}

var (
	excDepth  int   // exception handlers under way (nesting means a fault in the handler)
	faults    int   // fatal exceptions so far
	lastFault Fault // the most recent one
	goReady   bool  // the Go program can take a fault as a panic (see Ready)
)

// ELFLinkBase is the address the image is linked at: its first PT_LOAD,
// 4 KiB below the text address host/image gives the linker. A RIP in
// the loaded image maps back to the ELF file as RIP - ImageBase +
// ELFLinkBase.
const ELFLinkBase = 0x80000000

// handleException is called by excCommon for every CPU exception. It
// resolves what it can (a first touch of a committed page, the probe of an
// MSR the CPU lacks) and otherwise reports the fault.
func handleException(f *excFrame) {
	stats.exceptions++
	excDepth++
	switch f.Vector {
	case amd64.VectorPF:
		if excDepth == 1 && f.Error&(amd64.PF_P|amd64.PF_RSVD) == 0 {
			if backPage(amd64.CR2(), f.Error&amd64.PF_W != 0) {
				excDepth--
				return
			}
			if pool.exhausted {
				outOfMemory(f)
			}
		}
	case amd64.VectorGP:
		if inImage(f.IP) && inImage(f.IP+1) {
			if rip, ok := amd64.SafeMSRFixup(uintptr(f.IP), efi.Read8(f.IP), efi.Read8(f.IP+1)); ok {
				f.IP = uint64(rip)
				f.R8 = 1
				excDepth--
				return
			}
		}
	case amd64.VectorNMI:
		// The IDT sends NMIs to amd64's handler, not here; counted all the
		// same, never printed (the console may be mid-line).
		amd64.AddNMIs(1)
		excDepth--
		return
	}
	fatalException(f)
	excDepth--
}

// outOfMemory ends the run when a committed page cannot get a frame: the
// frame pool is used up. Nothing can continue: the Go runtime would need
// memory to print a panic.
func outOfMemory(f *excFrame) {
	var l kline
	l.serialOnly = excDepth > 1
	l.s("ptilab: out of memory: the kernel's frame pool (").udec(pool.total*pageSize>>20).
		s(" MiB) is used up; the runtime touched ").hex(amd64.CR2(), 0).s(" at RIP ").hex(f.IP, 0).
		s(". Give the machine more RAM (QEMU: -m 256M at least).").flush()
	l.s(contract.RecordTag).s(` {"kind":"oom","pool_bytes":`).udec(pool.total*pageSize).s(`,"address":"`).hex(amd64.CR2(), 0).s(`"}`).flush()
	endRun(exitOOM, "out of memory")
}

func inImage(va uint64) bool {
	return va >= efi.Firmware.ImageBase && va < efi.Firmware.ImageBase+efi.Firmware.ImageSize
}

// fatalException dumps the fault. A fault in Go code, once the program is
// ready, continues as a Go panic in the faulting goroutine (the runtime
// prints its traceback and exits, like sigpanic on Linux); anywhere else
// the run ends with the fault status. A fault in ring 0 inside a function
// that switches stacks or worlds (spWrite: e.g. pti's enterUser, which
// loads a task's CR3 and CR4 before it leaves the Go world) is a kernel
// fault: the runtime could not unwind through that frame, and the machine
// is not in the Go world's state.
func fatalException(f *excFrame) {
	faults++
	inKernel := kernelDepth > 0 || excDepth > 1 || f.CS == kernelCS && spWrite(f.IP)
	lastFault = Fault{Vector: f.Vector, ErrorCode: f.Error, IP: f.IP, CR2: amd64.CR2(), SP: f.SP, InKernel: inKernel}
	dumpFault(f, inKernel)
	if !inKernel && goReady && faults == 1 && f.CS == kernelCS {
		// Resume in faultPanic as if the faulting instruction had called
		// it, as Linux's Go runtime does for a signal (sigctxt.preparePanic):
		// where the fault is in the image's code, push RIP+1 as the return
		// address (the unwinder looks up the instruction before a return
		// address, so +1 names the faulting one). Elsewhere (a jump to a
		// bad address) the return address on the stack already names the
		// caller.
		if inImage(f.IP) {
			sp := f.SP - 8
			// The slot must be backed now: a page fault here would nest.
			if !(sp >= vm.lo && backPage(sp, true) || sp < vm.lo && userRange(sp, 8, true)) {
				endRun(exitFault, "fault")
			}
			store64(sp, f.IP+1)
			f.SP = sp
		}
		f.IP = faultPanicPC()
		return
	}
	endRun(exitFault, "fault")
}

func dumpFault(f *excFrame, inKernel bool) {
	var l kline
	// #DF and #MC can interrupt anything, the firmware gate included, which
	// the display output would re-enter: they print to COM1 only.
	l.serialOnly = f.Vector == amd64.VectorDF || f.Vector == amd64.VectorMC || excDepth > 1
	where := "Go code"
	if inKernel {
		where = "kernel"
	}
	cr2 := amd64.CR2()
	l.s(contract.FaultTag).s(" ").s(amd64.VectorName(f.Vector)).s(" in ").s(where).s(", error ").hex(f.Error, 0)
	if f.Vector == amd64.VectorPF {
		l.s(" [")
		if f.Error&amd64.PF_P != 0 {
			l.s("protection")
		} else {
			l.s("not present")
		}
		if f.Error&amd64.PF_W != 0 {
			l.s(", write")
		} else {
			l.s(", read")
		}
		if f.Error&amd64.PF_I != 0 {
			l.s(", fetch")
		}
		if f.Error&amd64.PF_U != 0 {
			l.s(", user")
		}
		l.s("]")
	}
	l.flush()
	l.s("  RIP ").hex(f.IP, 16)
	if inImage(f.IP) {
		l.s(" (ELF ").hex(f.IP-efi.Firmware.ImageBase+ELFLinkBase, 0).s(")")
	}
	l.s("  CS ").hex(f.CS, 2).s("  RFLAGS ").hex(f.Flags, 8).flush()
	l.s("  RSP ").hex(f.SP, 16).s("  SS ").hex(f.SS, 2).s("  CR2 ").hex(cr2, 16).s("  CR3 ").hex(amd64.CR3(), 0).flush()
	l.s("  RAX ").hex(f.AX, 16).s("  RBX ").hex(f.BX, 16).s("  RCX ").hex(f.CX, 16).flush()
	l.s("  RDX ").hex(f.DX, 16).s("  RSI ").hex(f.SI, 16).s("  RDI ").hex(f.DI, 16).flush()
	l.s("  RBP ").hex(f.BP, 16).s("  R8  ").hex(f.R8, 16).s("  R9  ").hex(f.R9, 16).flush()
	l.s("  R10 ").hex(f.R10, 16).s("  R11 ").hex(f.R11, 16).s("  R12 ").hex(f.R12, 16).flush()
	l.s("  R13 ").hex(f.R13, 16).s("  R14 ").hex(f.R14, 16).s("  R15 ").hex(f.R15, 16).flush()
	if inKernel {
		kernelBacktrace(f, &l)
	}
	l.s(contract.RecordTag).s(` {"kind":"fault","vector":`).udec(f.Vector).s(`,"name":"`).s(amd64.VectorName(f.Vector)).
		s(`","error":`).udec(f.Error).s(`,"rip":"`).hex(f.IP, 0).s(`"`)
	if f.Vector == amd64.VectorPF {
		l.s(`,"cr2":"`).hex(cr2, 0).s(`"`)
	}
	l.s(`,"in":"`).s(where).s(`"`)
	if inImage(f.IP) {
		l.s(`,"elf_rip":"`).hex(f.IP-efi.Firmware.ImageBase+ELFLinkBase, 0).s(`"`)
	}
	l.s("}").flush()
}

// Deliberate kernel faults: what ptilab's system call
// linuxabi.SYS_ptilab_fault does, for the tests of that path (plan key
// fault = kernel-pf or kernel-gp).
const (
	KernelPageFault    = 1 // read page 0, never mapped
	KernelGeneralFault = 2 // read a non-canonical address
)

// KernelFault asks the kernel to fault in kernel mode: the run ends with
// the register dump and the fault status; it does not return.
func KernelFault(kind uint64) {
	rawSyscall(linuxabi.SYS_ptilab_fault, kind)
}

func sysFault(r *PtRegs) int64 {
	switch r.DI {
	case KernelPageFault:
		amd64.Load(0x10)
	case KernelGeneralFault:
		amd64.Load(0x8000000000000000)
	}
	return -linuxabi.EINVAL
}

// chainSpan bounds the frame-pointer chain of a fault off the kernel
// stacks: it is followed up to this far above the faulting RSP.
const chainSpan = 1 << 20

// kernelBacktrace prints the return addresses on the faulting stack by
// following the frame-pointer chain from f's RBP (Go on amd64 keeps frame
// pointers: 0(BP) is the caller's BP, 8(BP) the return address), as ELF
// addresses for addr2line. On the kernel stacks it stays within them;
// elsewhere (a fault in a stack-switching routine called from a goroutine)
// within chainSpan above RSP, each frame above the last.
func kernelBacktrace(f *excFrame, l *kline) {
	lo, hi := kstackBase, kstackTop
	if f.SP < lo || f.SP >= hi {
		lo, hi = f.SP, f.SP+chainSpan
	}
	l.s("  kernel call chain (ELF):")
	for n, bp := 0, f.BP; n < 16 && bp >= lo && bp+16 <= hi && bp%8 == 0; n++ {
		ret := load64(bp + 8)
		if !inImage(ret) {
			break
		}
		l.s(" ").hex(ret-efi.Firmware.ImageBase+ELFLinkBase, 0)
		lo, bp = bp+16, load64(bp)
	}
	l.flush()
}

// faultPanic runs in the goroutine that took a fatal CPU exception, as if
// the faulting instruction had called it: it panics, so that the runtime
// prints the goroutine's traceback through the faulting function and exits
// with status 2 (the run then ends with the fault status).
func faultPanic() {
	panic(FaultError(lastFault))
}

// FaultError is the panic value of a CPU exception in Go code.
type FaultError Fault

func (e FaultError) Error() string {
	var l kline
	l.s("ptilab: CPU exception ").s(amd64.VectorName(e.Vector)).s(", error ").hex(e.ErrorCode, 0).
		s(" at RIP ").hex(e.IP, 0).s(", CR2 ").hex(e.CR2, 0)
	return string(l.b[:l.n])
}
