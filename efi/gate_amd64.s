#include "go_asm.h"
#include "textflag.h"

// Space kept free below the firmware's entry RSP before the gate's frame:
// the firmware's red zone does not exist (Microsoft x64 has none), but a
// margin costs nothing.
#define FW_MARGIN 256
// The gate's frame on the firmware stack: 32 bytes of shadow space and
// maxArgs-4 stack arguments, rounded up to 16 bytes.
#define FW_FRAME 96

// STR AX (0F 00 /1): the Go assembler has no STR.
#define STR_AX BYTE $0x0f; BYTE $0x00; BYTE $0xc8

#define SAVE_SEGMENTS(ctx) \
	XORQ	AX, AX; \
	MOVW	CS, AX; \
	MOVQ	AX, ctx+context_CS(SB); \
	MOVW	SS, AX; \
	MOVQ	AX, ctx+context_SS(SB); \
	MOVW	DS, AX; \
	MOVQ	AX, ctx+context_DS(SB); \
	MOVW	ES, AX; \
	MOVQ	AX, ctx+context_ES(SB); \
	XORQ	AX, AX; \
	STR_AX; \
	MOVQ	AX, ctx+context_TR(SB); \
	MOVQ	CR3, AX; \
	MOVQ	AX, ctx+context_CR3(SB); \
	MOVQ	CR4, AX; \
	MOVQ	AX, ctx+context_CR4(SB); \
	SGDT	ctx+(context_GDT+descPtr_Limit)(SB); \
	SIDT	ctx+(context_IDT+descPtr_Limit)(SB); \
	MOVL	$const_msrFSBase, CX; \
	RDMSR; \
	SHLQ	$32, DX; \
	ORQ	DX, AX; \
	MOVQ	AX, ctx+context_FSBase(SB); \
	MOVL	$const_msrGSBase, CX; \
	RDMSR; \
	SHLQ	$32, DX; \
	ORQ	DX, AX; \
	MOVQ	AX, ctx+context_GSBase(SB); \
	PUSHFQ; \
	POPQ	AX; \
	MOVQ	AX, ctx+context_RFLAGS(SB)

// LOAD_TR(ctx) loads the task register saved in ctx, first marking its TSS
// descriptor available: LTR raises #GP on a busy one (SDM Vol. 3A, 8.2.4).
// Needs the GDT of ctx loaded.
#define LOAD_TR(ctx) \
	MOVQ	ctx+context_TR(SB), AX; \
	ANDQ	$~const_selectorFlags, AX; \
	ADDQ	ctx+(context_GDT+descPtr_Base)(SB), AX; \
	ANDB	$~const_tssBusy, const_descTypeByte(AX); \
	MOVQ	ctx+context_TR(SB), AX; \
	LTR	AX

// NULL_DATA_SEGMENTS loads the null selector into DS, ES and SS: valid in
// 64-bit mode at CPL 0 whatever GDT is loaded (SDM Vol. 3A, 5.4.1.1;
// Vol. 2B, MOV), so that an NMI's IRETQ, which reloads SS, finds nothing
// to fault on while the GDT changes under it.
#define NULL_DATA_SEGMENTS \
	XORL	AX, AX; \
	MOVW	AX, DS; \
	MOVW	AX, ES; \
	MOVW	AX, SS

// The world switches. An NMI cannot be masked: it can strike between any
// two of the loads, and is then delivered through the IDT loaded at the
// time, whose gate's selector, and then the interrupted CS and SS that
// IRETQ reloads, are looked up in the GDT loaded at the time (SDM Vol. 3A,
// 6.12.1, 6.14). The order below keeps every intermediate state valid:
// the data segments null; the gate of the IDT loaded always names a code
// segment of the GDT loaded; CS too. It relies on a transit code selector
// (transitCS) that names 64-bit code in ptilab's GDT and in the one the
// firmware's calls run on (fwCodeMapped; efi.PlaceTransit puts it there:
// the firmware's own CS, or a free index in both, the firmware then
// running on a copy of its GDT), and on the IDT the firmware runs with
// inside a call being fwIDT (its NMI gate on the transit CS, no IST). CR3
// and CR4 come last: every table and handler involved sits in
// memory both worlds map identically.

