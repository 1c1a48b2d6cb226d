#include "go_asm.h"
#include "textflag.h"

// func FlushLoop(op, n, cr4, a, b uint64, desc *[2]uint64) (cycles uint64)
TEXT ·FlushLoop(SB),NOSPLIT,$0-56
	MOVQ	op+0(FP), R8
	MOVQ	n+8(FP), CX
	MOVQ	cr4+16(FP), AX
	MOVQ	a+24(FP), SI
	MOVQ	b+32(FP), DI
	MOVQ	desc+40(FP), R9
	PUSHFQ
	CLI
	MOVQ	CR3, R11	// the entry CR3 and CR4, put back at the end
	MOVQ	CR4, BX
	MOVQ	AX, CR4
	LFENCE
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, R10
	CMPQ	R8, $const_FlushCR3
	JEQ	cr3
	CMPQ	R8, $const_FlushINVLPG
	JEQ	invlpg
	CMPQ	R8, $const_FlushINVPCID
	JEQ	invpcid
	CMPQ	R8, $const_FlushCR4
	JEQ	cr4
	CMPQ	R8, $const_FlushINVLPGLive
	JEQ	invlpglive
empty:
	DECQ	CX
	JNZ	empty
	JMP	done
cr3:
	MOVQ	SI, CR3
	DECQ	CX
	JNZ	cr3
	JMP	done
invlpg:
	INVLPG	(SI)
	DECQ	CX
	JNZ	invlpg
	JMP	done
invlpglive:
	MOVB	(SI), DX	// the load: the translation is in the TLB again
	INVLPG	(SI)
	DECQ	CX
	JNZ	invlpglive
	JMP	done
invpcid:
	INVPCID	(R9), SI
	DECQ	CX
	JNZ	invpcid
	JMP	done
cr4:
	MOVQ	SI, CR4
	MOVQ	DI, CR4
	DECQ	CX
	JNZ	cr4
done:
	LFENCE
	RDTSC
	LFENCE
	SHLQ	$32, DX
	ORQ	DX, AX
	SUBQ	R10, AX
	MOVQ	R11, CR3
	MOVQ	BX, CR4
	POPFQ
	MOVQ	AX, cycles+48(FP)
	RET
