//go:build !kernel32host

#include "go_asm.h"
#include "textflag.h"

// User text: the ring-3 programs of the 32-bit world, from userText to
// userTextEnd, copied to the task's code pages at layout.UserCode. Calls
// between them are relative; data is the task's, at layout.UserData.

// START_REPEAT and END_REPEAT time a repeat of a program's loop, as
// package pti's TIMED: LFENCE;RDTSC;LFENCE before it, RDTSCP;LFENCE after
// (LFENCE;RDTSC;LFENCE with ParamNoRDTSCP); END_REPEAT stores the 64-bit
// difference at ParamResults, counts the repeat and jumps to the label
// repeat while repeats remain (ParamR).
#define START_REPEAT \
	LFENCE; \
	RDTSC; \
	LFENCE; \
	MOVL	AX, const_uStart; \
	MOVL	DX, (const_uStart+4)
#define END_REPEAT \
	CMPL	const_uNoRDTSCP, $0; \
	JNE	noRDTSCP; \
	RDTSCP; \
	LFENCE; \
	JMP	stamp; \
noRDTSCP: \
	LFENCE; \
	RDTSC; \
	LFENCE; \
stamp: \
	SUBL	const_uStart, AX; \
	SBBL	(const_uStart+4), DX; \
	MOVL	const_uRepeat, CX; \
	MOVL	AX, const_uResults(CX*8); \
	MOVL	DX, (const_uResults+4)(CX*8); \
	INCL	CX; \
	MOVL	CX, const_uRepeat; \
	CMPL	CX, const_uR; \
	JCS	repeat

// SAMPLE makes the sample call (layout.SysSample) when ParamSample is set,
// by the entry it names (SYSENTER through vsyscall for
// layout.SampleSysenter, else INT 0x80): outside the timed regions, before
// each repeat and after the last. The call changes EAX only.
#define SAMPLE \
	CMPL	const_uSample, $0; \
	JEQ	7(PC); \
	MOVL	$const_sysSample, AX; \
	CMPL	const_uSample, $const_sampleSysenter; \
	JNE	3(PC); \
	CALL	·vsyscall(SB); \
	JMP	2(PC); \
	INT	$0x80

// The timed loops' places (issue 21, item 3): on Skylake client CPUs with
// the JCC-erratum microcode a jump, or a macro-fused CMP/TEST/DEC and Jcc,
// that crosses or ends on a 32-byte boundary is not kept in the micro-op
// cache (Intel, "Mitigations for Jump Conditional Code Erratum", 2019).
// Each timed program pads its start (PCALIGN, then NOPs: run once, before
// the first repeat, outside every timed region and sample interval) so
// that its loop's head lands where none of the loop's jumps, nor the
// check of RDTSCP after it, meets a boundary: userSyscalls' on a 32-byte
// boundary (its empty loop, SYSENTER and INT 0x80 share the loop and its
// back-branch), userPing's 15 bytes after one. The user text is copied
// 64-byte aligned (userText), so the offsets hold where the loops run;
// TestLoopPlacement (package i386pae) checks them. NOP1, NOP4 and NOP8
// are the NOPs the SDM recommends (Vol. 2B, NOP, Table 4-12: 90, NOPL
// 0(EAX), NOPL 0(EAX)(EAX*1) with a 32-bit displacement).
#define NOP1 BYTE $0x90
#define NOP4 BYTE $0x0f; BYTE $0x1f; BYTE $0x40; BYTE $0x00
#define NOP8 BYTE $0x0f; BYTE $0x1f; BYTE $0x84; BYTE $0x00; BYTE $0x00; BYTE $0x00; BYTE $0x00; BYTE $0x00

// TIMED_START starts a timed program: ParamRepeat 0, the padding (PCALIGN,
// then HEAD, its NOPs) and, at label repeat, each repeat's sample call and
// START_REPEAT. SYSCALLS_HEAD makes up userSyscalls' 68 bytes from repeat
// to loop to 96, PING_HEAD userPing's 58 to 79.
#define TIMED_START(HEAD) \
	MOVL	$0, const_uRepeat; \
	PCALIGN	$32; \
	HEAD; \
