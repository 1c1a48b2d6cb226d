//go:build !kernel32host

#include "go_asm.h"
#include "textflag.h"

// The 32-bit kernel. Every routine is position-independent (see main.go):
// relative jumps and calls between routines, data at the fixed addresses of
// the kernel window (const_cpu and the others, negative: the assembler
// takes 32-bit displacements as signed). Interrupts stay masked throughout
// (EFLAGS.IF = 0 in ring 0 and ring 3).

// CR3 switches (Linux x86_32, arch/x86/entry/entry_32.S SWITCH_TO_KERNEL_CR3
// and SWITCH_TO_USER_CR3): the user PDPT is the kernel one + 4 KiB. PAE has
// no PCID: each write flushes the non-global TLB entries and reloads the
// four PDPTEs (SDM Vol. 3A, 4.4.1).
#define TO_KERNEL_OFF(reg)
#define TO_KERNEL_ON(reg) \
	MOVL	CR3, reg; \
	ANDL	$~const_ptiSwitchMask, reg; \
	MOVL	reg, CR3
#define TO_USER_OFF(reg)
#define TO_USER_ON(reg) \
	MOVL	CR3, reg; \
	ORL	$const_ptiSwitchMask, reg; \
	MOVL	reg, CR3

// The steps of leaving and entering IA-32e mode (SDM Vol. 3A, 10.8.5):
// paging off and on (CR0.PG), IA-32e mode off and on (EFER.LME). They use
// EAX (and ECX, EDX for the MSR).
#define PAGING_OFF \
	MOVL	CR0, AX; \
	ANDL	$~const_cr0PG, AX; \
	MOVL	AX, CR0
#define PAGING_ON \
	MOVL	CR0, AX; \
	ORL	$const_cr0PG, AX; \
	MOVL	AX, CR0
#define LME_OFF \
	MOVL	$const_msrEFER, CX; \
	RDMSR; \
	ANDL	$~const_eferLME, AX; \
	WRMSR
#define LME_ON \
	MOVL	$const_msrEFER, CX; \
	RDMSR; \
	ORL	$const_eferLME, AX; \
	WRMSR

// DATA_SEGS loads selector sel into DS and ES through reg.
#define DATA_SEGS(sel, reg) \
	MOVL	$sel, reg; \
	MOVW	reg, DS; \
	MOVW	reg, ES

// SYSEXIT_VSYSCALL returns to ring 3 at the vsyscall return point (the
// task's stack in ECX: SDM Vol. 2B, SYSEXIT).
#define SYSEXIT_VSYSCALL \
	MOVL	(const_cpu+cpuData_SysexitEIP), DX; \
	SYSEXIT

// A stamp is MFENCE;LFENCE;RDTSC: the fences keep the RDTSC from
// executing before the phase's last instructions have completed and their
// stores (a REP MOVS copy's) are globally visible (SDM Vol. 2B, RDTSC), so
// that a copy's store drain stays in its own phase. STAMP_START takes a
// call's first stamp; STAMP(k) adds the cycles since the last stamp to
// phase k's sum and counts it (STAMP_TO). Each phase so holds, besides
// its own work, the last stamp's instructions after its RDTSC and its own
// stamp's fences and RDTSC: STAMP_CALIBRATE measures that cost.
#define NO_STAMP_START
#define NO_STAMP(k)
#define STAMP_START \
	MFENCE; \
	LFENCE; \
	RDTSC; \
	MOVL	AX, (const_cpu+cpuData_PhasePrev)
#define STAMP(k) STAMP_TO(const_cpu+cpuData_Phase, const_cpu+cpuData_PhaseN, k)
#define STAMP_TO(sums, counts, k) \
	MFENCE; \
	LFENCE; \
	RDTSC; \
	MOVL	AX, DX; \
	SUBL	(const_cpu+cpuData_PhasePrev), AX; \
	MOVL	DX, (const_cpu+cpuData_PhasePrev); \
	ADDL	AX, (sums+8*(k)); \
	ADCL	$0, (sums+8*(k)+4); \
	INCL	(counts+4*(k))

// STAMP_CALIBRATE runs a call's stamps back to back, as the trampolines
// take them with nothing between, in StampCalBlocks blocks of
// StampBlockCalls (nothing when CPUData.StampCalOn is 0): each block sums
// each phase's cycles in CPUData.StampCal with the trampolines' very
// instructions, then moves the sums to its row of CPUData.StampBlock
// (KEEP_BLOCK) and starts again from 0. Uses EAX, EBX, ECX, EDX.
#define STAMP_CALIBRATE \
	MOVL	(const_cpu+cpuData_StampCalOn), CX; \
	TESTL	CX, CX; \
	JEQ	calibrated; \
	MOVL	$(const_cpu+cpuData_StampBlock), BX; \
block: \
	MOVL	$const_stampBlockCalls, CX; \
calibrate: \
	STAMP_START; \
	STAMP_TO(const_cpu+cpuData_StampCal, const_cpu+cpuData_StampCalNs, const_PhaseCR3In); \
	STAMP_TO(const_cpu+cpuData_StampCal, const_cpu+cpuData_StampCalNs, const_PhaseCopyIn); \
	STAMP_TO(const_cpu+cpuData_StampCal, const_cpu+cpuData_StampCalNs, const_PhaseDispatch); \
	STAMP_TO(const_cpu+cpuData_StampCal, const_cpu+cpuData_StampCalNs, const_PhaseCopyOut); \
	STAMP_TO(const_cpu+cpuData_StampCal, const_cpu+cpuData_StampCalNs, const_PhaseCR3Out); \
	DECL	CX; \
	JNE	calibrate; \
	KEEP_BLOCK(const_PhaseCR3In); \
	KEEP_BLOCK(const_PhaseCopyIn); \
	KEEP_BLOCK(const_PhaseDispatch); \
	KEEP_BLOCK(const_PhaseCopyOut); \
	KEEP_BLOCK(const_PhaseCR3Out); \
	ADDL	$(8*const_PhaseCount), BX; \
	CMPL	BX, $(const_cpu+cpuData_StampBlock+8*const_PhaseCount*const_stampCalBlocks); \
	JNE	block; \
calibrated:

