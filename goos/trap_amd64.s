#include "go_asm.h"
#include "textflag.h"

// WRFS(reg) sets the FS base to reg. Clobbers AX, CX, DX.
#define WRFS(reg) \
	MOVQ	reg, AX; \
	MOVQ	AX, DX; \
	SHRQ	$32, DX; \
	MOVL	$const_msrFSBase, CX; \
	WRMSR

// PUSH_REGS pushes the general registers in pt_regs order from DI down to
// R15 (Linux's PUSH_REGS, arch/x86/entry/calling.h): with the words above
// them (orig_ax or the vector, then the IRETQ frame) they form a PtRegs or
// an excFrame at SP. POP_REGS pops them back.
#define PUSH_REGS \
	PUSHQ	DI; PUSHQ	SI; PUSHQ	DX; PUSHQ	CX; PUSHQ	AX; \
	PUSHQ	R8; PUSHQ	R9; PUSHQ	R10; PUSHQ	R11; \
	PUSHQ	BX; PUSHQ	BP; PUSHQ	R12; PUSHQ	R13; PUSHQ	R14; PUSHQ	R15

#define POP_REGS \
	POPQ	R15; POPQ	R14; POPQ	R13; POPQ	R12; POPQ	BP; POPQ	BX; \
	POPQ	R11; POPQ	R10; POPQ	R9; POPQ	R8; \
	POPQ	AX; POPQ	CX; POPQ	DX; POPQ	SI; POPQ	DI

// func entry()
//
// The PE/COFF entry point (UEFI 2.10, 4.1), Microsoft x64 ABI: RCX = image
// handle, RDX = system table, the firmware's stack. It records the
// firmware's state and enables SSE where the firmware left it off
// (efi.enter: efi.Entry), clears the direction flag (UEFI 2.10, 2.3.4
// promises it clear; the Go runtime assumes it), sets up kernelG and the
// kernel stack, runs boot (Go,
// kernel mode), and enters the Go runtime's own entry point,
// _rt0_amd64_linux, on the Linux-shaped initial stack boot returns, with
// null FS and GS selectors and FS base 0 as a new Linux process has.
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	CALL	github·com∕ptilab∕ptilab∕efi·enter(SB)
	CLI
	CLD

	// Null FS and GS selectors before their bases are written, as Linux
	// runs user space: an IRETQ to ring 3 nulls a data segment register
	// whose descriptor has DPL < 3 (SDM Vol. 2A, IRET, "return to outer
	// privilege level"), such as EDK2's 0x30, and what that does to the
	// 64-bit base is not specified (QEMU's TCG zeroes it). A null selector
	// is left as it is, base included.
	XORL	AX, AX
	MOVW	AX, FS
	MOVW	AX, GS

	// kstackBase = kstackRegion rounded up to a page; kstackTop above it.
	LEAQ	·kstackRegion(SB), AX
	ADDQ	$4095, AX
	ANDQ	$~4095, AX
	MOVQ	AX, ·kstackBase(SB)
	LEAQ	const_kstackRegionSize(AX), BX
	MOVQ	BX, ·kstackTop(SB)

	// kernelG: stack.lo, stack.hi, stackguard0, stackguard1.
	MOVQ	AX, ·kernelG+0(SB)
	MOVQ	BX, ·kernelG+8(SB)
	LEAQ	const_kstackGuard(AX), CX
	MOVQ	CX, ·kernelG+16(SB)
	MOVQ	CX, ·kernelG+24(SB)
	LEAQ	·kernelG(SB), CX
	MOVQ	CX, ·kernelTLS+0(SB)
	LEAQ	·kernelTLS+8(SB), CX
	MOVQ	CX, ·kernelFS(SB)
	WRFS(CX)

	MOVQ	BX, SP
	SUBQ	$16, SP
	CALL	·boot(SB)
	MOVQ	0(SP), BX	// the runtime's initial stack pointer

	XORL	AX, AX
	WRFS(AX)
	MOVQ	BX, SP
	JMP	_rt0_amd64_linux(SB)