repeat: \
	SAMPLE; \
	START_REPEAT
#define SYSCALLS_HEAD NOP8; NOP8; NOP8; NOP4
#define PING_HEAD NOP8; NOP8; NOP4; NOP1

// func userText()
//
// Marks the start of the user text; never run. Its PCALIGN aligns it, and
// so the user text that Setup copies to the page at layout.UserCode, to
// 64 bytes in the blob: a routine's offset from it in a 64-byte line is
// its address's in the code pages (the loops' places below).
TEXT ·userText(SB),NOSPLIT|NOFRAME,$0
	PCALIGN	$64
	UD2

// func vsyscall()
//
// The system call by SYSENTER, shaped as Linux's __kernel_vsyscall
// (arch/x86/entry/vdso/vdso32/system_call.S): called with the call in EAX
// and its arguments in EBX, ECX, EDX, ESI, EDI; it saves ECX, EDX and EBP
// (SYSEXIT returns with ECX = the stack, EDX = the return point), puts the
// stack pointer in EBP for the kernel and SYSENTERs. The kernel SYSEXITs to
// vsyscallRet, which ends the call.
TEXT ·vsyscall(SB),NOSPLIT|NOFRAME,$0
	PUSHL	CX
	PUSHL	DX
	PUSHL	BP
	MOVL	SP, BP
	SYSENTER

// func vsyscallRet()
//
// The SYSEXIT return point (layout.CPUData.SysexitEIP): pops EBP, EDX and
// ECX and returns to vsyscall's caller, as bytes (5D 5A 59 C3): the
// assembler rejects a RET after more POPs than PUSHes.
TEXT ·vsyscallRet(SB),NOSPLIT|NOFRAME,$0
	BYTE $0x5d; BYTE $0x5a; BYTE $0x59; BYTE $0xc3

// func userSyscalls()
//
// Times system calls: R repeats of N calls of number ParamNr with argument
// ParamArg (EBX; ECX and EDX 0), made by ParamEntry (SYSENTER through vsyscall, INT 0x80, or
// none: the empty loop), each repeat stamped with LFENCE;RDTSC;LFENCE
// before and RDTSCP;LFENCE after (LFENCE;RDTSC;LFENCE with
// ParamNoRDTSCP), the 64-bit differences stored at ParamResults and the
// last call's result at ParamValue, with the sample call (SAMPLE) around
// the repeats; then exit(0) by INT 0x80.
TEXT ·userSyscalls(SB),NOSPLIT|NOFRAME,$0
	TIMED_START(SYSCALLS_HEAD)
	MOVL	const_uN, SI
	MOVL	const_uEntry, DI
	TESTL	SI, SI
	JEQ	done
loop:
	MOVL	const_uNr, AX
	MOVL	const_uArg, BX
	XORL	CX, CX			// lseek's offset and whence: 0, SEEK_SET
	XORL	DX, DX
	CMPL	DI, $0
	JNE	notSysenter
	CALL	·vsyscall(SB)
	JMP	next
	PCALIGN	$32			// never run: SYSENTER's way jumps over it
notSysenter:
	CMPL	DI, $1
	JNE	next
	INT	$0x80
next:
	DECL	SI
	JNE	loop
done:
	MOVL	AX, const_uValue	// the last call's result
	END_REPEAT
	SAMPLE
	MOVL	$const_sysExit, AX
	XORL	BX, BX
	INT	$0x80
	UD2

// func userProbe()
//
// Reads the 4 bytes at ParamAddr into ParamValue and exits with status 0;
// a fault ends the run with the fault's record instead.
TEXT ·userProbe(SB),NOSPLIT|NOFRAME,$0
	MOVL	const_uAddr, AX
	MOVL	0(AX), AX
	MOVL	AX, const_uValue
	MOVL	$const_sysExit, AX
	XORL	BX, BX
	INT	$0x80
	UD2