// READABLE_OR_NULL leaves the selector in AX when it names a present data
// segment readable at CPL 0 (VERR, then LAR's P bit), else null; the
// labels ok and null. Clobbers CX.
#define READABLE_OR_NULL(ok, null) \
	VERR	AX; \
	JNE	null; \
	LARL	AX, CX; \
	BTL	$15, CX; \
	JCS	ok; \
null: \
	XORL	AX, AX; \
ok:

// LOAD_DATA(ctx) loads the DS, ES and SS of ctx.
#define LOAD_DATA(ctx) \
	MOVQ	ctx+context_DS(SB), AX; \
	MOVW	AX, DS; \
	MOVW	AX, ES; \
	MOVQ	ctx+context_SS(SB), AX; \
	MOVW	AX, SS

// LOAD_CR3(ctx) and LOAD_CR4(ctx) load the CR3 and the CR4 of ctx (the
// kernel clears CR4.OSXSAVE and CR4.PCIDE; the firmware gets back what
// it had). Their order matters where the firmware runs with CR4.PCIDE
// set, which the kernel clears: setting PCIDE raises #GP unless CR3[11:0]
// is 0 (SDM Vol. 3A, 4.10.1), which the kernel's CR3 is and the
// firmware's (its PCID) need not be; clearing it is allowed at any time.
// So the firmware's CR4 goes in before its CR3, the kernel's CR3 before
// its CR4.
#define LOAD_CR3(ctx) \
	MOVQ	ctx+context_CR3(SB), AX; \
	MOVQ	AX, CR3
#define LOAD_CR4(ctx) \
	MOVQ	ctx+context_CR4(SB), AX; \
	MOVQ	AX, CR4
// LOAD_PAGING(ctx) loads ctx's CR4 and CR3 in an order legal whatever
// either side's CR4.PCIDE and PCID: first ctx's CR3 with PCID 0, then its
// CR4 (setting PCIDE needs CR3[11:0] = 0: SDM Vol. 3A, 4.10.1), then its
// CR3 itself. The saved CR3s were read by MOV from CR3: bit 63 (NOFLUSH)
// is clear. Clobbers AX.
#define LOAD_PAGING(ctx) \
	MOVQ	ctx+context_CR3(SB), AX; \
	ANDQ	$~0xfff, AX; \
	MOVQ	AX, CR3; \
	LOAD_CR4(ctx); \
	LOAD_CR3(ctx)

// TO_TRANSIT(skip) reloads CS with the transit selector (transitCS) where
// fwCodeMapped says it names 64-bit code in both GDTs; it defines the
// label skip. Clobbers AX, BX.
#define TO_TRANSIT(skip) \
	CMPB	·fwCodeMapped(SB), $0; \
	JEQ	skip; \
	MOVQ	·transitCS(SB), AX; \
	CALL	·farReturn(SB); \
skip:

// TO_FIRMWARE switches to the firmware's context, with fwIDT: data
// segments null; CS the transit selector (while ptilab's GDT is loaded,
// with fwCodeMapped); fwIDT; the GDT the firmware's calls run on (its own
// or the copy fwGDT); CS the firmware's, DS, ES, SS; CR4 and CR3
// (LOAD_PAGING); the task register, when the firmware had one. RSP must already be on a
// stack both CR3 values map. It defines the labels fwcs and notr, so it
// stands at most once in a function.
#define TO_FIRMWARE \
	NULL_DATA_SEGMENTS; \
	TO_TRANSIT(fwcs); \
	LIDT	·fwIDTPtr+descPtr_Limit(SB); \
	LGDT	·fwctx+(context_GDT+descPtr_Limit)(SB); \
	MOVQ	·fwctx+context_CS(SB), AX; \
	CALL	·farReturn(SB); \
	LOAD_DATA(·fwctx); \
	LOAD_PAGING(·fwctx); \
	CMPQ	·fwctx+context_TR(SB), $0; \
	JEQ	notr; \
	LOAD_TR(·fwctx); \
notr:

// TO_KERNEL switches back to the kernel's context saved in kctx: first,
// under the firmware's CR4, VZEROUPPER when fwAVXUpper says the firmware
// runs with AVX; then data
// segments null; CS the transit selector (with fwCodeMapped); the
// kernel's GDT (the transit CS and fwIDT's NMI gate stay valid in it), CS;
// the kernel's task register, when the firmware had its own (before the
// kernel's IDT, whose NMI gate takes its stack from the TSS's IST); the
// kernel's IDT; DS, ES, SS; CR4 and CR3 (LOAD_PAGING). It defines the
// labels noavx, kgdt and notr2.
#define TO_KERNEL \
	CMPB	·fwAVXUpper(SB), $0; \
	JEQ	noavx; \
	VZEROUPPER; \
