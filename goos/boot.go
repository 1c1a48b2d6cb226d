// Package goos is the bare-metal personality that lets the stock Go runtime
// run in ring 0: the image's entry point, the kernel's address space and
// physical memory, descriptor tables and exception handlers, and a handler
// for the Linux system calls the runtime makes (memory, threads, time,
// console, files on the boot volume, exit).
//
// The runtime is a GOOS=linux GOARCH=amd64 program. boot prepares the
// machine and returns a Linux-shaped initial process stack; the entry code
// then jumps to the runtime's own _rt0_amd64_linux. From there on the
// runtime believes it is a Linux process, and each SYSCALL it issues lands
// in syscallEntry (LSTAR).
//
// Kernel code (boot, the handlers) is Go that runs on kernel stacks under
// kernelG (see kstack.go). It must not allocate or store heap pointers: the
// runtime's allocator and write barriers need a real g and m. A test on
// the built image checks that no kernel function calls the allocator or a
// write barrier.
package goos

import (
	"github.com/ptilab/ptilab/linuxabi"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/efi"
)

// amd64's selectors, MSR numbers and error-code vectors as local
// constants, for the assembly (go_asm.h).
const (
	kernelCS             = amd64.KERNEL_CS
	kernelDS             = amd64.KERNEL_DS
	msrFSBase            = amd64.MSR_FS_BASE
	vectorsWithErrorCode = amd64.VectorsWithErrorCode
)

// XState is what boot did with the firmware's XSAVE state (SDM Vol. 1,
// 13.3): XCR0 is the firmware's XCR0, 0 when it left CR4.OSXSAVE clear;
// Init says whether boot put the XSAVE-managed state in its initial
// configuration before clearing CR4.OSXSAVE (it does when the firmware
// had OSXSAVE set on a CPU with AVX: amd64.InitXState). The rest of the
// firmware's state at entry is efi.Entry.
type XState struct {
	XCR0 uint64
	Init bool
}

var fwXState XState

// FirmwareXState returns what boot found and did with the firmware's
// XSAVE state.
func FirmwareXState() XState { return fwXState }

var fwCPUIDLimit amd64.CPUIDLimit

// FirmwareCPUIDLimit returns what boot found and did with the
// firmware's CPUID limit (IA32_MISC_ENABLE[22], amd64.UnlockCPUID).
func FirmwareCPUIDLimit() amd64.CPUIDLimit { return fwCPUIDLimit }

var (
	memmap  efi.MemoryMap
	bootMem struct {
		ram, free, top uint64 // bytes of RAM, free RAM, end of the highest range (memory map at boot)
		claimed        uint64 // bytes taken for the frame pool
		reserve        uint64 // bytes left to the firmware
	}
	// The runtime's main-thread stack, with a guard page at rtStackBase.
	rtStackBase, rtStackTop uint64
)

const rtStackPages = 65 // 256 KiB and a guard page; rt0 takes 64 KiB as g0's stack

