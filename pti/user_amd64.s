#include "go_asm.h"
#include "textflag.h"

// Ring-3 programs. Each is copied to the task's code page and entered by
// toUser with its arguments in RDI, RSI, RDX, R10, R8, R9. They are
// position independent (relative jumps only) and end with the exit system
// call; USER_END marks their end for the copier (UD2 "PTIEND", as the
// entry routines).
#define USER_END BYTE $0x0f; BYTE $0x0b; BYTE $0x50; BYTE $0x54; BYTE $0x49; BYTE $0x45; BYTE $0x4e; BYTE $0x44

// TIMED(LOOP) times R repeats of N iterations of LOOP: RDI = N, RSI = R,
// RDX = where to store the R TSC counts (user data), R10 = the system call
// number, R8 = its argument, R9 = 0 to end a timed region with RDTSCP;
// LFENCE, 1 with LFENCE; RDTSC; LFENCE (no RDTSCP). Each repeat starts with
// LFENCE; RDTSC; LFENCE (SDM Vol. 2B, RDTSC: the first LFENCE waits for
// what came before, the second keeps what follows from starting before the
// read). LOOP, and the system calls in it, keep RBX, RBP and R9-R15.
#define TIMED(LOOP) \
	MOVQ	DI, BX; \
	MOVQ	SI, R12; \
	MOVQ	DX, R13; \
	MOVQ	R10, R14; \
	MOVQ	R8, R15; \
repeat: \
	MOVQ	BX, BP; \
	LFENCE; \
	RDTSC; \
	LFENCE; \
	SHLQ	$32, DX; \
	ORQ	AX, DX; \
	MOVQ	DX, R10; \
loop: \
	LOOP; \
	DECQ	BP; \
	JNE	loop; \
	TESTQ	R9, R9; \
	JNE	nordtscp; \
	RDTSCP; \
	LFENCE; \
	JMP	stamp; \
nordtscp: \
	LFENCE; \
	RDTSC; \
	LFENCE; \
stamp: \
	SHLQ	$32, DX; \
	ORQ	AX, DX; \
	SUBQ	R10, DX; \
	MOVQ	DX, (R13); \
	ADDQ	$8, R13; \
	DECQ	R12; \
	JNE	repeat; \
	MOVL	$const_SysExit, AX; \
	XORL	DI, DI; \
	SYSCALL; \
	USER_END

// The call: number R14, first argument R15, second and third 0 (lseek's
// offset and SEEK_SET).
#define CALL_ONCE MOVQ R14, AX; MOVQ R15, DI; XORL SI, SI; XORL DX, DX; SYSCALL
#define NO_CALL MOVQ R14, AX; MOVQ R15, DI; XORL SI, SI; XORL DX, DX

// userSyscalls times system calls: each iteration makes one.
TEXT ·userSyscalls(SB),NOSPLIT|NOFRAME,$0
	TIMED(CALL_ONCE)

// userEmpty times the same loop without the system call: the overhead to
// subtract.
TEXT ·userEmpty(SB),NOSPLIT|NOFRAME,$0
	TIMED(NO_CALL)

// userProbe reads the 8 bytes at RDI, stores them at RSI and exits with
// status 0; a fault on the read ends the run with the exception instead.
TEXT ·userProbe(SB),NOSPLIT|NOFRAME,$0
	MOVQ	(DI), AX
	MOVQ	AX, (SI)
	MOVL	$const_SysExit, AX
	XORL	DI, DI
	SYSCALL
	USER_END

// func userPrograms(t *[programCount]uint64)
TEXT ·userPrograms(SB),NOSPLIT,$0-8
	MOVQ	t+0(FP), DI
	LEAQ	·userSyscalls(SB), AX
	MOVQ	AX, 0(DI)
	LEAQ	·userEmpty(SB), AX
	MOVQ	AX, 8(DI)
	LEAQ	·userProbe(SB), AX
	MOVQ	AX, 16(DI)
	RET
