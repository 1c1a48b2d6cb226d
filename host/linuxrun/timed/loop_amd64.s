#include "textflag.h"

// The arguments into the loop's registers, the first TSC read into BX,
// the cycles since it into AX, and the results out (timed.go).
#define LOAD_FRAME MOVQ nr+0(FP), R8; MOVQ a0+8(FP), R9; MOVQ a1+16(FP), R10; MOVQ a2+24(FP), R12; MOVQ n+32(FP), R13
#define TSC_BEGIN LFENCE; RDTSC; SHLQ $32, DX; ORQ DX, AX; MOVQ AX, BX
#define LOAD_ARGS MOVQ R8, AX; MOVQ R9, DI; MOVQ R10, SI; MOVQ R12, DX
#define FINISH MOVQ AX, R9; LFENCE; RDTSC; LFENCE; SHLQ $32, DX; ORQ DX, AX; SUBQ BX, AX

// func loop(nr, a0, a1, a2, n, how, fn uintptr) (cycles uint64, ret uintptr)
TEXT ·loop(SB),NOSPLIT,$0-72
	LOAD_FRAME
	CMPQ	how+40(FP), $0
	JEQ	empty
	TSC_BEGIN
	PCALIGN	$32
call:
	LOAD_ARGS
	SYSCALL
	DECQ	R13
	JNZ	call
	JMP	done
empty:
	TSC_BEGIN
	PCALIGN	$32
nocall:
	LOAD_ARGS
	DECQ	R13
	JNZ	nocall
done:
	FINISH
	MOVQ	AX, cycles+56(FP); MOVQ R9, ret+64(FP); RET
