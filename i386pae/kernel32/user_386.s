#include "go_asm.h"
#include "textflag.h"

// User text: the ring-3 programs of the 32-bit world, from userText to
// userTextEnd, copied to the task's code pages at layout.UserCode. Calls
// between them are relative; data is the task's, at layout.UserData.

// func userText()
//
// Marks the start of the user text; never run.
TEXT ·userText(SB),NOSPLIT|NOFRAME,$0
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
// ParamArg, made by ParamEntry (SYSENTER through vsyscall, INT 0x80, or
// none: the empty loop), each repeat stamped with LFENCE;RDTSC;LFENCE
// before and RDTSCP;LFENCE after (LFENCE;RDTSC;LFENCE with
// ParamNoRDTSCP), the 64-bit differences stored at ParamResults; then
// exit(0) by INT 0x80.
TEXT ·userSyscalls(SB),NOSPLIT|NOFRAME,$0
	MOVL	$0, const_uRepeat
repeat:
	LFENCE
	RDTSC
	LFENCE
	MOVL	AX, const_uStart
	MOVL	DX, (const_uStart+4)
	MOVL	const_uN, SI
	MOVL	const_uEntry, DI
	TESTL	SI, SI
	JEQ	done
loop:
	MOVL	const_uNr, AX
	MOVL	const_uArg, BX
	CMPL	DI, $0
	JNE	notSysenter
	CALL	·vsyscall(SB)
	JMP	next
notSysenter:
	CMPL	DI, $1
	JNE	next
	INT	$0x80
next:
	DECL	SI
	JNE	loop
done:
	CMPL	const_uNoRDTSCP, $0
	JNE	noRDTSCP
	RDTSCP
	LFENCE
	JMP	stamp
noRDTSCP:
	LFENCE
	RDTSC
	LFENCE
stamp:
	SUBL	const_uStart, AX
	SBBL	(const_uStart+4), DX
	MOVL	const_uRepeat, CX
	MOVL	AX, const_uResults(CX*8)
	MOVL	DX, (const_uResults+4)(CX*8)
	INCL	CX
	MOVL	CX, const_uRepeat
	CMPL	CX, const_uR
	JCS	repeat
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

// Exit statuses of ping and pong, beside 0 (as package pti's).
#define pingWriteFailed 1
#define pingReadFailed 2
#define pingBadReply 3
#define pongWriteFailed 4
#define pongReadFailed 5

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
	MOVL	$0, const_uRepeat
repeat:
	LFENCE
	RDTSC
	LFENCE
	MOVL	AX, const_uStart
	MOVL	DX, (const_uStart+4)
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
	MOVL	$pingWriteFailed, BX
	CMPL	AX, $1
	JNE	fail
	MOVL	$const_sysRead, AX
	MOVL	const_uPingIn, BX
	MOVL	$(const_uToken+1), CX
	MOVL	$1, DX
	SYS
	MOVL	$pingReadFailed, BX
	CMPL	AX, $1
	JNE	fail
	MOVL	$pingBadReply, BX
	MOVB	const_uToken, AX
	ADDB	(const_uToken+2), AX
	CMPB	AX, (const_uToken+1)
	JNE	fail
	DECL	SI
	JNE	loop
	CMPL	const_uNoRDTSCP, $0
	JNE	noRDTSCP
	RDTSCP
	LFENCE
	JMP	stamp
noRDTSCP:
	LFENCE
	RDTSC
	LFENCE
stamp:
	SUBL	const_uStart, AX
	SBBL	(const_uStart+4), DX
	MOVL	const_uRepeat, CX
	MOVL	AX, const_uResults(CX*8)
	MOVL	DX, (const_uResults+4)(CX*8)
	INCL	CX
	MOVL	CX, const_uRepeat
	CMPL	CX, const_uR
	JCS	repeat
	MOVL	$const_sysClose, AX
	MOVL	const_uPingOut, BX
	SYS
	XORL	BX, BX
fail:
	MOVL	$const_sysExit, AX
	SYS
	UD2

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
	MOVL	$pongReadFailed, BX
	CMPL	AX, $1
	JNE	fail
	MOVB	(const_uPongTok+1), AX
	ADDB	AX, const_uPongTok
	MOVL	$const_sysWrite, AX
	MOVL	const_uPongOut, BX
	MOVL	$const_uPongTok, CX
	MOVL	$1, DX
	SYS
	MOVL	$pongWriteFailed, BX
	CMPL	AX, $1
	JNE	fail
	JMP	next
done:
	XORL	BX, BX
fail:
	MOVL	$const_sysExit, AX
	SYS
	UD2

// func userTextEnd()
//
// Marks the end of the user text; never run.
TEXT ·userTextEnd(SB),NOSPLIT|NOFRAME,$0
	UD2