// func syscallEntry()
//
// LSTAR: the SYSCALL target while the Go runtime runs in ring 0 (SDM Vol.
// 3A, 5.8.8). SYSCALL left RCX = return RIP, R11 = RFLAGS (IF, TF, DF, AC
// masked by SFMASK) and did not change RSP. The registers go into the
// current thread's PtRegs (the thread record's frame doubles as the stack
// they are pushed on: its last five words form an IRETQ frame), the x87/SSE
// state into its FXSAVE area; then kernel code runs on the kernel stack with
// FS = kernelFS. On the way out the current thread (perhaps another one) is
// restored from its record and resumed by IRETQ: SYSRET would drop to ring
// 3.
TEXT ·syscallEntry(SB),NOSPLIT|NOFRAME,$0
	MOVQ	SP, ·scratchSP(SB)
	MOVQ	·curThread(SB), SP
	ADDQ	$(thread_Regs+PtRegs__size), SP
	PUSHQ	$const_kernelDS		// SS
	PUSHQ	·scratchSP(SB)		// SP
	PUSHQ	R11			// Flags
	PUSHQ	$const_kernelCS		// CS
	PUSHQ	CX			// IP
	PUSHQ	AX			// OrigAX
	PUSH_REGS

	MOVQ	·curThread(SB), AX
	LEAQ	(thread_FX+15)(AX), DI
	ANDQ	$~15, DI
	FXSAVE64	(DI)
	MOVQ	·kernelFS(SB), BX
	WRFS(BX)
	MOVQ	·kstackTop(SB), SP
	CALL	·syscall(SB)
	JMP	·resume(SB)

// func resume()
//
// Resumes the current thread from its record: FS base, x87/SSE state,
// general registers, then IRETQ through the frame's last five words.
TEXT ·resume(SB),NOSPLIT|NOFRAME,$0
	MOVQ	·curThread(SB), BX
	MOVQ	thread_FSBase(BX), SI
	WRFS(SI)
	LEAQ	(thread_FX+15)(BX), DI
	ANDQ	$~15, DI
	FXRSTOR64	(DI)
	LEAQ	thread_Regs(BX), SP
	POP_REGS
	ADDQ	$8, SP			// OrigAX
	IRETQ

// Exception entry stubs. Each pushes a zero where the CPU pushes no error
// code (SDM Vol. 3A, 6.13), then the vector, and joins excCommon. Whether
// the CPU pushes one comes from amd64.VectorsWithErrorCode: the first two
// bytes are 6A 00 (PUSH 0) where its bit is clear and 90 90 (two NOPs)
// where it is set.
#define EXC(name, vec) \
	TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	BYTE	$(0x6a + ((const_vectorsWithErrorCode>>(vec))&1)*(0x90-0x6a)); \
	BYTE	$(((const_vectorsWithErrorCode>>(vec))&1)*0x90); \
	PUSHQ	$vec; \
	JMP	·excCommon(SB)

EXC(·exc0, 0)
EXC(·exc1, 1)
EXC(·exc2, 2)
EXC(·exc3, 3)
EXC(·exc4, 4)
EXC(·exc5, 5)
EXC(·exc6, 6)
EXC(·exc7, 7)
EXC(·exc8, 8)
EXC(·exc9, 9)
EXC(·exc10, 10)
EXC(·exc11, 11)
EXC(·exc12, 12)
EXC(·exc13, 13)
EXC(·exc14, 14)
EXC(·exc15, 15)
EXC(·exc16, 16)
EXC(·exc17, 17)
EXC(·exc18, 18)
EXC(·exc19, 19)
EXC(·exc20, 20)
EXC(·exc21, 21)
EXC(·exc22, 22)
EXC(·exc23, 23)
EXC(·exc24, 24)
EXC(·exc25, 25)
EXC(·exc26, 26)
EXC(·exc27, 27)
EXC(·exc28, 28)
EXC(·exc29, 29)
EXC(·exc30, 30)
EXC(·exc31, 31)