// boot prepares the machine for the Go runtime and returns the initial
// stack pointer for _rt0_amd64_linux. It runs on the kernel stack, on the
// firmware's page tables at first, and ends the run itself if it fails.
func boot() uint64 {
	clock.entryTSC = amd64.RDTSC()
	kernelDepth = 1
	efi.SetKernelStack(uintptr(kstackBase), uintptr(kstackTop))
	efi.CountFirmwareNMIs()
	board.InitSerial()
	kprint("ptilab: booting")
	reportSerial()
	if bit := amd64.RefusedCR4(efi.Entry.CR4); bit != "" {
		var l kline
		l.s("ptilab: boot failed: the firmware left ").s(bit).s(" set (CR4 ").hex(efi.Entry.CR4, 1).
			s("); ptilab builds 4-level page tables and runs without control-flow enforcement, and does not support it").flush()
		endRun(exitBoot, "boot")
	}
	if s := efi.Init(); s.Error() {
		bootFail("reading the firmware's tables", s)
	}
	initSPCR()
	amd64.DetectFeatures()
	board.Detect()
	efi.FindScreens()
	if s := efi.InitBounce(); s.Error() {
		bootFail("allocating the bounce buffer", s)
	}
	base, s := efi.AllocatePages(efi.AllocateAnyPages, rtStackPages, 0)
	if s.Error() {
		bootFail("allocating the runtime's stack", s)
	}
	rtStackBase, rtStackTop = base, base+rtStackPages*pageSize
	if s := claimMemory(); s.Error() {
		bootFail("claiming memory", s)
	}
	if !buildKernelPT() {
		bootFail("building the kernel page tables", efi.OutOfResources)
	}
	setupCPU()
	// The firmware's CPUID limit (IA32_MISC_ENABLE[22]) hides the leaves
	// above 2. It is cleared here, where ptilab's IDT makes a #GP of the
	// MSR access survivable (under the firmware's IDT at the entry point a
	// #GP would go to the firmware's handler), and early enough: nothing
	// before reads a leaf above 2 (DetectFeatures read the vendor and
	// leaf 1, the rest uses leaf 1 and the extended leaves), the TSC's
	// frequency (CPUID 15H) is read below, and the Go runtime reads CPUID
	// (rt0_go, internal/cpu) only after boot returns and the entry code
	// jumps to _rt0_amd64_linux. Features are read again where it was set.
	// The Go world puts IA32_MISC_ENABLE into the registry of MSRs given
	// back at the end where this cleared the limit
	// (cpustate.SavedMSRs.SaveCPUIDLimit): the registry is not kernel
	// code.
	fwCPUIDLimit = amd64.UnlockCPUID()
	amd64.SetCR3(kernelPT.Root)
	clearPCIDE()
	dropFirmwareGlobals()
	if !initClock() {
		clockFailed()
		endRun(exitBoot, "boot")
	}
	initThreads()
	initFDs()
	sp := initialStack()
	kernelDepth = 0
	clock.runtimeTSC = amd64.RDTSC()
	return sp
}

// initSPCR adds the UART the ACPI SPCR table names to the serial console
// and says so, or says why not, when there is such a table.
func initSPCR() {
	p, why := board.InitSPCR()
	if why == "no SPCR table" {
		return
	}
	var l kline
	l.s("ptilab: ACPI SPCR table: ")
	if why != "" {
		l.s("its UART is not used: ").s(why)
	} else {
		l.uart(p)
	}
	l.flush()
}

// reportSerial says which serial consoles InitSerial found beyond COM1:
// COM2, and each 16550-compatible serial controller on PCI, used or why
// not.
func reportSerial() {
	for _, p := range board.SerialPorts() {
		if p.COM == 2 {
			var l kline
			l.s("ptilab: COM2: ").uart(p).flush()
		}
	}
	for _, u := range board.PCISerial() {
		f := u.Port.PCI
		var l kline
		l.s("ptilab: PCI ").xdigits(uint64(f.Bus), 2).s(":").xdigits(uint64(f.Device), 2).s(".").xdigits(uint64(f.Function), 1).
			s(" ").xdigits(uint64(f.VendorID), 4).s(":").xdigits(uint64(f.DeviceID), 4).
			s(" serial controller (programming interface ").xdigits(uint64(f.ProgIF), 2).s("h), BAR ").udec(uint64(f.BAR)).s(": ")
		if u.Why != board.PCIUsable {
			l.s("not used: ").s(u.Why.String()).flush()
			continue
		}
		l.uart(u.Port)
		if u.Port.DecodeTurnedOn() {
			l.s("; its decode was off: turned on for the run")
		}
		l.flush()
	}
}

// uart appends where the serial console p is and its baud rate.
func (l *kline) uart(p board.Port) *kline {
	if p.MMIO {
		l.s("serial console on the 16550 at memory ").hex(p.Base, 0).s(", ").udec(uint64(p.Width)).s("-byte registers")
	} else {
		l.s("serial console on the 16550 at I/O port ").hex(p.Base, 0)
	}
	if p.Baud != 0 {
		return l.s(", ").udec(uint64(p.Baud)).s(" baud")
	}
	l.s(", baud rate as the firmware set it")
	if p.SPCRBaud != 0 {
		l.s(" (the table names ").udec(uint64(p.SPCRBaud)).s(" baud but no input clock)")
	}
	return l
}

func bootFail(what string, s efi.Status) {
	var l kline
	l.s("ptilab: boot failed ").s(what).s(": ").s(s.String()).flush()
	endRun(exitBoot, "boot")
}

