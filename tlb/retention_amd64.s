#include "textflag.h"

// func CR3Retention(cr4, first, away, back uint64, pte *uint64, newPTE, oldPTE uint64, va uintptr) (v0, v1 uint64)
TEXT ·CR3Retention(SB),NOSPLIT,$0-80
	MOVQ	cr4+0(FP), AX
	MOVQ	first+8(FP), BX
	MOVQ	away+16(FP), CX
	MOVQ	back+24(FP), DX
	MOVQ	pte+32(FP), SI
	MOVQ	newPTE+40(FP), DI
	MOVQ	oldPTE+48(FP), R10
	MOVQ	va+56(FP), R11
	PUSHFQ
	CLI
	MOVQ	CR3, R8		// the entry CR3 and CR4, put back at the end
	MOVQ	CR4, R9
	MOVQ	AX, CR4
	MOVQ	BX, CR3
	MOVQ	(R11), R12	// the read that fills the TLB entry
	MOVQ	CX, CR3
	MOVQ	DI, (SI)	// the PTE now names the other frame; no INVLPG
	MOVQ	DX, CR3
	MOVQ	(R11), R13	// the kept entry's frame, or the walked PTE's
	MOVQ	R10, (SI)	// repair
	INVLPG	(R11)
	MOVQ	R8, CR3
	MOVQ	R9, CR4
	POPFQ
	MOVQ	R12, v0+64(FP)
	MOVQ	R13, v1+72(FP)
	RET