// SYS makes the system call in EAX (arguments in EBX, ECX, EDX) the way
// the task's ParamEntry says: by SYSENTER through vsyscall, or INT 0x80.
#define SYS \
	CMPL	const_uEntry, $0; \
	JNE	3(PC); \
	CALL	·vsyscall(SB); \
	JMP	2(PC); \
	INT	$0x80

// EXIT_BX exits with the status in EBX.
#define EXIT_BX \
	MOVL	$const_sysExit, AX; \
	SYS; \
	UD2

// func userPing()
//
// The timing side of the ping-pong (lmbench's lat_ctx shape), as package
// pti's: R repeats (ParamR) of N round trips (ParamN), each repeat timed
// as userSyscalls times its calls. A round trip writes the token (the low
// byte of the count) to ParamPingOut and reads the reply from ParamPingIn
// into byte 1 of ParamToken, which must be the token plus pong's mark
// (byte 2): pong adds the mark it finds in its own data page, so a pong
// running in ping's address space fails the check. Then it closes its
// write descriptor, which ends pong, and exits 0; a failed call or a wrong
// reply exits with the failure's status.
TEXT ·userPing(SB),NOSPLIT|NOFRAME,$0
	TIMED_START(PING_HEAD)
	MOVL	const_uN, SI
loop:
	MOVL	SI, AX
	MOVB	AX, const_uToken
	ADDB	(const_uToken+2), AX
	NOTL	AX
	MOVB	AX, (const_uToken+1)
	MOVL	$const_sysWrite, AX
	MOVL	const_uPingOut, BX
	MOVL	$const_uToken, CX
	MOVL	$1, DX
	SYS
	MOVL	$const_pingWriteFailed, BX
	CMPL	AX, $1
	JNE	fail
	MOVL	$const_sysRead, AX
	MOVL	const_uPingIn, BX
	MOVL	$(const_uToken+1), CX
	MOVL	$1, DX
	SYS
	MOVL	$const_pingReadFailed, BX
	CMPL	AX, $1
	JNE	fail
	MOVL	$const_pingBadReply, BX
	MOVB	const_uToken, AX
	ADDB	(const_uToken+2), AX
	CMPB	AX, (const_uToken+1)
	JNE	fail
	DECL	SI
	JNE	loop
	END_REPEAT
	SAMPLE
	MOVL	$const_sysClose, AX
	MOVL	const_uPingOut, BX
	SYS
	XORL	BX, BX
fail:
	EXIT_BX

// func userPong()
//
// Replies, as package pti's pong: reads a byte from ParamPongIn into
// ParamPongToken, adds its mark (byte 1) and writes it to ParamPongOut,
// until the end of its input; then exits 0, or with a failed call's
// status.
TEXT ·userPong(SB),NOSPLIT|NOFRAME,$0
next:
	MOVL	$const_sysRead, AX
	MOVL	const_uPongIn, BX
	MOVL	$const_uPongTok, CX
	MOVL	$1, DX
	SYS
	TESTL	AX, AX
	JEQ	done
	MOVL	$const_pongReadFailed, BX
	CMPL	AX, $1
	JNE	fail
	MOVB	(const_uPongTok+1), AX
	ADDB	AX, const_uPongTok
	MOVL	$const_sysWrite, AX
	MOVL	const_uPongOut, BX
	MOVL	$const_uPongTok, CX
	MOVL	$1, DX
	SYS
	MOVL	$const_pongWriteFailed, BX
	CMPL	AX, $1
	JNE	fail
	JMP	next
done:
	XORL	BX, BX
fail:
	EXIT_BX