noavx: \
	NULL_DATA_SEGMENTS; \
	TO_TRANSIT(kgdt); \
	LGDT	·kctx+(context_GDT+descPtr_Limit)(SB); \
	MOVQ	·kctx+context_CS(SB), AX; \
	CALL	·farReturn(SB); \
	CMPQ	·fwctx+context_TR(SB), $0; \
	JEQ	notr2; \
	LOAD_TR(·kctx); \
notr2: \
	LIDT	·kctx+(context_IDT+descPtr_Limit)(SB); \
	LOAD_DATA(·kctx); \
	LOAD_PAGING(·kctx)

// LOAD_BASES(ctx) writes the FS and GS bases saved in ctx back to
// IA32_FS_BASE and IA32_GS_BASE. Clobbers AX, CX, DX.
#define LOAD_BASES(ctx) \
	MOVL	$const_msrFSBase, CX; \
	MOVQ	ctx+context_FSBase(SB), AX; \
	MOVQ	AX, DX; \
	SHRQ	$32, DX; \
	WRMSR; \
	MOVL	$const_msrGSBase, CX; \
	MOVQ	ctx+context_GSBase(SB), AX; \
	MOVQ	AX, DX; \
	SHRQ	$32, DX; \
	WRMSR

// farReturn continues at its return address with CS = AX: a far return
// reloads CS (SDM Vol. 3A, 5.8.6). Clobbers BX.
TEXT ·farReturn(SB),NOSPLIT|NOFRAME,$0
	POPQ	BX
	PUSHQ	AX
	PUSHQ	BX
	RETFQ

// func enter()
TEXT ·enter(SB),NOSPLIT|NOFRAME,$0
	MOVQ	CX, ·Firmware+firmwareInfo_ImageHandle(SB)
	MOVQ	DX, ·Firmware+firmwareInfo_SystemTable(SB)
	LEAQ	8(SP), AX
	MOVQ	AX, ·fwctx+context_RSP(SB)
	MOVQ	BX, ·fwctx+context_RBX(SB)
	MOVQ	BP, ·fwctx+context_RBP(SB)
	MOVQ	DI, ·fwctx+context_RDI(SB)
	MOVQ	SI, ·fwctx+context_RSI(SB)
	MOVQ	R12, ·fwctx+context_R12(SB)
	MOVQ	R13, ·fwctx+context_R13(SB)
	MOVQ	R14, ·fwctx+context_R14(SB)
	MOVQ	R15, ·fwctx+context_R15(SB)
	// The firmware's state as it was, then SSE enabled where the
	// firmware left it off: the first SSE instruction is the MOVOU below.
	CALL	·pretendPCIDE(SB)
	CALL	·saveEntryState(SB)
	CALL	·enableSSE(SB)
	MOVOU	X6, ·fwctx+(context_XMM+0)(SB)
	MOVOU	X7, ·fwctx+(context_XMM+16)(SB)
	MOVOU	X8, ·fwctx+(context_XMM+32)(SB)
	MOVOU	X9, ·fwctx+(context_XMM+48)(SB)
	MOVOU	X10, ·fwctx+(context_XMM+64)(SB)
	MOVOU	X11, ·fwctx+(context_XMM+80)(SB)
	MOVOU	X12, ·fwctx+(context_XMM+96)(SB)
	MOVOU	X13, ·fwctx+(context_XMM+112)(SB)
	MOVOU	X14, ·fwctx+(context_XMM+128)(SB)
	MOVOU	X15, ·fwctx+(context_XMM+144)(SB)
	// fwctx.CR4 is read after enableSSE: the firmware's calls and the
	// way back (exit) run with SSE enabled; exit gives the firmware its
	// own CR0 and CR4 back last.
	SAVE_SEGMENTS(·fwctx)
	// Until PlaceTransit says otherwise the gate passes through the
	// firmware's CS; exit gives the firmware back this GDT.
	MOVQ	·fwctx+context_CS(SB), AX
	MOVQ	AX, ·transitCS(SB)
	SGDT	·entryGDT+descPtr_Limit(SB)
	RET

