#include "go_asm.h"
#include "textflag.h"

// Ring-3 programs. Each is copied to the task's code page and entered by
// toUser with its arguments in RDI, RSI, RDX, R10, R8, R9. They are
// position independent (relative jumps only) and end with the exit system
// call; USER_END marks their end for the copier (UD2 "PTIEND", as the
// entry routines).
#define USER_END BYTE $0x0f; BYTE $0x0b; BYTE $0x50; BYTE $0x54; BYTE $0x49; BYTE $0x45; BYTE $0x4e; BYTE $0x44

// TIMED(LOOP) times R repeats of N iterations of LOOP and falls through
// when done: RDI = N, RSI = R,
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
	JNE	repeat

// EXIT(status) makes the exit system call.
#define EXIT(status) MOVL $const_SysExit, AX; MOVL $(status), DI; SYSCALL

// The call: number R14, first argument R15, second and third 0 (lseek's
// offset and SEEK_SET).
#define CALL_ONCE MOVQ R14, AX; MOVQ R15, DI; XORL SI, SI; XORL DX, DX; SYSCALL
#define NO_CALL MOVQ R14, AX; MOVQ R15, DI; XORL SI, SI; XORL DX, DX

// userSyscalls times system calls: each iteration makes one.
TEXT ·userSyscalls(SB),NOSPLIT|NOFRAME,$0
	TIMED(CALL_ONCE)
	EXIT(0)
	USER_END

// userEmpty times the same loop without the system call: the overhead to
// subtract.
TEXT ·userEmpty(SB),NOSPLIT|NOFRAME,$0
	TIMED(NO_CALL)
	EXIT(0)
	USER_END

// userProbe reads the 8 bytes at RDI, stores them at RSI and exits with
// status 0; a fault on the read ends the run with the exception instead.
TEXT ·userProbe(SB),NOSPLIT|NOFRAME,$0
	MOVQ	(DI), AX
	MOVQ	AX, (SI)
	MOVL	$const_SysExit, AX
	XORL	DI, DI
	SYSCALL
	USER_END

// PING_ONCE is one round trip of the ping-pong: R14 holds the write
// descriptor in its low and the read descriptor in its high 32 bits, R15
// the token buffer. It writes 1 byte (the low byte of the iteration
// count), reads the reply into the next byte, which it first sets to the
// token's complement, and checks it; a short or failed call or a wrong
// reply goes to fail with the exit status in DI.
#define PING_ONCE \
	MOVB	BP, (R15); \
	MOVB	BP, AX; \
	NOTL	AX; \
	MOVB	AX, 1(R15); \
	MOVL	$const_SysWrite, AX; \
	MOVL	R14, DI; \
	MOVQ	R15, SI; \
	MOVL	$1, DX; \
	SYSCALL; \
	MOVL	$pingWriteFailed, DI; \
	CMPQ	AX, $1; \
	JNE	fail; \
	MOVL	$const_SysRead, AX; \
	MOVQ	R14, DI; \
	SHRQ	$32, DI; \
	LEAQ	1(R15), SI; \
	MOVL	$1, DX; \
	SYSCALL; \
	MOVL	$pingReadFailed, DI; \
	CMPQ	AX, $1; \
	JNE	fail; \
	MOVL	$pingBadReply, DI; \
	MOVB	(R15), AX; \
	CMPB	AX, 1(R15); \
	JNE	fail

// Exit statuses of ping and pong, beside 0.
#define pingWriteFailed 1
#define pingReadFailed 2
#define pingBadReply 3
#define pongWriteFailed 4
#define pongReadFailed 5

// userPing is the timing side of the ping-pong (lmbench's lat_ctx shape):
// RDI = N round trips per repeat, RSI = R repeats, RDX = where to store
// the R TSC counts, R10 = the write descriptor | the read descriptor << 32,
// R8 = a 2-byte token buffer, R9 = the RDTSCP flag (as TIMED). Each round
// trip writes a byte to the pong task and reads its echo. At the end it
// closes its write descriptor, which ends the pong task, and exits 0; on a
// failed call or a wrong echo it exits with the status of the failure.
TEXT ·userPing(SB),NOSPLIT|NOFRAME,$0
	TIMED(PING_ONCE)
	MOVL	$const_SysClose, AX
	MOVL	R14, DI
	SYSCALL
	EXIT(0)
fail:
	MOVL	$const_SysExit, AX
	SYSCALL
	USER_END

// userPong echoes: RDI = the read descriptor, RSI = the write descriptor,
// RDX = a 1-byte buffer. It reads a byte and writes it back until the end
// of its input, then exits 0; a failed call exits with its status.
TEXT ·userPong(SB),NOSPLIT|NOFRAME,$0
	MOVQ	DI, R12
	MOVQ	SI, R13
	MOVQ	DX, R14
next:
	MOVL	$const_SysRead, AX
	MOVQ	R12, DI
	MOVQ	R14, SI
	MOVL	$1, DX
	SYSCALL
	TESTQ	AX, AX
	JEQ	done
	MOVL	$pongReadFailed, DI
	CMPQ	AX, $1
	JNE	fail
	MOVL	$const_SysWrite, AX
	MOVQ	R13, DI
	MOVQ	R14, SI
	MOVL	$1, DX
	SYSCALL
	MOVL	$pongWriteFailed, DI
	CMPQ	AX, $1
	JNE	fail
	JMP	next
done:
	EXIT(0)
fail:
	MOVL	$const_SysExit, AX
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
	LEAQ	·userPing(SB), AX
	MOVQ	AX, 24(DI)
	LEAQ	·userPong(SB), AX
	MOVQ	AX, 32(DI)
	RET