// READY_WAIT is the messaging tasks' start protocol, as perf's
// sched-messaging ready(): fds holds the ready descriptor in its low and
// the wake descriptor in its high 16 bits, buf a buffer. It writes a byte
// to the ready pipe, then waits for the start signal: a byte from the
// wake pipe. A failed call goes to fail with its status in EBX.
#define READY_WAIT(fds, buf) \
	MOVL	$const_sysWrite, AX; \
	MOVL	fds, BX; \
	ANDL	$0xffff, BX; \
	MOVL	buf, CX; \
	MOVL	$1, DX; \
	SYS; \
	MOVL	$const_msgReadyFailed, BX; \
	CMPL	AX, $1; \
	JNE	fail; \
	MOVL	$const_sysRead, AX; \
	MOVL	fds, BX; \
	SHRL	$16, BX; \
	MOVL	buf, CX; \
	MOVL	$1, DX; \
	SYS; \
	MOVL	$const_msgWaitFailed, BX; \
	CMPL	AX, $1; \
	JNE	fail

// func userMsgStart()
//
// Gives the messaging run's start signal, as perf's parent: EBX the ready
// pipe's read descriptor, ECX the wake pipe's write descriptor, EDX the
// number of tasks, ESI a buffer of that many bytes, EDI where to store the
// start TSC. It reads a byte from every task, reads the TSC, writes a
// byte for every task into the wake pipe and exits 0 (the kernel reads the
// TSC when the last task exits). Its state is on its stack: 0 ready, 4
// wake, 8 tasks, 12 buffer, 16 TSC's place, 20 bytes read.
TEXT ·userMsgStart(SB),NOSPLIT|NOFRAME,$0
	SUBL	$24, SP
	MOVL	BX, 0(SP)
	MOVL	CX, 4(SP)
	MOVL	DX, 8(SP)
	MOVL	SI, 12(SP)
	MOVL	DI, 16(SP)
	MOVL	$0, 20(SP)
more:
	MOVL	20(SP), AX
	CMPL	AX, 8(SP)
	JCC	all
	MOVL	$const_sysRead, AX
	MOVL	0(SP), BX
	MOVL	12(SP), CX
	ADDL	20(SP), CX
	MOVL	8(SP), DX
	SUBL	20(SP), DX
	SYS
	MOVL	$const_msgReadyFailed, BX
	TESTL	AX, AX
	JLE	fail
	ADDL	AX, 20(SP)
	JMP	more
all:
	LFENCE
	RDTSC
	LFENCE
	MOVL	16(SP), CX
	MOVL	AX, 0(CX)
	MOVL	DX, 4(CX)
	MOVL	$const_sysWrite, AX
	MOVL	4(SP), BX
	MOVL	12(SP), CX
	MOVL	8(SP), DX
	SYS
	MOVL	$const_msgWaitFailed, BX
	CMPL	AX, 8(SP)
	JNE	fail
	XORL	BX, BX
fail:
	EXIT_BX

// MSG_TASK_START is the start of a sender or receiver: a frame of size
// bytes on the stack, its arguments (EBX, ECX, EDX, ESI, EDI, EBP) at 0
// to 20 in it, then READY_WAIT with ready | wake at 20 and the buffer at 12
// (the sender's message, the receiver's receive buffer).
#define MSG_TASK_START(size) \
	SUBL	$(size), SP; \
	MOVL	BX, 0(SP); \
	MOVL	CX, 4(SP); \
	MOVL	DX, 8(SP); \
	MOVL	SI, 12(SP); \
	MOVL	DI, 16(SP); \
	MOVL	BP, 20(SP); \
	READY_WAIT(20(SP), 12(SP))

// func userMsgSender()
//
// A sched-messaging sender: EBX the write descriptor of its group's first
// receiver (the others follow), ECX the receivers, EDX the loops, ESI the
// message (its first 8 bytes: the receiver's index << 24 | the loop
// number, which it writes into each copy, and the sender's number), EDI
// the message size (8 to 4096), EBP ready | wake << 16. After the start
// signal it writes the message to every receiver, loops times, and exits
// 0; a short or failed write exits with msgWriteFailed. Its state is on
// its stack: 0 first descriptor, 4 receivers, 8 loops, 12 message, 16
// size, 20 ready | wake, 24 loop, 28 receiver.
TEXT ·userMsgSender(SB),NOSPLIT|NOFRAME,$0
	MSG_TASK_START(32)
	MOVL	$0, 24(SP)