// func call(fn uint64, args *[maxArgs]uint64) uint64
TEXT ·call(SB),NOSPLIT,$0-24
	MOVQ	fn+0(FP), R12
	MOVQ	args+8(FP), R13
	MOVQ	SP, ·kctx+context_RSP(SB)
	MOVQ	BP, ·kctx+context_RBP(SB)
	SAVE_SEGMENTS(·kctx)
	CLI

	// Onto the firmware's stack, below where it entered the image.
	MOVQ	·fwctx+context_RSP(SB), SP
	SUBQ	$FW_MARGIN, SP
	ANDQ	$~15, SP
	SUBQ	$FW_FRAME, SP
	TO_FIRMWARE

	// Arguments: RCX, RDX, R8, R9, then 32(SP)... above the shadow space.
	MOVQ	32(R13), AX
	MOVQ	AX, 32(SP)
	MOVQ	40(R13), AX
	MOVQ	AX, 40(SP)
	MOVQ	48(R13), AX
	MOVQ	AX, 48(SP)
	MOVQ	56(R13), AX
	MOVQ	AX, 56(SP)
	MOVQ	64(R13), AX
	MOVQ	AX, 64(SP)
	MOVQ	72(R13), AX
	MOVQ	AX, 72(SP)
	MOVQ	0(R13), CX
	MOVQ	8(R13), DX
	MOVQ	16(R13), R8
	MOVQ	24(R13), R9

	// The firmware runs with the interrupt flag it had at entry.
	TESTQ	$const_rflagsIF, ·fwctx+context_RFLAGS(SB)
	JEQ	noint
	STI
noint:
	CALL	R12
	CLI
	MOVQ	AX, R12		// R12 is callee-saved in the Microsoft x64 ABI

	TO_KERNEL
	LOAD_BASES(·kctx)
	MOVQ	·kctx+context_RSP(SB), SP
	MOVQ	·kctx+context_RBP(SB), BP
	PUSHQ	·kctx+context_RFLAGS(SB)
	POPFQ
	MOVQ	R12, ret+16(FP)
	RET

// func exit(status uint64)
// NOFRAME: the assembler would otherwise save BP on entry and pop it
// before the final RET, which here returns from the firmware's frame.
TEXT ·exit(SB),NOSPLIT|NOFRAME,$0-8
	MOVQ	8(SP), R15		// status
	CLI
	MOVQ	·fwctx+context_RSP(SB), SP
	SUBQ	$FW_MARGIN, SP
	ANDQ	$~15, SP
	SUBQ	$FW_FRAME, SP
	TO_FIRMWARE
	// The firmware's FS and GS selectors (goos nulled them at entry), then
	// their bases: loading a selector loads its descriptor's base, which
	// the WRMSRs replace with the saved ones. A selector whose descriptor
	// the firmware's GDT no longer holds as a data segment stays null
	// (the firmware's segment cache came from an older GDT: U-Boot's FS,
	// 0x20, names a TSS in the GDT it runs on, and loading it raises
	// #GP). VERR sets ZF for a segment readable at CPL 0 (SDM Vol. 2B,
	// VERR), without looking at its present bit: LAR gives the access
	// rights, whose bit 15 is P (a not-present one would raise #NP).
	MOVQ	·Entry+EntryState_FS(SB), AX
	READABLE_OR_NULL(fsok, fsnull)
	MOVW	AX, FS
	MOVQ	·Entry+EntryState_GS(SB), AX
	READABLE_OR_NULL(gsok, gsnull)
	MOVW	AX, GS
	LOAD_BASES(·fwctx)
	TESTQ	$const_rflagsIF, ·fwctx+context_RFLAGS(SB)
	JEQ	noint
	STI
noint:
	// FreePages(claims[i].base, claims[i].pages) for every claim.
	LEAQ	·claims(SB), R13
	MOVQ	·nclaims(SB), R14
free:
	TESTQ	R14, R14
	JEQ	freed
	MOVQ	claim_Base(R13), CX
	MOVQ	claim_Pages(R13), DX
	MOVQ	·Firmware+firmwareInfo_BootServices(SB), AX
	CALL	const_bsFreePages(AX)
	ADDQ	$claim__size, R13
	DECQ	R14
	JMP	free
