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

// func userTextEnd()
//
// Marks the end of the user text; never run.
TEXT ·userTextEnd(SB),NOSPLIT|NOFRAME,$0
	UD2