// claimMemory takes most of the firmware's free memory for the frame pool,
// from the highest addresses down, and leaves a reserve (1/16 of it,
// between 8 and 64 MiB, at the lowest addresses) to the firmware, which
// needs memory below 4 GiB for its own work (disk I/O, file buffers).
func claimMemory() efi.Status {
	if s := memmap.Read(); s.Error() {
		return s
	}
	bootMem.ram, bootMem.free, bootMem.top = memmap.Totals()
	reserve := min(max(bootMem.free/16, 8<<20), 64<<20)
	if reserve > bootMem.free/2 {
		reserve = bootMem.free / 2
	}
	bootMem.reserve = reserve
	budget := (bootMem.free - reserve) >> efi.PageShift

	// Conventional ranges, highest first.
	var idx [256]int
	n := 0
	for i := 0; i < memmap.Len() && n < len(idx); i++ {
		if memmap.At(i).Type == efi.ConventionalMemory {
			idx[n] = i
			n++
		}
	}
	for i := 1; i < n; i++ {
		for j := i; j > 0 && memmap.At(idx[j]).PhysicalStart > memmap.At(idx[j-1]).PhysicalStart; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	const minClaim = 16 // pages: smaller ranges are not worth a claim
	for k := 0; k < n && budget >= minClaim && pool.n < len(pool.region); k++ {
		d := memmap.At(idx[k])
		take := min(d.NumberOfPages, budget)
		if take < minClaim {
			continue
		}
		at := d.End() - take<<efi.PageShift
		a, s := efi.AllocatePages(efi.AllocateAddress, take, at)
		if s.Error() {
			continue // the firmware used part of it since the map was read
		}
		pool.add(a, a+take<<efi.PageShift)
		budget -= take
		bootMem.claimed += take << efi.PageShift
	}
	if pool.total == 0 {
		return efi.OutOfResources
	}
	identTop = (max(bootMem.top, 4<<30) + (1<<30 - 1)) &^ (1<<30 - 1)
	return efi.Success
}

// buildKernelPT builds the kernel's page tables: an identity map of
// physical memory (page 0 left out, to catch nil pointers; 4 KiB pages in
// the first 2 MiB, 2 MiB pages above: all of [0, 4 GiB), MMIO included,
// and every range of the memory map above it), with the guard pages of the
// kernel stacks and of the runtime's stack unmapped.
func buildKernelPT() bool {
	pt, ok := amd64.New(identityTables{})
	if !ok {
		return false
	}
	kernelPT = pt
	const rw = amd64.PTE_W
	if !kernelPT.Map(pageSize, pageSize, amd64.PageSize2M-pageSize, pageSize, rw) ||
		!kernelPT.Map(amd64.PageSize2M, amd64.PageSize2M, 4<<30-amd64.PageSize2M, amd64.PageSize2M, rw) {
		return false
	}
	for i := 0; i < memmap.Len(); i++ {
		d := memmap.At(i)
		if d.End() <= 4<<30 {
			continue
		}
		start := max(d.PhysicalStart, 4<<30) &^ (amd64.PageSize2M - 1)
		end := (d.End() + amd64.PageSize2M - 1) &^ (amd64.PageSize2M - 1)
		if !kernelPT.Map(start, start, end-start, amd64.PageSize2M, rw) {
			return false
		}
	}
	for _, off := range guardOffsets {
		if !unmapPage(kstackBase + off) {
			return false
		}
	}
	if !unmapPage(rtStackBase) {
		return false
	}
	vm.lo, vm.hi = identTop, vmHi
	return true
}

func unmapPage(va uint64) bool {
	if !kernelPT.Split(va) {
		return false
	}
	if pte := kernelPT.PTE(va, false); pte != nil {
		*pte = 0
	}
	return true
}

// Descriptor tables.
var (
	gdt            [amd64.GDT_ENTRIES]uint64
	tss            amd64.TSS
	idt            [256]amd64.Gate
	gdtPtr, idtPtr amd64.DescPtr
)

// setupCPU loads ptilab's GDT (Linux's layout, with the firmware's code
// descriptor at the firmware gate's transit selector: efi.PlaceTransit),
// TSS (IST stacks), IDT (the 32 exception vectors, NMI to amd64's
// counting handler) and the SYSCALL MSRs, and enables NX where the CPU
// has it.
func setupCPU() {
	gdt = amd64.GDT(addr(&tss))
	transit, ok := efi.PlaceTransit(&gdt)
	switch {
	case !ok:
		var l kline
		l.s("ptilab: the firmware's code selector ").hex(uint64(efi.FirmwareCS()), 2).
			s(" has no place in ptilab's GDT, nor any selector free in both: an NMI while the firmware gate switches GDTs would not be survivable").flush()
	case transit.Copy:
		var l kline
		l.s("ptilab: the firmware's code selector ").hex(uint64(efi.FirmwareCS()), 2).
			s(" names another segment in ptilab's GDT: firmware calls run on a copy of the firmware's GDT, through code selector ").hex(uint64(transit.Sel), 2).flush()
	}

	tss.SetRSP0(kstackTop)
	tss.SetIST(istExc, kstackBase+istExcTop)
	tss.SetIST(istDF, kstackBase+istDFTop)
	tss.SetIST(istNMI, kstackBase+istNMITop)
	tss.SetIST(istMC, kstackBase+istMCTop)
	tss.SetIOMapBase(amd64.TSSSize)

	var stubs [32]uint64
	excStubs(&stubs)
	for v := range stubs {
		idt[v] = amd64.InterruptGate(stubs[v], amd64.KERNEL_CS, istFor(v), 0, amd64.TypeInterruptGate)
	}
	idt[amd64.VectorNMI] = amd64.InterruptGate(amd64.NMIEntryPC(), amd64.KERNEL_CS, istNMI, 0, amd64.TypeInterruptGate)

	// In an order that an NMI can strike anywhere in (see efi's gate): CS
	// the transit selector and the data segments null, on the firmware's
	// GDT (or its copy); ptilab's GDT, in which the transit CS and the NMI
	// gate of the firmware's IDT copy (on the transit) stay valid; ptilab's
	// CS and data segments; the TSS, whose IST the NMI gate of ptilab's
	// IDT needs; the IDT.
	gdtPtr.Limit, gdtPtr.Base = uint16(len(gdt)*8-1), addr(&gdt)
	idtPtr.Limit, idtPtr.Base = uint16(len(idt)*16-1), addr(&idt)
	amd64.LoadSegments(transit.Sel, 0)
	amd64.LoadGDT(&gdtPtr)
	amd64.LoadSegments(amd64.KERNEL_CS, amd64.KERNEL_DS)
	amd64.LoadTR(amd64.TSS_SEL)
	amd64.LoadIDT(&idtPtr)

	efer := amd64.RDMSR(amd64.MSR_EFER) | amd64.EFER_SCE
	if amd64.Features.NX {
		efer |= amd64.EFER_NXE
		nxEnabled = true
	}
	amd64.WRMSR(amd64.MSR_EFER, efer)
	amd64.WRMSR(amd64.MSR_STAR, uint64(amd64.USER32_CS)<<48|uint64(amd64.KERNEL_CS)<<32)
	amd64.WRMSR(amd64.MSR_LSTAR, syscallEntryPC())
	amd64.WRMSR(amd64.MSR_SFMASK, amd64.RFLAGS_TF|amd64.RFLAGS_IF|amd64.RFLAGS_DF|amd64.RFLAGS_IOPL|amd64.RFLAGS_NT|amd64.RFLAGS_AC)
	// No XSAVE-managed state: the runtime then uses SSE only (it checks
	// CPUID.01H:ECX.OSXSAVE before AVX), which FXSAVE covers. What the
	// firmware left in the XSAVE-managed registers (the YMM upper halves
	// above all) goes to its initial configuration first: once OSXSAVE is
	// clear nothing can clean it.
	if cr4 := amd64.CR4(); cr4&amd64.CR4_OSXSAVE != 0 {
		if amd64.Features.AVX {
			fwXState.XCR0 = amd64.InitXState()
			fwXState.Init = true
			// The firmware keeps OSXSAVE in its calls: the gate cleans
			// the YMM upper halves after each one.
			efi.SetFirmwareAVX(fwXState.XCR0&amd64.XCR0_AVX != 0)
		} else {
			fwXState.XCR0 = amd64.XGETBV(0)
		}
		amd64.SetCR4(cr4 &^ amd64.CR4_OSXSAVE)
	}
}

// clearPCIDE clears CR4.PCIDE where the firmware left it set: the 32-bit
// world leaves long mode, and paging cannot be turned off while PCIDE is
// set (SDM Vol. 3A, 4.10.1: MOV to CR0 clearing PG then raises #GP);
// pti sets it only for the runs of the PCID modes, from a CR4 without
// it. The kernel's CR3 (kernelPT.Root, bits 11:0 zero: PCID 0) must be
// loaded first; clearing PCIDE is allowed at any time and invalidates
// every TLB entry, global ones included (4.10.4.1). The firmware keeps
// its CR4 in its calls (the gate loads CR4 before CR3 on its way in, as
// setting PCIDE needs CR3[11:0] = 0). The cpu-state record says so
// (pcide_cleared), from efi.Entry.
func clearPCIDE() {
	if cr4 := amd64.CR4(); cr4&amd64.CR4_PCIDE != 0 {
		amd64.SetCR4(cr4 &^ amd64.CR4_PCIDE)
	}
}

// dropFirmwareGlobals toggles CR4.PGE where the firmware left it set,
// once the kernel's CR3 is loaded: a load of CR3 keeps global TLB entries
// (SDM Vol. 3A, 4.10.4.1), and the firmware's would go on translating its
// addresses with its page attributes under the kernel's tables, which need
// not map them alike. Clearing PGE invalidates every TLB entry, global
// ones included; setting it again gives the kernel the firmware's CR4
// back (pti sets PGE for the runs as each mode needs).
func dropFirmwareGlobals() {
	if cr4 := amd64.CR4(); cr4&amd64.CR4_PGE != 0 {
		amd64.SetCR4(cr4 &^ amd64.CR4_PGE)
		amd64.SetCR4(cr4)
	}
}

// IST indices (SDM Vol. 3A, 6.14.5).
const (
	istExc = 1
	istDF  = 2
	istNMI = 3
	istMC  = 4
)

func istFor(v int) uint8 {
	switch v {
	case amd64.VectorDF:
		return istDF
	case amd64.VectorNMI:
		return istNMI
	case amd64.VectorMC:
		return istMC
	}
	return istExc
}

// environment is the runtime's environment: no asynchronous preemption
// (it works by signals, which ptilab does not deliver).
var environment = [...]string{"GODEBUG=asyncpreemptoff=1"}

const programName = "ptilab"

// initialStack lays out what Linux gives a new process (System V AMD64
// ABI, 3.4.1, Figure 3.9): argc, argv, envp and the auxiliary vector, with
// the strings and 16 random bytes above, and returns the stack pointer,
// 16-byte aligned, pointing at argc.
func initialStack() uint64 {
	sp := rtStackTop
	put := func(s string) uint64 {
		sp -= uint64(len(s)) + 1
		copy(userBytes(sp, uint64(len(s))), s)
		*(*byte)(efi.Pointer(sp + uint64(len(s)))) = 0
		return sp
	}
	var rnd [16]byte
	for i := range rnd {
		rnd[i] = byte(random64())
	}
	atRandom := put(unsafe.String(&rnd[0], len(rnd)))
	argv0 := put(programName)
	var envp [len(environment)]uint64
	for i, e := range environment {
		envp[i] = put(e)
	}
	_, _, _, edx := amd64.CPUID(1, 0)
	auxv := [...]uint64{
		linuxabi.AT_PAGESZ, pageSize,
		linuxabi.AT_CLKTCK, 100,
		linuxabi.AT_HWCAP, uint64(edx),
		linuxabi.AT_RANDOM, atRandom,
		linuxabi.AT_UID, 0, linuxabi.AT_EUID, 0, linuxabi.AT_GID, 0, linuxabi.AT_EGID, 0,
		linuxabi.AT_SECURE, 0,
		linuxabi.AT_NULL, 0,
	}
	words := 1 + 2 + len(envp) + 1 + len(auxv)
	sp = (sp - uint64(words)*8) &^ 15
	w := sp
	word := func(v uint64) {
		store64(w, v)
		w += 8
	}
	word(1) // argc
	word(argv0)
	word(0)
	for _, e := range envp {
		word(e)
	}
	word(0)
	for _, v := range auxv {
		word(v)
	}
	return sp
}