// KEEP_BLOCK(k) moves phase k's calibration sum (CPUData.StampCal[k]) to
// the block's row at BX (CPUData.StampBlock[block][k]) and zeroes it.
// Uses EAX.
#define KEEP_BLOCK(k) \
	MOVL	(const_cpu+cpuData_StampCal+8*(k)), AX; \
	MOVL	AX, 8*(k)(BX); \
	MOVL	(const_cpu+cpuData_StampCal+8*(k)+4), AX; \
	MOVL	AX, 8*(k)+4(BX); \
	MOVL	$0, (const_cpu+cpuData_StampCal+8*(k)); \
	MOVL	$0, (const_cpu+cpuData_StampCal+8*(k)+4)

// func enter32()
//
// The way in from long mode (SDM Vol. 3A, 10.8.5.4, Switching Out of IA-32e
// Mode Operation). Runs at its physical address, reached by a far return
// from the 64-bit side (i386pae.run32): compatibility mode, CS = KERNEL_CS
// of the 32-bit GDT (loaded with its physical base), the Go kernel's
// 4-level tables, which map this page at its physical address. In: EDI =
// the physical address of the per-CPU data. It moves to the switch stack
// and the switch IDT (per-CPU SwitchStack, SwitchIDT: an NMI from there to
// enter32high's LIDT finds a gate, a handler and a stack in either mode,
// paging on or off; before, the Go IDT takes it), turns paging off (which
// leaves IA-32e mode), clears EFER.LME, loads the run's CR4 and the kernel
// PDPT, turns paging on (PAE) and jumps to enter32high in the kernel window.
TEXT ·enter32(SB),NOSPLIT|NOFRAME,$0
	DATA_SEGS(const_kernelDS, AX)
	MOVW	AX, SS
	XORL	AX, AX
	MOVW	AX, FS
	MOVW	AX, GS
	MOVL	cpuData_SwitchStack(DI), SP
	LIDT	(cpuData_SwitchIDTPtr+2)(DI)
	PAGING_OFF
	LME_OFF
	MOVL	cpuData_CR4(DI), AX
	MOVL	AX, CR4
	MOVL	cpuData_KernelCR3(DI), AX
	MOVL	AX, CR3
	PAGING_ON
	JMP	cpuData_HighEntry(DI)	// the branch that must follow (FF /4, through memory)

// func enter32high()
//
// Continues enter32 in the kernel window: the GDT and IDT at their
// kernel-window addresses, the TSS (its busy bit and the #DF TSS's cleared
// first: the last run may have left them set), then the task's start in
// ring 3 by IRET from the entry stack (SDM Vol. 3A, 6.12.1), after the
// switch to the user PDPT, with the task's arguments in EBX, ECX, EDX,
// ESI, EDI, EBP. Before, for an instrumented run, it calibrates the
// stamps (STAMP_CALIBRATE).
TEXT ·enter32high(SB),NOSPLIT|NOFRAME,$0
	LGDT	((const_cpu+cpuData_GDT)+2)
	LIDT	((const_cpu+cpuData_IDT)+2)
	ANDB	$~const_tssBusy, (const_tssDesc+const_descTypeByte)
	ANDB	$~const_tssBusy, (const_dfTSSDesc+const_descTypeByte)
	MOVL	$const_tssSel, AX
	LTR	AX
	STAMP_CALIBRATE
	MOVL	$const_entryStackTop, SP
	PUSHL	$const_userDS
	PUSHL	(const_cpu+cpuData_UserESP)
	PUSHL	$const_eflagsFixed	// EFLAGS: IF clear, reserved bit 1
	PUSHL	$const_userCS
	PUSHL	(const_cpu+cpuData_UserEIP)
	DATA_SEGS(const_userDS, AX)
	MOVL	(const_cpu+cpuData_UserCR3), AX
	MOVL	AX, CR3
	MOVL	((const_cpu+cpuData_Args)+0), BX
	MOVL	((const_cpu+cpuData_Args)+4), CX
	MOVL	((const_cpu+cpuData_Args)+8), DX
	MOVL	((const_cpu+cpuData_Args)+12), SI
	MOVL	((const_cpu+cpuData_Args)+16), DI
	MOVL	((const_cpu+cpuData_Args)+20), BP
	XORL	AX, AX
	IRETL

// func leave32()
//
// Ends the run: called by a jump, on the kernel side's CR3, from any stack,
// with the reason (and status or fault) stored in the per-CPU data. It
// loads the GDT at its physical address (the kernel window is gone in long
// mode), moves to the switch stack and the switch IDT (see enter32: they
// serve an NMI until back64 loads the Go IDT), loads what leave32low needs
// into registers, and jumps to leave32low at its physical address.
TEXT ·leave32(SB),NOSPLIT|NOFRAME,$0
	DATA_SEGS(const_kernelDS, AX)	// the task may have left DS unusable
	LGDT	((const_cpu+cpuData_GDTPhys)+2)
	MOVL	(const_cpu+cpuData_SwitchStack), SP
	MOVL	(const_cpu+cpuData_Phys), DI	// before the switch IDT: its handlers count through EDI
	LIDT	((const_cpu+cpuData_SwitchIDTPtr)+2)
	MOVL	(const_cpu+cpuData_LowPML4), BX
	MOVL	(const_cpu+cpuData_LeaveLow), AX
	JMP	AX

// func leave32low()
//
// The way back to long mode (SDM Vol. 3A, 10.8.5, Initializing IA-32e
// Mode), at its physical address. In: EDI = the physical address of the
// per-CPU data, EBX = a PML4 below 4 GiB that maps this page at its
// physical address. Paging off, CR3 = the PML4, EFER.LME on, paging on
// (IA-32e mode, compatibility mode: CS is still 32-bit), then a far jump
// through the per-CPU data's far pointer to landing64 and KERNEL64_CS.
TEXT ·leave32low(SB),NOSPLIT|NOFRAME,$0
	PAGING_OFF
	MOVL	BX, CR3
	LME_ON
	PAGING_ON
	// JMP FAR [EDI+cpuData_Far] (FF /5, m16:32), as bytes: the assembler
	// has no memory form of LJMP.
	BYTE $0xff; BYTE $0xaf; LONG $cpuData_Far

// func landing64()
//
// 64-bit code, written as bytes (the 386 assembler encodes no 64-bit
// mode): reached in 64-bit mode at KERNEL64_CS with RDI's low half = the
// per-CPU data's physical address. The upper halves of the registers are
// undefined after the mode switch (SDM Vol. 1, 3.4.1.1), so it
// zero-extends ESP (an NMI through the switch IDT's IA-32e gate pushes its
// frame at the whole RSP: SDM Vol. 3A, 6.14.2) and EDI, then jumps to the
// Go image's back64 through the per-CPU data.
//	89 E4            MOV ESP, ESP
//	89 FF            MOV EDI, EDI
//	FF A7 disp32     JMP QWORD PTR [RDI+cpuData_Back64]
TEXT ·landing64(SB),NOSPLIT|NOFRAME,$0
	BYTE $0x89; BYTE $0xe4
	BYTE $0x89; BYTE $0xff
	BYTE $0xff; BYTE $0xa7; LONG $cpuData_Back64