freed:
	// The firmware's own IDT last: fwIDT's NMI handler is in the image,
	// which the firmware may free once this returns.
	LIDT	·fwctx+(context_IDT+descPtr_Limit)(SB)
	// Then its GDT and CS as they were at entry, where its calls ran on a
	// copy (fwGDT, also in the image): the entry CS names the same
	// descriptor in both.
	MOVQ	·Entry+EntryState_CS(SB), AX
	CALL	·farReturn(SB)
	LGDT	·entryGDT+descPtr_Limit(SB)
	MOVQ	R15, AX
	MOVQ	·fwctx+context_RSP(SB), SP
	MOVQ	·fwctx+context_RBX(SB), BX
	MOVQ	·fwctx+context_RBP(SB), BP
	MOVQ	·fwctx+context_RDI(SB), DI
	MOVQ	·fwctx+context_RSI(SB), SI
	MOVQ	·fwctx+context_R12(SB), R12
	MOVQ	·fwctx+context_R13(SB), R13
	MOVQ	·fwctx+context_R14(SB), R14
	MOVQ	·fwctx+context_R15(SB), R15
	MOVOU	·fwctx+(context_XMM+0)(SB), X6
	MOVOU	·fwctx+(context_XMM+16)(SB), X7
	MOVOU	·fwctx+(context_XMM+32)(SB), X8
	MOVOU	·fwctx+(context_XMM+48)(SB), X9
	MOVOU	·fwctx+(context_XMM+64)(SB), X10
	MOVOU	·fwctx+(context_XMM+80)(SB), X11
	MOVOU	·fwctx+(context_XMM+96)(SB), X12
	MOVOU	·fwctx+(context_XMM+112)(SB), X13
	MOVOU	·fwctx+(context_XMM+128)(SB), X14
	MOVOU	·fwctx+(context_XMM+144)(SB), X15
	// The firmware's x87 control word and MXCSR (callee-saved in the
	// Microsoft x64 convention), then its own SSE bits of CR0 and CR4
	// (enableSSE's changes undone, last: MXCSR needs CR4.OSFXSR).
	FLDCW	·Entry+EntryState_FCW(SB)
	LDMXCSR	·Entry+EntryState_MXCSR(SB)
	MOVQ	CR0, CX
	ANDQ	$~(const_cr0SSESet|const_cr0SSEClear), CX
	MOVQ	·Entry+EntryState_CR0(SB), DX
	ANDQ	$(const_cr0SSESet|const_cr0SSEClear), DX
	ORQ	DX, CX
	MOVQ	CX, CR0
	MOVQ	CR4, CX
	ANDQ	$~const_cr4SSESet, CX
	MOVQ	·Entry+EntryState_CR4(SB), DX
	ANDQ	$const_cr4SSESet, DX
	ORQ	DX, CX
	MOVQ	CX, CR4
	// The firmware's return address is at the entry RSP: return as the
	// entry point would.
	RET

// SEL(seg, field) stores segment register seg, zero-extended, in
// Entry.field.
#define SEL(seg, field) XORQ AX, AX; MOVW seg, AX; MOVQ AX, ·Entry+field(SB)

// func saveEntryState()
// Clobbers AX, CX, DX.
TEXT ·saveEntryState(SB),NOSPLIT|NOFRAME,$0
	MOVQ	CR0, AX
	MOVQ	AX, ·Entry+EntryState_CR0(SB)
	MOVQ	CR3, AX
	MOVQ	AX, ·Entry+EntryState_CR3(SB)
	MOVQ	CR4, AX
	MOVQ	AX, ·Entry+EntryState_CR4(SB)
	MOVL	$const_msrEFER, CX
	RDMSR
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ·Entry+EntryState_EFER(SB)
	SEL(CS, EntryState_CS)
	SEL(SS, EntryState_SS)
	SEL(DS, EntryState_DS)
	SEL(ES, EntryState_ES)
	SEL(FS, EntryState_FS)
	SEL(GS, EntryState_GS)
	XORQ	AX, AX
	STR_AX
	MOVQ	AX, ·Entry+EntryState_TR(SB)
	PUSHFQ
	POPQ	AX
	MOVQ	AX, ·Entry+EntryState_RFLAGS(SB)
	RET

