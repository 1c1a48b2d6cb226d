//go:build 386 && !kernel32host

#include "textflag.h"

// func copyBytes(dst, src, n uintptr)
//
// Copies n bytes from src to dst (not overlapping) as Linux's x86_32
// memcpy: REP MOVSL, then REP MOVSB for the rest (the tasks kernel's pipe
// copies). DF is clear in the kernel (SAVE_ALL's CLD).
TEXT ·copyBytes(SB),NOSPLIT,$0-12
	MOVL	DI, DX			// ESI and EDI back before returning to Go
	MOVL	SI, AX
	MOVL	dst+0(FP), DI
	MOVL	src+4(FP), SI
	MOVL	n+8(FP), CX
	SHRL	$2, CX
	REP; MOVSL
	MOVL	n+8(FP), CX
	ANDL	$3, CX
	REP; MOVSB
	MOVL	DX, DI
	MOVL	AX, SI
	RET