// The minimal SYSENTER trampoline: the mechanism alone. SYSENTER enters
// at SYSENTER_EIP with ESP = SYSENTER_ESP (the entry stack's top),
// CS = SYSENTER_CS, SS = CS+8 and interrupts masked (SDM Vol. 2B,
// SYSENTER). The task's registers: EAX the call, EBX, ECX, EDX, ESI, EDI
// its arguments, EBP its stack pointer (Linux's convention: the vsyscall
// routine pushes ECX, EDX and EBP and moves ESP to EBP). The trampoline
// switches to the kernel side's CR3 (EAX saved on the entry stack), to the
// kernel stack, calls dispatch, goes back to the entry stack and the user
// side's CR3 and SYSEXITs to the vsyscall return point (EDX) with the
// task's stack (ECX = EBP).
#define SYSENTER_MINIMAL(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	MINIMAL_DISPATCH(TO_KERNEL); \
	MOVL	$const_entryStackTop, SP; \
	TO_USER(CX); \
	MOVL	BP, CX; \
	SYSEXIT_VSYSCALL

// MINIMAL_DISPATCH is the minimal trampolines' way to dispatch: the kernel
// side's CR3 (EAX saved on the entry stack meanwhile), the kernel stack,
// the call.
#define MINIMAL_DISPATCH(TO_KERNEL) \
	PUSHL	AX; \
	TO_KERNEL(AX); \
	POPL	AX; \
	MOVL	$const_kernelStackTop, SP; \
	CALL	·dispatch(SB)

SYSENTER_MINIMAL(·sysenterMinimalOff, TO_KERNEL_OFF, TO_USER_OFF)
SYSENTER_MINIMAL(·sysenterMinimalOn, TO_KERNEL_ON, TO_USER_ON)

// The minimal INT 0x80 trampoline: the gate (DPL 3, interrupt gate) enters
// on TSS.ESP0, the entry stack's top, with the task's SS, ESP, EFLAGS, CS
// and EIP pushed (SDM Vol. 3A, 6.12.1). The kernel side's CR3, the kernel
// stack, dispatch, back to the frame on the entry stack, the user side's
// CR3, IRET. Every register but EAX comes back as it was.
#define INT80_MINIMAL(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	MINIMAL_DISPATCH(TO_KERNEL); \
	MOVL	$(const_entryStackTop-24), SP; \
	MOVL	CX, 0(SP); \
	TO_USER(CX); \
	POPL	CX; \
	IRETL

INT80_MINIMAL(·int80MinimalOff, TO_KERNEL_OFF, TO_USER_OFF)
INT80_MINIMAL(·int80MinimalOn, TO_KERNEL_ON, TO_USER_ON)

// The linux trampolines, shaped like Linux's x86_32 entry under PTI
// (arch/x86/entry/entry_32.S, entry_SYSENTER_32 and entry_INT80_32 with
// SWITCH_TO_KERNEL_STACK and SWITCH_TO_ENTRY_STACK): the full pt_regs frame
// is built on the entry stack (SAVE_ALL, with CLD and the user data
// segments loaded), the kernel side's CR3 is loaded, the frame is copied to
// the task stack, the call is dispatched from the frame, its result stored
// in it, the frame (or, trimmed, EFLAGS and EAX: 8 bytes) is copied back to
// the entry stack, the user side's CR3 is loaded and the registers come
// back from the entry stack's frame. The copies are REP MOVSB or REP MOVSL
// (COPY_B, COPY_L); the STAMP macros record the phases' TSC cycles in the
// per-CPU data in the instrumented variants (using EAX and EDX only), and
// are empty in the others.

// SAVE_ALL pushes pt_regs from gs down to bx (the entry pushed ss to
// orig_ax), clears DF and loads the user data segments, as Linux.
// The segment registers are pushed as bytes (0F A8, 0F A0, 06, 1E: PUSH
// GS, FS, ES, DS), which the assembler does not have; a 32-bit PUSH of a
// segment register may write only the slot's low 16 bits (SDM Vol. 2B,
// PUSH), as in Linux's frame.
#define SAVE_ALL \
	BYTE $0x0f; BYTE $0xa8; \
	BYTE $0x0f; BYTE $0xa0; \
	BYTE $0x06; \
	BYTE $0x1e; \
	PUSHL	AX; \
	PUSHL	BP; \
	PUSHL	DI; \
	PUSHL	SI; \
	PUSHL	DX; \
	PUSHL	CX; \
	PUSHL	BX; \
	CLD; \
	DATA_SEGS(const_userDS, DX)

#define COPY_B(from, to) COPY_FRAME(to, const_ptRegsWords*4, MOVSB)
#define COPY_L(from, to) COPY_FRAME(to, const_ptRegsWords, MOVSL)
// COPY_FRAME copies the frame at the stack pointer to to, count MOVS
// steps, and moves the stack pointer there.
#define COPY_FRAME(to, count, MOVS) \
	MOVL	SP, SI; \
	MOVL	$to, DI; \
	MOVL	$(count), CX; \
	REP; MOVS; \
	MOVL	$to, SP

// DISPATCH_FRAME calls dispatch with the frame's orig_ax and arguments and
// stores the result in its ax.
#define DISPATCH_FRAME \
	MOVL	ptRegs_OrigAX(SP), AX; \
	FRAME_ARGS; \
	CALL	·dispatch(SB); \
	MOVL	AX, ptRegs_AX(SP)

// FRAME_ARGS loads the system-call argument registers (EBX, ECX, EDX,
// ESI, EDI, EBP) from the frame at the stack pointer.
#define FRAME_ARGS \
	MOVL	ptRegs_BX(SP), BX; \
	MOVL	ptRegs_CX(SP), CX; \
	MOVL	ptRegs_DX(SP), DX; \
	MOVL	ptRegs_SI(SP), SI; \
	MOVL	ptRegs_DI(SP), DI; \
	MOVL	ptRegs_BP(SP), BP

