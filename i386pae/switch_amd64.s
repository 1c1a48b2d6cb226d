#include "go_asm.h"
#include "textflag.h"

#define RDMSR64(msr, dst) \
	MOVL	$msr, CX; \
	RDMSR; \
	SHLQ	$32, DX; \
	ORQ	DX, AX; \
	MOVQ	AX, dst

#define WRMSR64(msr, src) \
	MOVL	$msr, CX; \
	MOVQ	src, AX; \
	MOVQ	AX, DX; \
	SHRQ	$32, DX; \
	WRMSR

// GO_MSRS applies OP (RDMSR64 or WRMSR64) to each MSR of the Go context
// that run32 saves and back64 restores, with its slot in the save area:
// the FS and GS bases, KERNEL_GS_BASE and the SYSENTER MSRs.
#define GO_MSRS(OP) \
	OP(const_msrFSBase, (const_saveAreaOff+saveArea_GoFSBase)(DI)); \
	OP(const_msrGSBase, (const_saveAreaOff+saveArea_GoGSBase)(DI)); \
	OP(const_msrKernelGSBase, (const_saveAreaOff+saveArea_GoKGSBase)(DI)); \
	OP(const_msrSysenterCS, (const_saveAreaOff+saveArea_GoSysenterCS)(DI)); \
	OP(const_msrSysenterESP, (const_saveAreaOff+saveArea_GoSysenterESP)(DI)); \
	OP(const_msrSysenterEIP, (const_saveAreaOff+saveArea_GoSysenterEIP)(DI))

// func run32(cpu uint64)
//
// Runs the prepared 32-bit world and returns when it has come back
// (back64). cpu is the physical address of the per-CPU page (below 4 GiB,
// identity-mapped). It saves the Go context in the page's save area
// (RFLAGS, the stack pointer, CR0, CR3, CR4, GDT, IDT, TR, the FS and GS
// bases, the SYSENTER MSRs), sets the run's SYSENTER MSRs, loads the 32-bit GDT at its
// physical address and far-returns to enter32, at its physical address,
// in compatibility mode (CS = KERNEL_CS, a 32-bit code segment), with EDI
// = cpu. Interrupts must be masked (they always are: see goos).
TEXT ·run32(SB),NOSPLIT|NOFRAME,$0-8
	MOVQ	cpu+0(FP), DI
	PUSHQ	BP			// the caller's frame pointer, popped by back64
	PUSHFQ
	POPQ	AX
	MOVQ	AX, (const_saveAreaOff+saveArea_GoRFLAGS)(DI)
	MOVQ	SP, (const_saveAreaOff+saveArea_GoRSP)(DI)
	MOVQ	CR0, AX
	MOVQ	AX, (const_saveAreaOff+saveArea_GoCR0)(DI)
	MOVQ	CR3, AX
	MOVQ	AX, (const_saveAreaOff+saveArea_GoCR3)(DI)
	MOVQ	CR4, AX
	MOVQ	AX, (const_saveAreaOff+saveArea_GoCR4)(DI)
	SGDT	(const_saveAreaOff+saveArea_GoGDT+descPtr_Limit)(DI)
	SIDT	(const_saveAreaOff+saveArea_GoIDT+descPtr_Limit)(DI)
	XORQ	AX, AX
	BYTE $0x0f; BYTE $0x00; BYTE $0xc8	// STR AX
	MOVQ	AX, (const_saveAreaOff+saveArea_GoTR)(DI)
	GO_MSRS(RDMSR64)
	WRMSR64(const_msrSysenterCS, (const_saveAreaOff+saveArea_RunSysenterCS)(DI))
	WRMSR64(const_msrSysenterESP, (const_saveAreaOff+saveArea_RunSysenterESP)(DI))
	WRMSR64(const_msrSysenterEIP, (const_saveAreaOff+saveArea_RunSysenterEIP)(DI))
	LGDT	(const_saveAreaOff+saveArea_RunGDT+descPtr_Limit)(DI)
	PUSHQ	$const_kernelCS32
	PUSHQ	(const_saveAreaOff+saveArea_Enter32)(DI)
	RETFQ

// func back64()
//
// The end of a run, reached from the 32-bit world's landing64 in 64-bit
// mode: CS = KERNEL64_CS of the 32-bit GDT (the Go GDT's KERNEL_CS
// selector), CR3 = the low PML4 (the Go kernel's mappings), RDI = the
// per-CPU page, RSP = the switch stack and IDTR = the switch IDT (which
// serve an NMI until the Go IDT is loaded: see kernel32's enter32). It
// restores the Go context that run32 saved: the data segments (KERNEL_DS,
// which names flat data in the 32-bit GDT too, so that an NMI's IRETQ
// finds SS valid on either side of the LGDT), the GDT, the TR after
// clearing its busy bit, and only then the IDT (an NMI from there on finds
// Go's handlers and, through the TR, their IST stacks); CR0 (a #DF task
// switch sets TS), CR3, CR4, the MSRs, RFLAGS (DF and AC as Go had them),
// and returns from run32.
TEXT ·back64(SB),NOSPLIT|NOFRAME,$0
	MOVL	$const_kernelDS64, AX
	MOVW	AX, SS
	MOVW	AX, DS
	MOVW	AX, ES
	LGDT	(const_saveAreaOff+saveArea_GoGDT+descPtr_Limit)(DI)
	XORL	AX, AX
	MOVW	AX, FS
	MOVW	AX, GS
	MOVQ	(const_saveAreaOff+saveArea_GoGDT+descPtr_Base)(DI), AX
	ADDQ	(const_saveAreaOff+saveArea_GoTR)(DI), AX
	ANDB	$~const_tssBusy, const_descTypeByte(AX)
	MOVQ	(const_saveAreaOff+saveArea_GoTR)(DI), AX
	LTR	AX
	LIDT	(const_saveAreaOff+saveArea_GoIDT+descPtr_Limit)(DI)
	MOVQ	(const_saveAreaOff+saveArea_GoCR0)(DI), AX
	MOVQ	AX, CR0
	MOVQ	(const_saveAreaOff+saveArea_GoCR3)(DI), AX
	MOVQ	AX, CR3
	MOVQ	(const_saveAreaOff+saveArea_GoCR4)(DI), AX
	MOVQ	AX, CR4
	GO_MSRS(WRMSR64)
	MOVQ	(const_saveAreaOff+saveArea_GoRSP)(DI), SP
	PUSHQ	(const_saveAreaOff+saveArea_GoRFLAGS)(DI)
	POPFQ
	POPQ	BP
	POPQ	CX		// run32's return address: RET, but the assembler
	JMP	CX		// rejects a RET after more POPs than PUSHes

// func back64Addr() uint64
//
// Returns the address of back64.
TEXT ·back64Addr(SB),NOSPLIT,$0-8
	LEAQ	·back64(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