// func enableSSE()
// Clobbers AX, BX, CX, DX.
TEXT ·enableSSE(SB),NOSPLIT|NOFRAME,$0
	MOVL	$1, AX
	XORL	CX, CX
	CPUID
	ANDL	$const_cpuidSSE, DX
	CMPL	DX, $const_cpuidSSE
	JNE	nosse
	MOVQ	CR0, AX
	ORQ	$const_cr0SSESet, AX
	ANDQ	$~const_cr0SSEClear, AX
	MOVQ	AX, CR0
	MOVQ	CR4, AX
	ORQ	$const_cr4SSESet, AX
	MOVQ	AX, CR4
	// Read back: what changed, and whether it took.
	MOVQ	CR0, AX
	MOVQ	AX, DX
	XORQ	·Entry+EntryState_CR0(SB), DX
	MOVQ	DX, ·Entry+EntryState_CR0Fixed(SB)
	ANDQ	$(const_cr0SSESet|const_cr0SSEClear), AX
	CMPQ	AX, $const_cr0SSESet
	JNE	nosse
	MOVQ	CR4, AX
	MOVQ	AX, DX
	XORQ	·Entry+EntryState_CR4(SB), DX
	MOVQ	DX, ·Entry+EntryState_CR4Fixed(SB)
	ANDQ	$const_cr4SSESet, AX
	CMPQ	AX, $const_cr4SSESet
	JNE	nosse
	// The firmware's x87 control word and MXCSR, then UEFI's (and a new
	// Linux process's): FINIT assembles as FNINIT (DB E3), FSTCW as
	// FNSTCW (D9 /7).
	FSTCW	·Entry+EntryState_FCW(SB)
	STMXCSR	·Entry+EntryState_MXCSR(SB)
	FINIT
	LDMXCSR	·mxcsrInitWord(SB)
	RET
nosse:
	JMP	·noSSE(SB)

// func noSSE()
TEXT ·noSSE(SB),NOSPLIT|NOFRAME,$0
	// noSSEText = noSSEMessage, widened to UTF-16, with CR, LF, NUL.
	MOVQ	·noSSEMessage(SB), SI
	MOVQ	·noSSEMessage+8(SB), CX
	LEAQ	·noSSEText(SB), DI
	CMPQ	CX, $252
	JLS	widen
	MOVQ	$252, CX
widen:
	TESTQ	CX, CX
	JEQ	widened
	MOVBQZX	(SI), AX
	MOVW	AX, (DI)
	INCQ	SI
	ADDQ	$2, DI
	DECQ	CX
	JMP	widen
widened:
	MOVW	$13, 0(DI)
	MOVW	$10, 2(DI)
	MOVW	$0, 4(DI)

	// ConOut->OutputString(ConOut, noSSEText) on the firmware's stack,
	// 16-byte aligned with 32 bytes of shadow space, below the return
	// address at the entry RSP (fwctx.RSP).
	MOVQ	·fwctx+context_RSP(SB), SP
	SUBQ	$64, SP
	ANDQ	$~15, SP
	MOVQ	·Firmware+firmwareInfo_SystemTable(SB), AX
	MOVQ	const_stConOut(AX), CX
	TESTQ	CX, CX
	JEQ	noconout
	LEAQ	·noSSEText(SB), DX
	CALL	const_textOutputString(CX)
noconout:
	// Back to the firmware, as the entry point returning Unsupported,
	// with the callee-saved registers it entered with (RBX, changed by
	// CPUID, RSI and RDI; the XMM registers were not touched).
	MOVQ	·fwctx+context_RBX(SB), BX
	MOVQ	·fwctx+context_RSI(SB), SI
	MOVQ	·fwctx+context_RDI(SB), DI
	MOVQ	·fwctx+context_RSP(SB), SP	// the firmware's return address
	MOVQ	$const_statusUnsupported, AX
	RET

// func pretendPCIDE()
// Clobbers AX, BX, CX, DX.
TEXT ·pretendPCIDE(SB),NOSPLIT|NOFRAME,$0
	MOVL	$const_firmwarePCIDE, AX
	TESTL	AX, AX
	JEQ	done
	MOVL	$1, AX
	XORL	CX, CX
	CPUID
	TESTL	$const_cpuidPCID, CX
	JEQ	done
	TESTL	$const_cpuidPGE, DX
	JEQ	done
	MOVQ	CR3, AX
	TESTQ	$0xfff, AX
	JNE	done
	MOVQ	CR4, DX
	ORQ	$(const_cr4PCIDE|const_cr4PGE), DX
	MOVQ	DX, CR4
	ORQ	$const_fwPCID, AX
	MOVQ	AX, CR3
done:
	RET