// FRAME_SYSEXIT loads from the frame what SYSEXIT leaves as the task
// had it, EBX, ESI, EDI, EBP, and the task's stack into ECX (EDX is the
// return point).
#define FRAME_SYSEXIT \
	MOVL	ptRegs_BX(SP), BX; \
	MOVL	ptRegs_SI(SP), SI; \
	MOVL	ptRegs_DI(SP), DI; \
	MOVL	ptRegs_BP(SP), BP; \
	MOVL	ptRegs_SP(SP), CX

// The SYSENTER exit with the whole frame copied back: the registers from
// the entry stack's frame after the user side's CR3, SYSEXIT to the
// vsyscall return point with the task's stack.
#define EXIT_FULL(COPY, TO_USER, STAMP) \
	COPY(SP, const_entryFrame); \
	STAMP(const_PhaseCopyOut); \
	TO_USER(AX); \
	STAMP(const_PhaseCR3Out); \
	FRAME_SYSEXIT; \
	PUSHL	ptRegs_Flags(SP); \
	POPFL; \
	MOVL	ptRegs_AX(SP), AX; \
	SYSEXIT_VSYSCALL

// The SYSENTER exit trimmed as Linux's: EFLAGS and EAX go to the entry
// stack (8 bytes), the other registers come from the task stack before
// the switch.
#define EXIT_TRIM(COPY, TO_USER, STAMP) \
	EXIT_TRIM_CR3(TO_USER, STAMP); \
	POPFL; \
	POPL	AX; \
	SYSEXIT_VSYSCALL
// EXIT_TRIM_CR3 is EXIT_TRIM up to the user side's CR3: EFLAGS and EAX
// are left on the entry stack.
#define EXIT_TRIM_CR3(TO_USER, STAMP) \
	MOVL	ptRegs_Flags(SP), DI; \
	MOVL	ptRegs_AX(SP), SI; \
	MOVL	DI, (const_entryStackTop-8); \
	MOVL	SI, (const_entryStackTop-4); \
	FRAME_SYSEXIT; \
	MOVL	$(const_entryStackTop-8), SP; \
	STAMP(const_PhaseCopyOut); \
	TO_USER(AX); \
	STAMP(const_PhaseCR3Out)

// EXIT_IRET copies the frame back to the entry stack, loads the user
// side's CR3, the registers from the frame and IRETs.
#define EXIT_IRET(TO_USER) EXIT_IRET_SITE(TO_USER, NO_SITE, iretl)
// EXIT_IRET_SITE is EXIT_IRET with SITE_BEFORE(label) just before the
// IRET (NO_SITE: nothing; VERW_SITE: the mitigated trampoline's VERW).
#define EXIT_IRET_SITE(TO_USER, SITE_BEFORE, label) \
	COPY_L(SP, const_entryFrame); \
	TO_USER(AX); \
	FRAME_ARGS; \
	MOVL	ptRegs_AX(SP), AX; \
	ADDL	$ptRegs_IP, SP; \
	SITE_BEFORE(label); \
	IRETL
#define NO_SITE(label)

// SYSENTER_FRAME completes pt_regs on the stack after SYSENTER, as Linux's
// entry_SYSENTER_32: ss, sp (the vsyscall convention's EBP), flags, cs, a
// placeholder ip, orig_ax, SAVE_ALL; then the ip (the vsyscall return
// point, read once the kernel's data segments are loaded), and the flags
// that must not stay on in the kernel (NT, AC, TF) cleared by
// FIX_FLAGS, out of line (Linux: .Lsysenter_fix_flags).
#define SYSENTER_FRAME \
	PUSHL	$const_userDS; \
	PUSHL	BP; \
	PUSHFL; \
	PUSHL	$const_userCS; \
	PUSHL	$0; \
	PUSHL	AX; \
	SAVE_ALL; \
	MOVL	(const_cpu+cpuData_SysexitEIP), AX; \
	MOVL	AX, ptRegs_IP(SP); \
	TESTL	$(const_eflagsNT|const_eflagsAC|const_eflagsTF), ptRegs_Flags(SP); \
	JNE	fixflags; \
flagsok:
#define FIX_FLAGS \
fixflags: \
	PUSHL	$const_eflagsFixed; \
	POPFL; \
	JMP	flagsok

// SYSENTER_LINUX is the linux SYSENTER trampoline: on the entry stack it
// builds the frame (SYSENTER_FRAME) and goes on as described above.
#define SYSENTER_LINUX(name, TO_KERNEL, TO_USER, COPY, EXIT, START, STAMP) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	SYSENTER_FRAME; \
	START; \
	TO_KERNEL(AX); \
	STAMP(const_PhaseCR3In); \
	COPY(SP, const_taskFrame); \
	STAMP(const_PhaseCopyIn); \
	DISPATCH_FRAME; \
	STAMP(const_PhaseDispatch); \
	EXIT(COPY, TO_USER, STAMP); \
	FIX_FLAGS

// SYSENTER_LINUX_SET is SYSENTER_LINUX with each copy (MOVSB, MOVSL, and
// MOVSL with the trimmed exit) under each CR3 mode (off, on), in that
// order, START and STAMP the instrumentation's or none: the routines
// movsbOff to trimOn.
#define SYSENTER_LINUX_SET(movsbOff, movsbOn, movslOff, movslOn, trimOff, trimOn, START, STAMP) \
	SYSENTER_LINUX(movsbOff, TO_KERNEL_OFF, TO_USER_OFF, COPY_B, EXIT_FULL, START, STAMP); \
	SYSENTER_LINUX(movsbOn, TO_KERNEL_ON, TO_USER_ON, COPY_B, EXIT_FULL, START, STAMP); \
	SYSENTER_LINUX(movslOff, TO_KERNEL_OFF, TO_USER_OFF, COPY_L, EXIT_FULL, START, STAMP); \
	SYSENTER_LINUX(movslOn, TO_KERNEL_ON, TO_USER_ON, COPY_L, EXIT_FULL, START, STAMP); \
	SYSENTER_LINUX(trimOff, TO_KERNEL_OFF, TO_USER_OFF, COPY_L, EXIT_TRIM, START, STAMP); \
	SYSENTER_LINUX(trimOn, TO_KERNEL_ON, TO_USER_ON, COPY_L, EXIT_TRIM, START, STAMP)

SYSENTER_LINUX_SET(·sysenterLinuxMovsbOff, ·sysenterLinuxMovsbOn, ·sysenterLinuxMovslOff, ·sysenterLinuxMovslOn, ·sysenterLinuxTrimOff, ·sysenterLinuxTrimOn, NO_STAMP_START, NO_STAMP)
SYSENTER_LINUX_SET(·sysenterStampMovsbOff, ·sysenterStampMovsbOn, ·sysenterStampMovslOff, ·sysenterStampMovslOn, ·sysenterStampTrimOff, ·sysenterStampTrimOn, STAMP_START, STAMP)

