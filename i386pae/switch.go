package i386pae

import (
	"encoding/binary"
	"errors"
	"slices"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/i386pae/layout"
)

// descPtr is amd64.DescPtr (the LGDT/LIDT/SGDT/SIDT operand of long
// mode), named here so that its offsets reach switch_amd64.s through
// go_asm.h.
type descPtr = amd64.DescPtr

// saveArea is the 64-bit side's part of the per-CPU page, at
// layout.SaveArea: what run32 saves of the Go context and back64 restores,
// and what run32 loads.
type saveArea struct {
	GoRFLAGS, GoRSP, GoCR0, GoCR3, GoCR4, GoTR uint64
	GoFSBase, GoGSBase, GoKGSBase              uint64
	GoSysenterCS, GoSysenterESP, GoSysenterEIP uint64
	GoGDT, GoIDT                               descPtr

	RunSysenterCS, RunSysenterESP, RunSysenterEIP uint64
	RunGDT                                        descPtr // the 32-bit GDT at its physical address
	Enter32                                       uint64  // the physical address of enter32
}

// cpuData is layout.CPUData, declared here for go_asm.h.
type cpuData layout.CPUData

// Constants for switch_amd64.s.
const (
	saveAreaOff     = layout.SaveArea
	kernelCS32      = layout.KERNEL_CS
	kernelDS64      = amd64.KERNEL_DS
	msrSysenterCS   = amd64.MSR_IA32_SYSENTER_CS
	msrSysenterESP  = amd64.MSR_IA32_SYSENTER_ESP
	msrSysenterEIP  = amd64.MSR_IA32_SYSENTER_EIP
	msrFSBase       = amd64.MSR_FS_BASE
	msrGSBase       = amd64.MSR_GS_BASE
	msrKernelGSBase = amd64.MSR_KERNEL_GS_BASE
	tssBusy         = amd64.TSSBusy
	descTypeByte    = amd64.DescTypeByte
)

// The save area must fit in the page after CPUData.
var (
	_ [layout.SaveArea - unsafe.Sizeof(cpuData{})]byte
	_ [4096 - layout.SaveArea - unsafe.Sizeof(saveArea{})]byte
)

// run32 runs the prepared 32-bit world (see switch_amd64.s).
//
// defined in switch_amd64.s
func run32(cpu uint64)

// back64Addr returns the address of back64, where the 32-bit world comes
// back to long mode.
//
// defined in switch_amd64.s
func back64Addr() uint64

// writeDescriptors fills the GDT, the TSS, the #DF TSS and the IDT for a
// run under s on the kernel PDPT kernelPDPT.
func writeDescriptors(s Switch, kernelPDPT uint32) {
	desc := kernelPage(layout.Desc, 1)
	gdt := GDT(layout.Desc+layout.DescTSS, layout.Desc+layout.DescDFTSS)
	for i, d := range gdt {
		binary.LittleEndian.PutUint64(desc[layout.DescGDT+8*i:], d)
	}
	tss := (*TSS)(unsafe.Pointer(&desc[layout.DescTSS]))
	*tss = TSS{ESP0: layout.EntryStackTop, SS0: layout.KERNEL_DS, IOMap: TSSNoIOMap}
	df := (*TSS)(unsafe.Pointer(&desc[layout.DescDFTSS]))
	*df = TSS{
		CR3: kernelPDPT, EIP: kernelVA(offDoubleFault), EFLAGS: layout.EFLAGS_FIXED, ESP: layout.DFStackTop,
		CS: layout.KERNEL_CS, SS: layout.KERNEL_DS, DS: layout.KERNEL_DS, ES: layout.KERNEL_DS,
		IOMap: TSSNoIOMap,
	}
	for v := 0; v < 256; v++ {
		var g uint64
		switch {
		case v == amd64.VectorDF:
			g = TaskGate(layout.DOUBLEFAULT_TSS)
		case v == amd64.VectorNMI:
			g = InterruptGate(kernelVA(offNmi), layout.KERNEL_CS, 0)
		case v < 32:
			g = InterruptGate(kernelVA(offExcEntries+16*uint32(v)), layout.KERNEL_CS, 0)
		case v == 0x80:
			g = InterruptGate(kernelVA(s.int80), layout.KERNEL_CS, 3)
		}
		binary.LittleEndian.PutUint64(desc[layout.DescIDT+8*v:], g)
	}
}