loop:
	MOVL	$0, 28(SP)
to:
	MOVL	28(SP), AX
	SHLL	$24, AX
	ORL	24(SP), AX
	MOVL	12(SP), CX
	MOVL	AX, 0(CX)
	MOVL	$const_sysWrite, AX
	MOVL	0(SP), BX
	ADDL	28(SP), BX
	MOVL	12(SP), CX
	MOVL	16(SP), DX
	SYS
	MOVL	$const_msgWriteFailed, BX
	CMPL	AX, 16(SP)
	JNE	fail
	INCL	28(SP)
	MOVL	28(SP), AX
	CMPL	AX, 4(SP)
	JNE	to
	INCL	24(SP)
	MOVL	24(SP), AX
	CMPL	AX, 8(SP)
	JNE	loop
	XORL	BX, BX
fail:
	EXIT_BX

// STORE_COUNT stores a receiver's count and 64-bit sum at its results.
#define STORE_COUNT \
	MOVL	16(SP), CX; \
	MOVL	24(SP), AX; \
	MOVL	AX, 0(CX); \
	MOVL	$0, 4(CX); \
	MOVL	28(SP), AX; \
	MOVL	AX, 8(CX); \
	MOVL	32(SP), AX; \
	MOVL	AX, 12(CX)

// func userMsgReceiver()
//
// A sched-messaging receiver: EBX its pipe's read descriptor, ECX the
// messages to receive, EDX the message size (8 to 4096), ESI a buffer of
// that size, EDI where to store two 8-byte words, EBP ready | wake << 16.
// After the start signal it reads whole messages (a read may return part
// of one) and sums each one's 8-byte words at 0, 8, ..., 8*(size/8-1) and
// size-8 (modulo 2^64, as the 64-bit receiver); when all have come it
// stores the count and the sum and exits 0. A failed read or the end of
// the pipe before the last message stores them too and exits with
// msgReadFailed. Its state is on its stack: 0 descriptor, 4 messages, 8
// size, 12 buffer, 16 results' place, 20 ready | wake, 24 count, 28 and
// 32 the sum, 36 bytes of this message so far.
TEXT ·userMsgReceiver(SB),NOSPLIT|NOFRAME,$0
	MSG_TASK_START(40)
	MOVL	$0, 24(SP)
	MOVL	$0, 28(SP)
	MOVL	$0, 32(SP)
msg:
	MOVL	24(SP), AX
	CMPL	AX, 4(SP)
	JCC	done
	MOVL	$0, 36(SP)
part:
	MOVL	$const_sysRead, AX
	MOVL	0(SP), BX
	MOVL	12(SP), CX
	ADDL	36(SP), CX
	MOVL	8(SP), DX
	SUBL	36(SP), DX
	SYS
	TESTL	AX, AX
	JLE	short
	ADDL	AX, 36(SP)
	MOVL	36(SP), AX
	CMPL	AX, 8(SP)
	JCS	part
	MOVL	12(SP), SI
	MOVL	8(SP), DI
	MOVL	-8(SI)(DI*1), AX
	ADDL	AX, 28(SP)
	MOVL	-4(SI)(DI*1), AX
	ADCL	AX, 32(SP)
	XORL	CX, CX
	LEAL	-7(DI), DX
sum:
	MOVL	0(SI)(CX*1), AX
	ADDL	AX, 28(SP)
	MOVL	4(SI)(CX*1), AX
	ADCL	AX, 32(SP)
	ADDL	$8, CX
	CMPL	CX, DX
	JCS	sum
	INCL	24(SP)
	JMP	msg
done:
	STORE_COUNT
	XORL	BX, BX
	JMP	exit
short:
	STORE_COUNT
	MOVL	$const_msgReadFailed, BX
exit:
	EXIT_BX
fail:
	JMP	exit

// func userTextEnd()
//
// Marks the end of the user text; never run.
TEXT ·userTextEnd(SB),NOSPLIT|NOFRAME,$0
	UD2