// SYSENTER_DIRECT is the linux SYSENTER trampoline as merged in Linux 4.19
// (entry_SYSENTER_32): EFLAGS and EAX saved on the entry stack around the
// CR3 switch, then the task stack, where pt_regs is built directly (no
// copy in); the exit copies EFLAGS and EAX to the entry stack (EXIT_TRIM).
// A frame whose EIP is not the vsyscall return point (a task of the tasks
// kernel that has not run yet, or that entered by INT 0x80) goes back by
// IRET instead, as Linux falls back from SYSEXIT. The instrumented copy
// (START, STAMP, and EDX saved too: SAVE_DX, RESTORE_DX) stamps the CR3
// switch in, the frame's build (the copy-in phase), the dispatch (with
// the tasks kernel: its context switches too), the trimmed copy out and
// the CR3 switch out; the IRET exit, a task's first, is not stamped.
#define SYSENTER_DIRECT(name, TO_KERNEL, TO_USER, SAVE_DX, RESTORE_DX, START, STAMP) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	PUSHFL; \
	PUSHL	AX; \
	SAVE_DX; \
	START; \
	TO_KERNEL(AX); \
	STAMP(const_PhaseCR3In); \
	RESTORE_DX; \
	POPL	AX; \
	POPFL; \
	MOVL	$const_kernelStackTop, SP; \
	SYSENTER_FRAME; \
	STAMP(const_PhaseCopyIn); \
	DISPATCH_FRAME; \
	STAMP(const_PhaseDispatch); \
	MOVL	ptRegs_IP(SP), AX; \
	CMPL	AX, (const_cpu+cpuData_SysexitEIP); \
	JNE	iret; \
	EXIT_TRIM(COPY_L, TO_USER, STAMP); \
iret: \
	EXIT_IRET(TO_USER); \
	FIX_FLAGS

#define NO_SAVE_DX
#define PUSH_DX PUSHL DX
#define POP_DX POPL DX

SYSENTER_DIRECT(·sysenterLinuxDirectOff, TO_KERNEL_OFF, TO_USER_OFF, NO_SAVE_DX, NO_SAVE_DX, NO_STAMP_START, NO_STAMP)
SYSENTER_DIRECT(·sysenterLinuxDirectOn, TO_KERNEL_ON, TO_USER_ON, NO_SAVE_DX, NO_SAVE_DX, NO_STAMP_START, NO_STAMP)
SYSENTER_DIRECT(·sysenterStampDirectOff, TO_KERNEL_OFF, TO_USER_OFF, PUSH_DX, POP_DX, STAMP_START, STAMP)
SYSENTER_DIRECT(·sysenterStampDirectOn, TO_KERNEL_ON, TO_USER_ON, PUSH_DX, POP_DX, STAMP_START, STAMP)

// SYSENTER_MITIGATED is the direct linux SYSENTER trampoline
// (SYSENTER_DIRECT, Linux 4.19+'s entry_SYSENTER_32, the shape Linux 6.6
// still has) with a site for each speculation mitigation Linux's 32-bit
// entry has, each a TEST of its bit of CPUData.Sites and a JEQ over its
// code (SITE), as package pti's SYS_MITIGATED: the dispatch's call
// through a retpoline thunk (RETPOLINE_CALL_DISPATCH; Linux's
// do_SYSENTER_32 calls the system call through the table, an indirect
// call a retpoline kernel sends through __x86_indirect_thunk_*); after
// the dispatch, an IBPB and an RSB stuffing if the tasks kernel switched
// to another process during it (KState.CR3Loads moved: SWITCH_SITE).
// Linux's switch_mm_irqs_off issues the IBPB before the CR3 load, as the
// 64-bit world's switch does (tasks.switchMM); here it follows it: the
// 32-bit process switch is the tasks kernel's Go code, the same for every
// flavour, and a test of the knob there would lengthen every 32-bit
// process switch, knobs off included, or send it through an indirect
// call. The instructions are the same either way; whether an IBPB costs
// more or less after the CR3 load on silicon is not known, so the 64-bit
// ladder's ibpb rung is the one to set beside Linux's;
// VERW (CLEAR_CPU_BUFFERS) before SYSEXIT, and before IRET: on the
// SYSEXIT path after SYSEXIT's EDX is loaded and before the user's EFLAGS
// come back (VERW writes ZF and SYSEXIT does not restore EFLAGS: Linux's
// "x86/entry_32: Do not clobber user EFLAGS.ZF", 2024), then the user's
// EFLAGS and EAX, which are the user's own values. The direct trampoline is
// the base because it is Linux's shape since 4.19 (pt_regs built on the
// task stack, no copy in). Linux's entry_32.S has no IBRS_ENTER/EXIT, no
// clear_bhb_loop and no SWAPGS: the 32-bit world has no ibrs, bhb or
// lfence site.
#define SYSENTER_MITIGATED(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	PUSHFL; \
	PUSHL	AX; \
	TO_KERNEL(AX); \
	POPL	AX; \
	POPFL; \
	MOVL	$const_kernelStackTop, SP; \
	SYSENTER_FRAME; \
	SITE(const_siteSwitch, saved); \
	MOVL	(const_state+kState_CR3Loads), AX; \
	MOVL	AX, (const_cpu+cpuData_Loads); \
saved: \
	MOVL	ptRegs_OrigAX(SP), AX; \
	FRAME_ARGS; \
	SITE(const_siteRetpoline, direct); \
	RETPOLINE_CALL_DISPATCH(called, spectrap); \
direct: \
	CALL	·dispatch(SB); \
called: \
	MOVL	AX, ptRegs_AX(SP); \
	SWITCH_SITE(switched); \
	MOVL	ptRegs_IP(SP), AX; \
	CMPL	AX, (const_cpu+cpuData_SysexitEIP); \
	JNE	iret; \
	EXIT_TRIM_CR3(TO_USER, NO_STAMP); \
	SITE(const_siteVERW, sysexit); \
	MOVL	(const_cpu+cpuData_SysexitEIP), DX; \
	VERW	(const_cpu+cpuData_VerwSel); \
	POPFL; \
	POPL	AX; \
	SYSEXIT; \
sysexit: \
	POPFL; \
	POPL	AX; \
	SYSEXIT_VSYSCALL; \
