#include "textflag.h"

// func Entry() uint64
TEXT ·Entry(SB),NOSPLIT,$0-8
	LEAQ	·entry(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func entry()
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	PUSHQ	BX
	PUSHQ	CX
	PUSHQ	DX
	PUSHQ	SI
	PUSHQ	DI
	PUSHQ	BP
	PUSHQ	R8
	PUSHQ	R9
	PUSHQ	R10
	PUSHQ	R11
	PUSHQ	R12
	PUSHQ	R13
	PUSHQ	R14
	PUSHQ	R15
	SUBQ	$72, SP			// Syscall's ABI0 frame: 8 arguments and the result
	LEAQ	(72+14*8+8)(SP), BX	// the pt_regs frame, above the return address
	MOVQ	BX, 0(SP)
	MOVQ	AX, 8(SP)
	MOVQ	DI, 16(SP)
	MOVQ	SI, 24(SP)
	MOVQ	DX, 32(SP)
	MOVQ	R10, 40(SP)
	MOVQ	R8, 48(SP)
	MOVQ	R9, 56(SP)
	CALL	·Syscall(SB)
	MOVQ	64(SP), AX
	ADDQ	$72, SP
	POPQ	R15
	POPQ	R14
	POPQ	R13
	POPQ	R12
	POPQ	R11
	POPQ	R10
	POPQ	R9
	POPQ	R8
	POPQ	BP
	POPQ	DI
	POPQ	SI
	POPQ	DX
	POPQ	CX
	POPQ	BX
	RET