// func excStubs(t *[32]uint64)
TEXT ·excStubs(SB),NOSPLIT,$0-8
	MOVQ	t+0(FP), DI
	LEAQ	·exc0(SB), AX; MOVQ AX, 0(DI)
	LEAQ	·exc1(SB), AX; MOVQ AX, 8(DI)
	LEAQ	·exc2(SB), AX; MOVQ AX, 16(DI)
	LEAQ	·exc3(SB), AX; MOVQ AX, 24(DI)
	LEAQ	·exc4(SB), AX; MOVQ AX, 32(DI)
	LEAQ	·exc5(SB), AX; MOVQ AX, 40(DI)
	LEAQ	·exc6(SB), AX; MOVQ AX, 48(DI)
	LEAQ	·exc7(SB), AX; MOVQ AX, 56(DI)
	LEAQ	·exc8(SB), AX; MOVQ AX, 64(DI)
	LEAQ	·exc9(SB), AX; MOVQ AX, 72(DI)
	LEAQ	·exc10(SB), AX; MOVQ AX, 80(DI)
	LEAQ	·exc11(SB), AX; MOVQ AX, 88(DI)
	LEAQ	·exc12(SB), AX; MOVQ AX, 96(DI)
	LEAQ	·exc13(SB), AX; MOVQ AX, 104(DI)
	LEAQ	·exc14(SB), AX; MOVQ AX, 112(DI)
	LEAQ	·exc15(SB), AX; MOVQ AX, 120(DI)
	LEAQ	·exc16(SB), AX; MOVQ AX, 128(DI)
	LEAQ	·exc17(SB), AX; MOVQ AX, 136(DI)
	LEAQ	·exc18(SB), AX; MOVQ AX, 144(DI)
	LEAQ	·exc19(SB), AX; MOVQ AX, 152(DI)
	LEAQ	·exc20(SB), AX; MOVQ AX, 160(DI)
	LEAQ	·exc21(SB), AX; MOVQ AX, 168(DI)
	LEAQ	·exc22(SB), AX; MOVQ AX, 176(DI)
	LEAQ	·exc23(SB), AX; MOVQ AX, 184(DI)
	LEAQ	·exc24(SB), AX; MOVQ AX, 192(DI)
	LEAQ	·exc25(SB), AX; MOVQ AX, 200(DI)
	LEAQ	·exc26(SB), AX; MOVQ AX, 208(DI)
	LEAQ	·exc27(SB), AX; MOVQ AX, 216(DI)
	LEAQ	·exc28(SB), AX; MOVQ AX, 224(DI)
	LEAQ	·exc29(SB), AX; MOVQ AX, 232(DI)
	LEAQ	·exc30(SB), AX; MOVQ AX, 240(DI)
	LEAQ	·exc31(SB), AX; MOVQ AX, 248(DI)
	RET

// func excCommon()
//
// The common exception path, on the vector's IST stack. The stub and the
// CPU left: vector, error code, RIP, CS, RFLAGS, RSP, SS. The general
// registers are pushed below them to make an excFrame; the interrupted FS
// base is kept below that, then the x87/SSE state (FXSAVE, 16-byte
// aligned); kernel code runs with FS = kernelFS and may change the frame
// (a fix-up, a redirected RIP) before IRETQ resumes it.
TEXT ·excCommon(SB),NOSPLIT|NOFRAME,$0
	PUSH_REGS
	MOVQ	SP, R12			// the excFrame

	MOVL	$const_msrFSBase, CX
	RDMSR
	SHLQ	$32, DX
	ORQ	DX, AX
	PUSHQ	AX			// -8(R12): the interrupted FS base

	SUBQ	$512, SP
	ANDQ	$~15, SP
	FXSAVE64	(SP)
	MOVQ	·kernelFS(SB), BX
	WRFS(BX)

	SUBQ	$16, SP
	MOVQ	R12, 0(SP)		// argument
	MOVQ	R12, 8(SP)		// kept across the call
	CALL	·handleException(SB)
	MOVQ	8(SP), R12
	ADDQ	$16, SP

	FXRSTOR64	(SP)
	MOVQ	-8(R12), SI
	WRFS(SI)
	MOVQ	R12, SP
	POP_REGS
	ADDQ	$16, SP			// vector, error code
	IRETQ

// FUNC_PC(name, fn) defines name, a func() uint64 that returns the address
// of assembly function fn (its ABI0 entry, which Go code cannot take).
#define FUNC_PC(name, fn) \
	TEXT name(SB),NOSPLIT,$0-8; \
	LEAQ	fn(SB), AX; \
	MOVQ	AX, ret+0(FP); \
	RET

// func faultPanicPC() uint64
FUNC_PC(·faultPanicPC, ·faultPanic)

// func syscallEntryPC() uint64
FUNC_PC(·syscallEntryPC, ·syscallEntry)

// func rawSyscall(nr, a1 uint64) uint64
TEXT ·rawSyscall(SB),NOSPLIT,$0-24
	MOVQ	nr+0(FP), AX
	MOVQ	a1+8(FP), DI
	SYSCALL
	MOVQ	AX, ret+16(FP)
	RET