iret: \
	EXIT_IRET_SITE(TO_USER, VERW_SITE, iretl); \
	FIX_FLAGS

// SITE skips to label unless bit is set in CPUData.Sites: a disabled
// site costs this TEST and the taken JEQ (Linux patches its sites with
// ALTERNATIVE instead).
#define SITE(bit, label) \
	TESTL	$bit, (const_cpu+cpuData_Sites); \
	JEQ	label

// VERW_SITE is the VERW knob's site before IRET: CLEAR_CPU_BUFFERS
// (arch/x86/include/asm/nospec-branch.h: verw mds_verw_sel).
#define VERW_SITE(label) \
	SITE(const_siteVERW, label); \
	VERW	(const_cpu+cpuData_VerwSel); \
label:

// CALLREL and RETB are CALL rel32 and RET as bytes: the Go assembler has
// no CALL to a label, and rejects a RET its stack bookkeeping does not
// expect. CALLREL's displacement counts from the end of the CALL.
#define CALLREL(rel) BYTE $0xe8; LONG $rel
#define RETB BYTE $0xc3

// RETPOLINE_CALL_DISPATCH calls dispatch (its address from
// CPUData.Dispatch) as Linux's CALL __x86_indirect_thunk_*
// (arch/x86/lib/retpoline.S) with the target on the stack instead of in
// a register (every register carries the call's number or an argument):
// the thunk pushes the target, CALLs over a speculation trap (PAUSE;
// LFENCE; JMP back: 7 bytes), drops the return address the CALL pushed
// (LEAL, which leaves the flags) and RETs to the target; dispatch
// returns after the first CALL (CALLREL(2): over the JMP), whose JMP
// goes on at after.
#define RETPOLINE_CALL_DISPATCH(after, trap) \
	CALLREL(2); \
	JMP	after; \
	PUSHL	(const_cpu+cpuData_Dispatch); \
	CALLREL(7); \
trap: \
	PAUSE; \
	LFENCE; \
	JMP	trap; \
	LEAL	4(SP), SP; \
	RETB

// SWITCH_SITE runs, when the tasks kernel loaded another process's CR3
// during the dispatch (KState.CR3Loads differs from CPUData.Loads), the
// context switch's mitigations: IA32_PRED_CMD.IBPB, as Linux's
// switch_mm_irqs_off with IBPB always on (arch/x86/mm/tlb.c), and the
// RSB stuffed (FILL_RSB), as Linux's __switch_to_asm with
// X86_FEATURE_RSB_CTXSW. Linux runs both inside the switch; here they
// follow it on the way out, so that the plain tasks kernel runs no
// instruction more. Clobbers AX, CX, DX (the exits reload them).
#define SWITCH_SITE(label) \
	SITE(const_siteSwitch, label); \
	MOVL	(const_state+kState_CR3Loads), AX; \
	CMPL	AX, (const_cpu+cpuData_Loads); \
	JEQ	label; \
	TESTL	$const_siteIBPB, (const_cpu+cpuData_Sites); \
	JEQ	noibpb; \
	MOVL	$const_msrPredCmd, CX; \
	MOVL	$const_predCmdIBPB, AX; \
	XORL	DX, DX; \
	WRMSR; \
	INCL	(const_cpu+cpuData_IBPBs); \
noibpb: \
	TESTL	$const_siteRSB, (const_cpu+cpuData_Sites); \
	JEQ	label; \
	FILL_RSB; \
	INCL	(const_cpu+cpuData_RSBFills); \
label:

// FILL_RSB stuffs the return stack buffer with 32 entries that lead to
// INT3, as Linux's __FILL_RETURN_BUFFER(reg, RSB_CLEAR_LOOPS) for i386
// (arch/x86/include/asm/nospec-branch.h: ".rept nr; __FILL_RETURN_SLOT",
// no loop, since i386 does not always have LFENCE; then ADD ESP, 4*nr):
// 32 CALLs over an INT3 each (E8, rel32 1), then ADD ESP, 128 (81 C4
// imm32), bytes that the Go assembler's stack bookkeeping does not see:
// they balance each other.
#define RSB_SLOT BYTE $0xe8; LONG $1; BYTE $0xcc
#define RSB_SLOTS8 RSB_SLOT; RSB_SLOT; RSB_SLOT; RSB_SLOT; RSB_SLOT; RSB_SLOT; RSB_SLOT; RSB_SLOT
#define FILL_RSB \
	RSB_SLOTS8; RSB_SLOTS8; RSB_SLOTS8; RSB_SLOTS8; \
	BYTE $0x81; BYTE $0xc4; LONG $128

// INT80_LINUX is the linux INT 0x80 trampoline: the gate pushed ss to ip;
// orig_ax, SAVE_ALL, the kernel side's CR3, the frame copied to the task
// stack (REP MOVSL), dispatch, copied back, the user side's CR3, the
// registers from the frame, IRET.
#define INT80_LINUX(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	PUSHL	AX; \
	SAVE_ALL; \
	TO_KERNEL(AX); \
	COPY_L(SP, const_taskFrame); \
	DISPATCH_FRAME; \
	EXIT_IRET(TO_USER)

INT80_LINUX(·int80LinuxOff, TO_KERNEL_OFF, TO_USER_OFF)
INT80_LINUX(·int80LinuxOn, TO_KERNEL_ON, TO_USER_ON)

// excEntries are the exception entries: 32 stubs of 16 bytes (IDT gate n
// points at excEntries+16n; vector 8 is a task gate instead, see
// doubleFault) and the common path at +512. A stub pushes 0 where the CPU
// pushes no error code, then the vector, and jumps to the common path,
// which records the exception in the per-CPU data, goes to the kernel
// side's CR3 and ends the run (leave32). The stubs are written as bytes so
// that each is exactly 16 long: 6A 00 (PUSH 0) where
// layout.VectorsWithErrorCode says the CPU pushes no error code, two NOPs
// (90 90) where it pushes one; 6A nn (PUSH n), E9 rel32 (JMP common),
// seven INT3.
#define STUB(n) \
	BYTE $(0x6a + ((const_vectorsWithErrorCode>>(n))&1)*(0x90-0x6a)); \
	BYTE $(((const_vectorsWithErrorCode>>(n))&1)*0x90); \
	BYTE $0x6a; BYTE $(n); \
	BYTE $0xe9; \
	BYTE $((512-(16*(n)+9)) & 0xff); BYTE $(((512-(16*(n)+9)) >> 8) & 0xff); BYTE $0; BYTE $0; \
	BYTE $0xcc; BYTE $0xcc; BYTE $0xcc; BYTE $0xcc; BYTE $0xcc; BYTE $0xcc; BYTE $0xcc

