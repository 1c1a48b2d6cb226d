#include "textflag.h"

// The first TSC read into the frame, the arguments into the call's
// registers, and the cycles since the first read and the last return
// value out (timed.go).
#define TSC_BEGIN LFENCE; RDTSC; MOVL AX, t0-8(SP); MOVL DX, t1-4(SP)
#define LOAD_ARGS MOVL nr+0(FP), AX; MOVL a0+4(FP), BX; MOVL a1+8(FP), CX; MOVL a2+12(FP), DX
#define FINISH MOVL AX, SI; LFENCE; RDTSC; LFENCE; SUBL t0-8(SP), AX; SBBL t1-4(SP), DX

// func loop(nr, a0, a1, a2, n, how, fn uintptr) (cycles uint64, ret uintptr)
TEXT ·loop(SB),NOSPLIT,$8-40
	MOVL	n+16(FP), DI
	MOVL	fn+24(FP), SI
	MOVL	how+20(FP), AX
	CMPL	AX, $1
	JEQ	int80
	JGT	vsyscall
	TSC_BEGIN
nocall:
	LOAD_ARGS
	DECL	DI
	JNZ	nocall
	JMP	done
int80:
	TSC_BEGIN
int80loop:
	LOAD_ARGS
	INT	$0x80
	DECL	DI
	JNZ	int80loop
	JMP	done
vsyscall:
	TSC_BEGIN
vsysloop:
	LOAD_ARGS
	CALL	SI
	DECL	DI
	JNZ	vsysloop
done:
	FINISH
	MOVL	AX, cycles_lo+28(FP)
	MOVL	DX, cycles_hi+32(FP)
	MOVL	SI, ret+36(FP)
	RET
