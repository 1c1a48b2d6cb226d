#include "textflag.h"

// func Entry() uint64
TEXT ·Entry(SB),NOSPLIT,$0-8
	LEAQ	·entry(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// ENTRY is a handler's body: it saves the registers, reserves Syscall's
// ABI0 frame (8 arguments and the result), puts the pt_regs frame's
// address in BX by OP SRC, BX (after the 14 pushes and the frame), calls
// Syscall with it and the arguments and restores the registers.
#define ENTRY(OP, SRC) \
	PUSHQ	BX; \
	PUSHQ	CX; \
	PUSHQ	DX; \
	PUSHQ	SI; \
	PUSHQ	DI; \
	PUSHQ	BP; \
	PUSHQ	R8; \
	PUSHQ	R9; \
	PUSHQ	R10; \
	PUSHQ	R11; \
	PUSHQ	R12; \
	PUSHQ	R13; \
	PUSHQ	R14; \
	PUSHQ	R15; \
	SUBQ	$72, SP; \
	OP	SRC, BX; \
	MOVQ	BX, 0(SP); \
	MOVQ	AX, 8(SP); \
	MOVQ	DI, 16(SP); \
	MOVQ	SI, 24(SP); \
	MOVQ	DX, 32(SP); \
	MOVQ	R10, 40(SP); \
	MOVQ	R8, 48(SP); \
	MOVQ	R9, 56(SP); \
	CALL	·Syscall(SB); \
	MOVQ	64(SP), AX; \
	ADDQ	$72, SP; \
	POPQ	R15; \
	POPQ	R14; \
	POPQ	R13; \
	POPQ	R12; \
	POPQ	R11; \
	POPQ	R10; \
	POPQ	R9; \
	POPQ	R8; \
	POPQ	BP; \
	POPQ	DI; \
	POPQ	SI; \
	POPQ	DX; \
	POPQ	CX; \
	POPQ	BX; \
	RET

// func entry()
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	ENTRY(LEAQ, (72+14*8+8)(SP))	// the pt_regs frame, above the return address

// func EntryR11() uint64
TEXT ·EntryR11(SB),NOSPLIT,$0-8
	LEAQ	·entryR11(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func entryR11()
TEXT ·entryR11(SB),NOSPLIT|NOFRAME,$0
	ENTRY(MOVQ, R11)	// the pt_regs frame, on pti's trampoline stack (pti.RegsInR11)

// func fillRSB()
//
// Stuffs the return stack buffer with 32 entries that lead to INT3, as
// Linux's __FILL_RETURN_BUFFER(reg, RSB_CLEAR_LOOPS)
// (arch/x86/include/asm/nospec-branch.h): 16 rounds of two CALLs over an
// INT3 each, the stack pointer put back after each round, then LFENCE
// against a mispredicted JNE. The CALLs (E8, rel32 1: over the INT3) and
// the stack adjustment (ADD RSP, 16) are bytes, which the Go assembler's
// stack bookkeeping does not see: they balance each other. Uses AX.
TEXT ·fillRSB(SB),NOSPLIT|NOFRAME,$0
	MOVL	$16, AX
fill:
	BYTE	$0xe8; LONG $1; BYTE $0xcc
	BYTE	$0xe8; LONG $1; BYTE $0xcc
	BYTE	$0x48; BYTE $0x83; BYTE $0xc4; BYTE $0x10
	DECL	AX
	JNE	fill
	LFENCE
	RET