// RECORD copies src, through EAX, to field of the per-CPU data's record
// of how the run ended.
#define RECORD(src, field) \
	MOVL	src, AX; \
	MOVL	AX, (const_cpu+field)

// FAULT_END completes an exception's record in the per-CPU data with
// CR2 and the reason, and ends the run.
#define FAULT_END \
	RECORD(CR2, cpuData_FaultCR2); \
	MOVL	$const_reasonFault, (const_cpu+cpuData_Reason); \
	JMP	·leave32(SB)

TEXT ·excEntries(SB),NOSPLIT|NOFRAME,$0
	STUB(0); STUB(1); STUB(2); STUB(3); STUB(4); STUB(5); STUB(6); STUB(7)
	STUB(8); STUB(9); STUB(10); STUB(11); STUB(12); STUB(13); STUB(14); STUB(15)
	STUB(16); STUB(17); STUB(18); STUB(19); STUB(20); STUB(21); STUB(22); STUB(23)
	STUB(24); STUB(25); STUB(26); STUB(27); STUB(28); STUB(29); STUB(30); STUB(31)
	// +512: vector, error code, EIP, CS, EFLAGS, and from ring 3 ESP, SS.
	// The kernel side's CR3 from the per-CPU data, not by arithmetic: the
	// exception may have come from the kernel side. The data segments
	// may be the task's: the kernel's flat ones first.
	DATA_SEGS(const_kernelDS, AX)
	MOVL	(const_cpu+cpuData_KernelCR3), AX
	MOVL	AX, CR3
	RECORD(0(SP), cpuData_Vector)
	RECORD(4(SP), cpuData_ErrorCode)
	RECORD(8(SP), cpuData_FaultEIP)
	RECORD(12(SP), cpuData_FaultCS)
	LEAL	20(SP), AX		// ESP before the exception, from ring 0
	TESTL	$const_rplMask, 12(SP)
	JEQ	ring0
	MOVL	20(SP), AX		// from ring 3: the pushed ESP
ring0:
	MOVL	AX, (const_cpu+cpuData_FaultESP)
	FAULT_END

// func nmi()
//
// The NMI handler (IDT vector 2, an interrupt gate: from ring 3 on
// TSS.ESP0, the entry stack's top, which nothing uses while a task runs;
// from ring 0 on the interrupted stack, below its stack pointer). It
// counts the NMI in the per-CPU data and resumes the interrupted code by
// IRET, which ends the NMI blocking. It needs no CR3 switch: its text and
// the per-CPU data are in the entry area, mapped in both sides' tables; DS
// may be the task's, so the kernel's is loaded around the count (PUSH DS
// and POP DS as bytes 1E and 1F, which the assembler does not have).
TEXT ·nmi(SB),NOSPLIT|NOFRAME,$0
	BYTE $0x1e
	PUSHL	AX
	MOVL	$const_kernelDS, AX
	MOVW	AX, DS
	INCL	(const_cpu+cpuData_NMIs)
	POPL	AX
	BYTE $0x1f
	IRETL

// func nmiSwitch()
//
// The NMI handler of the switch IDT's legacy gate (protected mode, paging
// off or PAE on the kernel PDPT), at its physical address: it counts the
// NMI in the per-CPU data's SwitchNMIs, through EDI, which holds the
// data's physical address wherever the switch IDT is loaded (enter32
// from its entry to enter32high's LIDT, leave32 from before its LIDT to
// back64's), identity-mapped in each table then in use and reached with
// the flat KERNEL_DS, and resumes the interrupted code. IRET ends the NMI
// blocking and restores the flags.
TEXT ·nmiSwitch(SB),NOSPLIT|NOFRAME,$0
	INCL	cpuData_SwitchNMIs(DI)
	IRETL

// func nmiSwitch64()
//
// The NMI handler of the switch IDT's IA-32e gate (compatibility or
// 64-bit mode on the Go kernel's tables or the low PML4), at its physical
// address: it counts the NMI as nmiSwitch does, through EDI zero-extended
// into RAX (the upper halves of the registers are undefined after the mode
// switch: SDM Vol. 1, 3.4.1.1), and returns by IRETQ, which pops the five
// words of a 64-bit interrupt frame and restores the flags. As bytes: the
// 386 assembler encodes no 64-bit mode.
//	50               PUSH RAX
//	89 F8            MOV EAX, EDI
//	FF 80 disp32     INC DWORD PTR [RAX+cpuData_SwitchNMIs]
//	58               POP RAX
//	48 CF            IRETQ
TEXT ·nmiSwitch64(SB),NOSPLIT|NOFRAME,$0
	BYTE $0x50
	BYTE $0x89; BYTE $0xf8
	BYTE $0xff; BYTE $0x80; LONG $cpuData_SwitchNMIs
	BYTE $0x58
	BYTE $0x48; BYTE $0xcf

// func doubleFault()
//
// The #DF task (Linux x86_32: doublefault_32.c): vector 8 is a task gate
// to the #DF TSS, whose CR3 is the kernel PDPT, whose stack is its own and
// whose EIP is here, so a #DF on a broken stack still comes back as a
// record instead of a triple fault. The task switch pushed the error code
// (0) and saved the interrupted task's registers in the main TSS, where
// the record's EIP (undefined for #DF: SDM Vol. 3A, 6.15, Interrupt 8),
// CS and ESP come from. It set EFLAGS.NT, which long mode would fault on,
// and CR0.TS, which would make the Go side's next SSE instruction raise
// #NM (SDM Vol. 3A, 8.3, Task Switching): both are cleared.
TEXT ·doubleFault(SB),NOSPLIT|NOFRAME,$0
	CLTS
	PUSHFL
	ANDL	$~const_eflagsNT, 0(SP)
	POPFL
	MOVL	$const_vectorDF, (const_cpu+cpuData_Vector)
	RECORD(0(SP), cpuData_ErrorCode)
	RECORD((const_tss+tss32_EIP), cpuData_FaultEIP)
	RECORD((const_tss+tss32_CS), cpuData_FaultCS)
	RECORD((const_tss+tss32_ESP), cpuData_FaultESP)
	FAULT_END