// switchIDT returns the IDT of the mode switches (layout.CPUData.SwitchIDT):
// the NMI's gate as a legacy 32-bit interrupt gate to legacy (layout's
// KERNEL_CS: 32-bit code) at its 8 bytes for vector 2, and as an IA-32e
// interrupt gate to ia32e (KERNEL64_CS: 64-bit code, no IST) at its 16
// bytes for vector 2; both handlers at physical addresses. Each format
// reads the other's bytes as other vectors (legacy 4 and 5, IA-32e 1),
// which no switch raises.
func switchIDT(legacy, ia32e uint32) (idt [layout.SwitchIDTSize / 4]uint32) {
	var b [layout.SwitchIDTSize]byte
	binary.LittleEndian.PutUint64(b[8*amd64.VectorNMI:], InterruptGate(legacy, layout.KERNEL_CS, 0))
	g := amd64.InterruptGate(uint64(ia32e), layout.KERNEL64_CS, 0, 0, amd64.TypeInterruptGate)
	binary.LittleEndian.PutUint64(b[16*amd64.VectorNMI:], g.Lo)
	binary.LittleEndian.PutUint64(b[16*amd64.VectorNMI+8:], g.Hi)
	for i := range idt {
		idt[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return idt
}

// start runs a task of process proc in ring 3 under sw (from Plan, which
// validated it: start checks nothing again), from eip with its
// stack at esp and arguments args (EBX, ECX, EDX, ESI, EDI, EBP), and
// returns how the run ended; with tasks, the tasks kernel (its state
// prepared by the caller) answers the calls the assembly does not.
func start(sw Switch, proc *Process, eip, esp uint32, args [6]uint32, tasks bool) (Result, error) {
	c := sw.c
	if c.World != experiment.W32 {
		return Result{}, errors.New("i386pae: a run needs a Switch from Plan")
	}
	cr4 := amd64.CR4()
	if cr4&amd64.CR4_PCIDE != 0 {
		return Result{}, errors.New("i386pae: CR4.PCIDE is set: long mode cannot be left (SDM Vol. 3A, 4.10.1)")
	}
	sp, err := proc.space(c.Mode.Isolated(), c.Global)
	if err != nil {
		return Result{}, err
	}
	writeDescriptors(sw, uint32(sp.KernelPDPT))

	// The low PML4: the Go kernel's top-level entries, refreshed for each
	// run (the runtime may have added some).
	low := kernelPage(layout.LowPML4, 1)
	kpml4 := goos.KernelTable()
	copy(low, goos.Frames(kpml4.Root, 1))

	cpuPA := world.kernel + (layout.CPU - layout.KernelBase)
	page := kernelPage(layout.CPU, 1)
	clear(page)
	d := (*layout.CPUData)(unsafe.Pointer(&page[0]))
	d.KernelCR3 = uint32(sp.KernelPDPT)
	d.UserCR3 = uint32(sp.UserPDPT)
	// CR4 of the 32-bit world: Go's, with PGE when the CPU has it (the G
	// bits decide what is global), without TSD (ring 3 reads the TSC),
	// SMAP and FSGSBASE (64-bit only).
	run := cr4 &^ (amd64.CR4_PGE | amd64.CR4_TSD | amd64.CR4_SMAP | amd64.CR4_FSGSBASE)
	if amd64.Features.PGE {
		run |= amd64.CR4_PGE
	}
	d.CR4 = uint32(run)
	d.LowPML4 = uint32(world.kernel + (layout.LowPML4 - layout.KernelBase))
	d.Phys = uint32(cpuPA)
	d.HighEntry = kernelVA(offEnter32high)
	d.LeaveLow = uint32(physical(offLeave32low))
	back := back64Addr()
	d.Back64 = [2]uint32{uint32(back), uint32(back >> 32)}
	d.Far = [2]uint32{uint32(physical(offLanding64)), layout.KERNEL64_CS}
	d.SysexitEIP = userVA(offVsyscallRet)
	d.UserEIP = eip
	d.UserESP = esp
	d.Args = args
	d.GDT = [2]uint32{(layout.GDT_ENTRIES*8 - 1) << 16, layout.Desc + layout.DescGDT}
	d.IDT = [2]uint32{(256*8 - 1) << 16, layout.Desc + layout.DescIDT}
	d.GDTPhys = [2]uint32{d.GDT[0], uint32(world.kernel + (layout.Desc - layout.KernelBase) + layout.DescGDT)}
	d.SwitchIDT = switchIDT(uint32(physical(offNmiSwitch)), uint32(physical(offNmiSwitch64)))
	d.SwitchIDTPtr = [2]uint32{(layout.SwitchIDTSize - 1) << 16, uint32(cpuPA) + uint32(unsafe.Offsetof(d.SwitchIDT))}
	d.SwitchStack = uint32(world.kernel + (layout.DFStackTop - layout.KernelBase))
	if tasks {
		d.Tasks = 1
	}
	d.Sites = sw.sites
	if c.Stamps {
		d.StampCalOn = 1
	}
	d.VerwSel = layout.KERNEL_DS
	d.Dispatch = kernelVA(offDispatch)

	s := (*saveArea)(unsafe.Pointer(&page[layout.SaveArea]))
	s.RunSysenterCS = layout.KERNEL_CS
	s.RunSysenterESP = layout.EntryStackTop
	s.RunSysenterEIP = uint64(kernelVA(sw.sysenter))
	s.RunGDT.Limit = layout.GDT_ENTRIES*8 - 1
	s.RunGDT.Base = world.kernel + (layout.Desc - layout.KernelBase) + layout.DescGDT
	s.Enter32 = physical(offEnter32)

	k := kstate()
	k.SampleSrc, k.SampleN = uint32(sampleSrc), 0
	for i, msr := range pmcMSRs {
		k.SampleMSR[i] = msr
	}

	run32(cpuPA)
	amd64.AddNMIs(uint64(d.NMIs) + uint64(d.SwitchNMIs))

	r := Result{
		Reason: d.Reason, Status: d.Status,
		Vector: d.Vector, ErrorCode: d.ErrorCode, EIP: d.FaultEIP, CS: d.FaultCS, ESP: d.FaultESP, CR2: d.FaultCR2,
		IBPBs: d.IBPBs, RSBFills: d.RSBFills,
	}
	for i, ph := range d.Phase {
		r.Stamps.Sums[i], r.Stamps.N[i] = uint64(ph[0])|uint64(ph[1])<<32, uint64(d.PhaseN[i])
		if d.StampCalNs[i] != 0 {
			r.Stamps.Cost[i] = stampCost(&d.StampBlock, i)
		}
	}
	return r, nil
}

// stampCost is what one stamp adds to phase i: the median over the
// calibration's blocks (CPUData.StampBlock) of each block's sum per call,
// so that a disturbance inside one block (an SMI, an NMI) does not move
// it.
func stampCost(blocks *[layout.StampCalBlocks][layout.PhaseCount][2]uint32, i int) float64 {
	var per [layout.StampCalBlocks]float64
	for b := range blocks {
		sum := blocks[b][i]
		per[b] = float64(uint64(sum[0])|uint64(sum[1])<<32) / layout.StampBlockCalls
	}
	slices.Sort(per[:])
	n := len(per)
	if n%2 == 1 {
		return per[n/2]
	}
	return (per[n/2-1] + per[n/2]) / 2
}