// func dispatch()
//
// The system calls. In: EAX the number, EBX, ECX, EDX, ESI, EDI, EBP the
// arguments (Linux i386's registers). Out: EAX the result; every other
// register kept, except with the tasks kernel on (per-CPU Tasks, linux
// trampolines only), whose calls (all but getppid, work and the
// deliberate faults) go to syscall32 with the pt_regs frame, from which
// the trampoline then restores every register. exit and the deliberate faults end the run and do not
// return.
TEXT ·dispatch(SB),NOSPLIT|NOFRAME,$0
	CMPL	AX, $const_sysGetppid
	JEQ	getppid
	CMPL	AX, $const_sysWork
	JEQ	work
	CMPL	AX, $const_sysKernelFault
	JEQ	fault
	CMPL	AX, $const_sysKernelDoubleFault
	JEQ	doublefault
	CMPL	(const_cpu+cpuData_Tasks), $0
	JNE	tasks
	CMPL	AX, $const_sysExit
	JEQ	exit
	CMPL	AX, $const_sysSample
	JEQ	sample
	MOVL	$-const_enosys, AX
	RET
sample:
	JMP	·sample(SB)
tasks:
	// The tasks kernel (tasks.go): syscall32(the frame), which
	// DISPATCH_FRAME's caller left at 4(SP); Go's ABI0 on 386 takes the
	// argument and returns the result on the stack, and keeps no register.
	LEAL	4(SP), AX
	SUBL	$8, SP
	MOVL	AX, 0(SP)
	CALL	·syscall32(SB)
	MOVL	4(SP), AX
	ADDL	$8, SP
	RET
getppid:
	MOVL	$1, AX
	RET
work:
	// Spend EBX TSC cycles (at most 2^32-1), as pti's sysWork.
	PUSHL	CX
	PUSHL	DX
	RDTSC
	MOVL	AX, CX
spin:
	RDTSC
	SUBL	CX, AX
	CMPL	AX, BX
	JCS	spin
	POPL	DX
	POPL	CX
	XORL	AX, AX
	RET
exit:
	MOVL	BX, (const_cpu+cpuData_Status)
	MOVL	$const_reasonExit, (const_cpu+cpuData_Reason)
	JMP	·leave32(SB)
fault:
	XORL	AX, AX
	MOVL	0(AX), AX		// page 0 is not mapped: #PF in ring 0
	RET
doublefault:
	MOVL	$0x1000, SP		// an unmapped stack: the #PF cannot be
	MOVL	0(SP), AX		// delivered on it, so #DF (its task)
	RET

// RDMSR32(msr, lo) reads MSR msr into the two words at lo (low, high).
// Clobbers AX, CX, DX.
#define RDMSR32(msr, lo) MOVL $msr, CX; RDMSR; MOVL AX, lo; MOVL DX, 4+lo

// func sample()
//
// The sample call (layout.SysSample): records the counters
// KState.SampleSrc names (SampleAPERF: IA32_APERF and IA32_MPERF;
// SampleSMI: MSR_SMI_COUNT; the 64-bit side sets those only for counters
// a #GP-safe read found; SampleNMI: the run's NMI count, CPUData.NMIs,
// which the NMI handler increments; SamplePMU: the MSRs of
// KState.SampleMSR, the performance counters the 64-bit side programmed
// and started, which count on across the mode switch, by slot into
// Sample.PMC) in the next of KState.Samples, unless MaxSamples
// are recorded, and returns 0 in EAX. It keeps every other register: the
// dispatch jumps to it, and the tasks kernel's Go code (do) calls it.
TEXT ·sample(SB),NOSPLIT|NOFRAME,$0
	PUSHL	CX
	PUSHL	DX
	PUSHL	DI
	MOVL	(const_state+kState_SampleN), DI
	CMPL	DI, $const_maxSamples
	JCC	sampled
	INCL	(const_state+kState_SampleN)
	IMULL	$sample32__size, DI
	ADDL	$(const_state+kState_Samples), DI
	TESTL	$const_sampleAPERF, (const_state+kState_SampleSrc)
	JEQ	smi
	RDMSR32(const_msrAPERF, sample32_APERF(DI))
	RDMSR32(const_msrMPERF, sample32_MPERF(DI))
smi:
	TESTL	$const_sampleSMI, (const_state+kState_SampleSrc)
	JEQ	nmi
	RDMSR32(const_msrSMICount, sample32_SMI(DI))
nmi:
	TESTL	$const_sampleNMI, (const_state+kState_SampleSrc)
	JEQ	pmcs
	MOVL	(const_cpu+cpuData_NMIs), CX
	MOVL	CX, sample32_NMI(DI)
	MOVL	$0, 4+sample32_NMI(DI)
pmcs:
	TESTL	$const_samplePMU, (const_state+kState_SampleSrc)
	JEQ	sampled
	PUSHL	SI
	XORL	SI, SI
pmc:
	MOVL	(const_state+kState_SampleMSR)(SI*4), CX
	TESTL	CX, CX
	JEQ	nextpmc
	RDMSR
	MOVL	AX, sample32_PMC(DI)(SI*8)
	MOVL	DX, (4+sample32_PMC)(DI)(SI*8)
nextpmc:
	INCL	SI
	CMPL	SI, $const_samplePMCs
	JCS	pmc
	POPL	SI
sampled:
	POPL	DI
	POPL	DX
	POPL	CX
	XORL	AX, AX
	RET

// func setCR3(v uint32)
//
// Loads CR3 (the tasks kernel's switch between processes).
TEXT ·setCR3(SB),NOSPLIT,$0-4
	MOVL	v+0(FP), AX
	MOVL	AX, CR3
	RET

// func rdtsc() (lo, hi uint32)
TEXT ·rdtsc(SB),NOSPLIT,$0-8
	RDTSC
	MOVL	AX, lo+0(FP)
	MOVL	DX, hi+4(FP)
	RET

// func endRun(reason, status uint32)
//
// Ends the run with reason and status, on the kernel side: leave32.
TEXT ·endRun(SB),NOSPLIT,$0-8
	MOVL	reason+0(FP), AX
	MOVL	AX, (const_cpu+cpuData_Reason)
	MOVL	status+4(FP), AX
	MOVL	AX, (const_cpu+cpuData_Status)
	JMP	·leave32(SB)

// The mitigated trampolines come last in the kernel text, so that the
// routines before them keep their bytes (their CALLs to dispatch too).
SYSENTER_MITIGATED(·sysenterMitigatedOff, TO_KERNEL_OFF, TO_USER_OFF)
SYSENTER_MITIGATED(·sysenterMitigatedOn, TO_KERNEL_ON, TO_USER_ON)
