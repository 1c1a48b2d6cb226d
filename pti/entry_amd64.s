#include "go_asm.h"
#include "textflag.h"
#include "sweep.h"

// The routines from here to the kernel-text section are copied into the
// entry area's text pages and run there, at another address than they were
// linked at: they use only relative jumps within themselves and absolute
// addresses in the entry area (32-bit displacements, sign-extended: the
// entry area is the top 2 MiB). Each ends with ENTRY_END, amd64.EndMarker
// (UD2 and "PTIEND"), which the copier looks for.
#define ENTRY_END QUAD $const_endMarker

// HANDLER is a built-in handler, body BODY as routine name; COPIED_HANDLER,
// one copied to a page of its own, ends with ENTRY_END.
#define HANDLER(name, BODY) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	BODY
#define COPIED_HANDLER(name, BODY) \
	HANDLER(name, BODY); \
	ENTRY_END

// RDMSR64 reads MSR msr into dst; WRMSR64 writes src to it (64 bits, as
// EDX:EAX; they use AX, CX and DX).
#define RDMSR64(msr, dst) MOVL $msr, CX; RDMSR; SHLQ $32, DX; ORQ DX, AX; MOVQ AX, dst
#define WRMSR64(msr, src) MOVL $msr, CX; MOVQ src, AX; MOVQ AX, DX; SHRQ $32, DX; WRMSR

// SYSRETQ is REX.W + SYSRET (48 0F 07): return to 64-bit ring 3. The Go
// assembler's SYSRET has no REX.W and would return to compatibility mode.
#define SYSRETQ BYTE $0x48; BYTE $0x0f; BYTE $0x07

// ERETU and ERETS (F3/F2 0F 01 CA, amd64.ERETU and amd64.ERETS): Go's
// assembler has neither (FRED specification).
#define ERETU BYTE $0xf3; BYTE $0x0f; BYTE $0x01; BYTE $0xca
#define ERETS BYTE $0xf2; BYTE $0x0f; BYTE $0x01; BYTE $0xca

// LASS_OFF clears CR4.LASS if it is set (a lass run: lass.go), using reg:
// the way from the entry area to the Go kernel's text in the lower half,
// whose instruction fetches LASS forbids in ring 0 (SDM Vol. 3A, chapter 4).
#define LASS_OFF(reg) \
	MOVQ	CR4, reg; \
	BTRQ	$const_cr4LASSBit, reg; \
	JCC	2(PC); \
	MOVQ	reg, CR4

// RECOVER_PF is the leak oracle's recovery of a #PF from ring 3
// (StartRecovering), with RAX saved on the stack and free: while
// entryData.Recovered < RecoverMax it counts the fault, keeps its error
// code (operand ERR) and address (ADDR) in RecoverError and RecoverCR2,
// and points the return frame's RIP (operand RIP) at RecoverRIP; the
// caller then returns to ring 3. A spent recovery goes to label
// norecover.
#define RECOVER_PF(ERR, ADDR, RIP) \
	MOVQ	(const_dataBase+entryData_Recovered), AX; \
	CMPQ	AX, (const_dataBase+entryData_RecoverMax); \
	JCC	norecover; \
	INCQ	AX; \
	MOVQ	AX, (const_dataBase+entryData_Recovered); \
	MOVQ	ERR, AX; \
	MOVQ	AX, (const_dataBase+entryData_RecoverError); \
	MOVQ	ADDR, AX; \
	MOVQ	AX, (const_dataBase+entryData_RecoverCR2); \
	MOVQ	(const_dataBase+entryData_RecoverRIP), AX; \
	MOVQ	AX, RIP

// END_RUN ends a run from the entry area with reason (entryData.Reason):
// LASS_OFF, then runExit in the kernel text (entryData.ExitRun); it ends
// the routine.
#define END_RUN(reason) \
	MOVQ	reason, (const_dataBase+entryData_Reason); \
	LASS_OFF(AX); \
	MOVQ	(const_dataBase+entryData_ExitRun), AX; \
	JMP	AX; \
	ENTRY_END

// CR3 switches, as Linux's SWITCH_TO_KERNEL_CR3 and SWITCH_TO_USER_CR3
// (arch/x86/entry/calling.h): the kernel side is the user side with bits 12
// (which PML4 of the pair) and 11 (user PCID) cleared; with PCIDs, NOFLUSH
// (bit 63) keeps the TLB entries of the PCID switched to.
#define TO_KERNEL_OFF(reg)
#define TO_KERNEL_ON(reg) \
	MOVQ	CR3, reg; \
	ANDQ	$~const_ptiMask, reg; \
	MOVQ	reg, CR3
#define TO_KERNEL_PCID(reg) \
	MOVQ	CR3, reg; \
	ANDQ	$~const_ptiMask, reg; \
	BTSQ	$const_cr3NoflushBit, reg; \
	MOVQ	reg, CR3

#define TO_USER_OFF(reg)
#define TO_USER_ON(reg) \
	MOVQ	CR3, reg; \
	ORQ	$(1<<const_PTIUserPGTableBit), reg; \
	MOVQ	reg, CR3
#define TO_USER_PCID(reg) \
	MOVQ	CR3, reg; \
	ORQ	$const_ptiMask, reg; \
	BTSQ	$const_cr3NoflushBit, reg; \
	MOVQ	reg, CR3

// TO_USER_ASI and TO_USER_ASI_PCID are the asi modes' way back (asi.go):
// only when the kernel went to the sensitive table since the last return
// to ring 3 (entryData.ASISensitive, set by excCommon's ASI fault), they
// clear the flag, write the nonsensitive table's CR3, as TO_USER_ON and
// TO_USER_PCID do, and call asiActions where the run has actions
// (entryData.ASIActionsAt not 0; ASI_ACTIONS); otherwise they write
// nothing. The relative jumps keep them free of labels: SYS_LINUX uses
// its TO_USER twice.
#define TO_USER_ASI(reg) \
	CMPQ	(const_dataBase+entryData_ASISensitive), $0; \
	JEQ	8(PC); \
	MOVQ	$0, (const_dataBase+entryData_ASISensitive); \
	TO_USER_ON(reg); \
	ASI_ACTIONS
#define TO_USER_ASI_PCID(reg) \
	CMPQ	(const_dataBase+entryData_ASISensitive), $0; \
	JEQ	9(PC); \
	MOVQ	$0, (const_dataBase+entryData_ASISensitive); \
	TO_USER_PCID(reg); \
	ASI_ACTIONS

// ASI_ACTIONS calls asiActions, copied to entryData.ASIActionsAt, unless
// that is 0 (a run without asi actions): three instructions.
#define ASI_ACTIONS \
	CMPQ	(const_dataBase+entryData_ASIActionsAt), $0; \
	JEQ	2(PC); \
	CALL	(const_dataBase+entryData_ASIActionsAt)

// MINIMAL_CALL is the minimal trampolines' call: the kernel side's CR3,
// the kernel stack, a call through the system-call table (label nosys
// for a number outside it, which comes back at label back), then the
// stack STACK in the entry area for the user side's CR3 (RDI saved there).
#define MINIMAL_CALL(TO_KERNEL, TO_USER, STACK) \
	TO_KERNEL(SP); \
	MOVQ	(const_dataBase+entryData_TaskStackTop), SP; \
	CMPQ	AX, $const_nsys; \
	JAE	nosys; \
	CALL	(const_dataBase+entryData_Table)(AX*8); \
back: \
	MOVQ	STACK, SP; \
	PUSHQ	DI; \
	TO_USER(DI); \
	POPQ	DI

// SYSCALL_ENTER starts a SYSCALL trampoline: SWAPGS, the task's RSP to
// the entry data.
#define SYSCALL_ENTER \
	SWAPGS; \
	MOVQ	SP, (const_dataBase+entryData_UserRSP)

// SYSCALL_RETURN ends a minimal SYSCALL trampoline: the task's RSP, SWAPGS,
// SYSRETQ, then NOSYS_BACK.
#define SYSCALL_RETURN \
	MOVQ	(const_dataBase+entryData_UserRSP), SP; \
	SWAPGS; \
	SYSRETQ; \
	NOSYS_BACK

// NOSYS_BACK is label nosys, for a number outside the system-call table:
// -ENOSYS in RAX, then the way out at label back.
#define NOSYS_BACK \
nosys: \
	MOVQ	$-const_enosys, AX; \
	JMP	back

// SYS_MINIMAL is the minimal SYSCALL trampoline: the mechanism alone.
// SWAPGS, the task's RSP to the entry area, the kernel side's CR3, the
// kernel stack, a call through the system-call table (the handlers keep
// every register but RAX), the entry stack, the user side's CR3, the
// task's RSP, SWAPGS, SYSRETQ. RCX and R11 hold the return RIP and RFLAGS
// throughout.
#define SYS_MINIMAL(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	SYSCALL_ENTER; \
	MINIMAL_CALL(TO_KERNEL, TO_USER, $const_eEntryStackTop); \
	SYSCALL_RETURN; \
	ENTRY_END

SYS_MINIMAL(·sysMinimalOff, TO_KERNEL_OFF, TO_USER_OFF)
SYS_MINIMAL(·sysMinimalOn, TO_KERNEL_ON, TO_USER_ON)
SYS_MINIMAL(·sysMinimalPCID, TO_KERNEL_PCID, TO_USER_PCID)
SYS_MINIMAL(·sysMinimalASI, TO_KERNEL_OFF, TO_USER_ASI)
SYS_MINIMAL(·sysMinimalASIPCID, TO_KERNEL_OFF, TO_USER_ASI_PCID)

// DISPATCH_PT_REGS calls the handler of pt_regs' orig_ax with the
// arguments from pt_regs and stores its result in pt_regs' ax, or goes to
// label skip for a number outside the table (ax keeps -ENOSYS).
#define DISPATCH_PT_REGS(skip) \
	MOVQ	ptRegs_OrigAX(SP), AX; \
	CMPQ	AX, $const_nsys; \
	JAE	skip; \
	LOAD_ARGS; \
	CALL	(const_dataBase+entryData_Table)(AX*8); \
	MOVQ	AX, ptRegs_AX(SP)

// SYS_LINUX is the SYSCALL trampoline shaped like Linux's entry_SYSCALL_64
// (arch/x86/entry/entry_64.S): after the CR3 and stack switch it builds a
// full struct pt_regs on the kernel stack (PUSH_AND_CLEAR_REGS, with RAX
// = -ENOSYS and the general registers cleared), dispatches from it,
// stores the result, checks that SYSRET is safe (RCX == RIP, R11 ==
// RFLAGS, no TF or RF, a canonical RIP: on Intel CPUs SYSRET with a
// non-canonical RCX faults in ring 0, CVE-2012-0217) and returns by SYSRETQ,
// or by IRETQ when it is not; POP_REGS restores the registers from pt_regs,
// and the way out goes through the entry stack, as Linux's trampoline
// stack, for the CR3 switch. pt_regs' offsets (ptRegs_X, from the stack
// pointer once it is built) come from go_asm.h: linuxabi.PtRegs.
#define SYS_LINUX(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	SYSCALL_ENTER; \
	TO_KERNEL(SP); \
	MOVQ	(const_dataBase+entryData_TaskStackTop), SP; \
	PUSH_AND_CLEAR_REGS; \
	DISPATCH_PT_REGS(done); \
done: \
	RETURN_LINUX(TO_USER, NO_SITE); \
	ENTRY_END

// POP_REGS pops pt_regs from r15 to si, as Linux's POP_REGS
// (arch/x86/entry/calling.h): R11_SLOT and CX_SLOT pop the r11 and cx
// slots (POPQ R11, POPQ CX) or skip them (SKIP_SLOT), as Linux's
// skip_r11rcx does for SYSRET, which has RCX and R11 already loaded.
#define POP_REGS(R11_SLOT, CX_SLOT) \
	POPQ	R15; \
	POPQ	R14; \
	POPQ	R13; \
	POPQ	R12; \
	POPQ	BP; \
	POPQ	BX; \
	R11_SLOT; \
	POPQ	R10; \
	POPQ	R9; \
	POPQ	R8; \
	POPQ	AX; \
	CX_SLOT; \
	POPQ	DX; \
	POPQ	SI
#define SKIP_SLOT ADDQ $8, SP

// PUSH_AND_CLEAR_REGS builds pt_regs on the kernel stack as Linux's
// (arch/x86/entry/calling.h) after SYSCALL, with RAX = -ENOSYS, and
// clears the general registers; PUSH_AND_CLEAR_REGS_FROM does so with
// the user's RSP, RFLAGS and RIP from USER_SP, USER_FLAGS and USER_IP
// (the FRED entry's: from the FRED frame, RCX and R11 being the user's).
#define PUSH_AND_CLEAR_REGS PUSH_AND_CLEAR_REGS_FROM((const_dataBase+entryData_UserRSP), R11, CX)
#define PUSH_AND_CLEAR_REGS_FROM(USER_SP, USER_FLAGS, USER_IP) \
	PUSHQ	$const_userDS; \
	PUSHQ	USER_SP; \
	PUSHQ	USER_FLAGS; \
	PUSHQ	$const_userCS; \
	PUSHQ	USER_IP; \
	PUSHQ	AX; \
	PUSHQ	DI; \
	PUSHQ	SI; \
	PUSHQ	DX; \
	PUSHQ	CX; \
	PUSHQ	$-const_enosys; \
	PUSHQ	R8; \
	PUSHQ	R9; \
	PUSHQ	R10; \
	PUSHQ	R11; \
	PUSHQ	BX; \
	PUSHQ	BP; \
	PUSHQ	R12; \
	PUSHQ	R13; \
	PUSHQ	R14; \
	PUSHQ	R15; \
	XORL	SI, SI; \
	XORL	DX, DX; \
	XORL	CX, CX; \
	XORL	R8, R8; \
	XORL	R9, R9; \
	XORL	R10, R10; \
	XORL	R11, R11; \
	XORL	BX, BX; \
	XORL	BP, BP; \
	XORL	R12, R12; \
	XORL	R13, R13; \
	XORL	R14, R14; \
	XORL	R15, R15

// LOAD_ARGS loads the system call's arguments from pt_regs.
#define LOAD_ARGS \
	MOVQ	ptRegs_DI(SP), DI; \
	MOVQ	ptRegs_SI(SP), SI; \
	MOVQ	ptRegs_DX(SP), DX; \
	MOVQ	ptRegs_R10(SP), R10; \
	MOVQ	ptRegs_R8(SP), R8; \
	MOVQ	ptRegs_R9(SP), R9

// SYSRET_CHECK goes to iret unless SYSRET is safe: RCX == RIP, R11 ==
// RFLAGS, no TF or RF, a canonical RIP (CVE-2012-0217). It loads RCX and
// R11 from pt_regs.
#define SYSRET_CHECK(iret) \
	MOVQ	ptRegs_CX(SP), CX; \
	MOVQ	ptRegs_R11(SP), R11; \
	CMPQ	CX, ptRegs_IP(SP); \
	JNE	iret; \
	CMPQ	R11, ptRegs_Flags(SP); \
	JNE	iret; \
	TESTQ	$const_sysretUnsafeFlags, R11; \
	JNE	iret; \
	MOVQ	CX, AX; \
	SHLQ	$const_canonicalShift, AX; \
	SARQ	$const_canonicalShift, AX; \
	CMPQ	AX, CX; \
	JNE	iret

// RETURN_SYSRET and RETURN_IRET restore the registers from pt_regs, go
// through the entry stack for the CR3 switch (TO_USER) and return by
// SYSRETQ or IRETQ; SITE_BEFORE(label) runs after the last SWAPGS, just
// before the return (NO_SITE: nothing; VERW_SITE: the mitigated
// flavour's VERW).
#define RETURN_SYSRET(TO_USER, SITE_BEFORE, label) \
	POP_REGS(SKIP_SLOT, SKIP_SLOT); \
	MOVQ	SP, DI; \
	MOVQ	$const_eEntryStackTop, SP; \
	PUSHQ	(ptRegs_SP-ptRegs_DI)(DI); \
	PUSHQ	(DI); \
	TO_USER(DI); \
	POPQ	DI; \
	POPQ	SP; \
	SWAPGS; \
	SITE_BEFORE(label); \
	SYSRETQ

#define RETURN_IRET(TO_USER, SITE_BEFORE, label) \
	POP_REGS(POPQ R11, POPQ CX); \
	MOVQ	SP, DI; \
	MOVQ	$const_eEntryStackTop, SP; \
	PUSHQ	(ptRegs_SS-ptRegs_DI)(DI); \
	PUSHQ	(ptRegs_SP-ptRegs_DI)(DI); \
	PUSHQ	(ptRegs_Flags-ptRegs_DI)(DI); \
	PUSHQ	(ptRegs_CS-ptRegs_DI)(DI); \
	PUSHQ	(ptRegs_IP-ptRegs_DI)(DI); \
	PUSHQ	(DI); \
	TO_USER(DI); \
	POPQ	DI; \
	SWAPGS; \
	SITE_BEFORE(label); \
	IRETQ

#define NO_SITE(label)

// RETURN_LINUX is the Linux-shaped trampolines' way out from pt_regs:
// RETURN_SYSRET when SYSRET_CHECK finds SYSRET safe, else RETURN_IRET.
#define RETURN_LINUX(TO_USER, SITE_BEFORE) \
	SYSRET_CHECK(iret); \
	RETURN_SYSRET(TO_USER, SITE_BEFORE, sysret); \
iret: \
	RETURN_IRET(TO_USER, SITE_BEFORE, iretq)

SYS_LINUX(·sysLinuxOff, TO_KERNEL_OFF, TO_USER_OFF)
SYS_LINUX(·sysLinuxOn, TO_KERNEL_ON, TO_USER_ON)
SYS_LINUX(·sysLinuxPCID, TO_KERNEL_PCID, TO_USER_PCID)
SYS_LINUX(·sysLinuxASI, TO_KERNEL_OFF, TO_USER_ASI)
SYS_LINUX(·sysLinuxASIPCID, TO_KERNEL_OFF, TO_USER_ASI_PCID)

// NMI_COUNT counts an NMI as entryNMI (below) describes, keeping every
// register but the flags.
#define NMI_COUNT \
	PUSHQ	AX; \
	PUSHQ	BX; \
	MOVQ	CR3, AX; \
	MOVQ	(const_dataBase+entryData_KernelCR3), BX; \
	BTRQ	$const_cr3NoflushBit, BX; \
	CMPQ	AX, BX; \
	JEQ	nmikernel; \
	MOVQ	(const_dataBase+entryData_KernelCR3), BX; \
	MOVQ	BX, CR3; \
	MOVQ	(const_dataBase+entryData_NMICounter), BX; \
	INCQ	(BX); \
	ORQ	(const_dataBase+entryData_NMIRestore), AX; \
	MOVQ	AX, CR3; \
	JMP	nmidone; \
nmikernel: \
	MOVQ	(const_dataBase+entryData_NMICounter), BX; \
	INCQ	(BX); \
nmidone: \
	POPQ	BX; \
	POPQ	AX

// The FRED entry (fred.go): each FRED_MINIMAL and FRED_LINUX instance is
// copied to the start of a FRED page, where IA32_FRED_CONFIG points, and
// receives every event of ring 3. Event delivery has pushed the FRED frame
// on the entry stack (IA32_FRED_RSP0 = its top, so the frame is at
// eFREDFrame; fredFrame's offsets), swapped GS, loaded the kernel's CS
// and SS and cleared RFLAGS, and left every general register as ring 3
// had it. An event other than SYSCALL (type 7, vector 1: an NMI, an
// exception) goes to fredEvent (FRED_EVENT).
#define FRED_EVENT \
	CMPB	fredFrame_Type(SP), $const_fredTypeOther; \
	JNE	event; \
	CMPB	fredFrame_Vector(SP), $const_fredVectorSyscall; \
	JNE	event

// FRED_MINIMAL is the minimal FRED trampoline, SYS_MINIMAL's mechanism
// under FRED: the event check, the kernel side's CR3, the kernel stack, a
// call through the system-call table (the handlers keep every register
// but RAX), the entry stack's frame, the user side's CR3 and ERETU, which
// pops the frame delivery pushed. No SWAPGS (delivery and ERETU swap GS),
// no saved RSP (the frame holds it), no SYSRET hazard.
#define FRED_MINIMAL(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	FRED_EVENT; \
	MINIMAL_CALL(TO_KERNEL, TO_USER, $const_eFREDFrame); \
	ERETU; \
	NOSYS_BACK; \
event: \
	JMP	(const_dataBase+entryData_FREDEvent); \
	ENTRY_END

FRED_MINIMAL(·fredMinimalOff, TO_KERNEL_OFF, TO_USER_OFF)
FRED_MINIMAL(·fredMinimalOn, TO_KERNEL_ON, TO_USER_ON)
FRED_MINIMAL(·fredMinimalPCID, TO_KERNEL_PCID, TO_USER_PCID)

// FRED_LINUX is the FRED trampoline shaped like Linux's
// asm_fred_entrypoint_user (FRED_ENTER: PUSH_AND_CLEAR_REGS; FRED_EXIT:
// POP_REGS; ERETU), with SYS_LINUX's CR3 switch: after it, a full struct
// pt_regs on the kernel stack, its RIP, RFLAGS and RSP from the FRED frame
// (Linux builds it on the FRED stack itself, which under isolation is the
// entry stack: the kernel stack is not mapped on the user side). The rest
// does not fit the 256 bytes before the ring-0 entry point: the
// trampoline jumps to its mode's FRED_LINUX_EXIT in the entry text
// (entryData.FREDExit), one JMP more than the path needs (Linux's FRED
// stub leaves the page too, by a CALL to fred_entry_from_user).
#define FRED_LINUX(name, TO_KERNEL) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	FRED_EVENT; \
	TO_KERNEL(SP); \
	MOVQ	(const_dataBase+entryData_TaskStackTop), SP; \
	PUSH_AND_CLEAR_REGS_FROM((const_eFREDFrame+fredFrame_RSP), (const_eFREDFrame+fredFrame_RFLAGS), (const_eFREDFrame+fredFrame_RIP)); \
	JMP	(const_dataBase+entryData_FREDExit); \
event: \
	JMP	(const_dataBase+entryData_FREDEvent); \
	ENTRY_END

FRED_LINUX(·fredLinuxOff, TO_KERNEL_OFF)
FRED_LINUX(·fredLinuxOn, TO_KERNEL_ON)
FRED_LINUX(·fredLinuxPCID, TO_KERNEL_PCID)

// FRED_LINUX_EXIT is the rest of a FRED_LINUX trampoline, in the entry
// text: the dispatch from pt_regs (as SYS_LINUX's), the result stored,
// and the way out by RETURN_ERETU, with no SYSRET check: ERETU returns to
// any canonical RIP with any RFLAGS.
//
// RETURN_ERETU is RETURN_IRET's FRED counterpart: every register restored
// from pt_regs, a FRED return frame built on the entry stack from
// pt_regs' RIP, CS, RFLAGS, RSP and SS (the task returned to may be
// another than the one that entered, after a context switch of the tasks
// kernel: the delivered frame is the entering task's), the user side's
// CR3 and ERETU. Only the error code slot and the five words ERETU pops
// are written (it reads nothing above SS). Linux's FRED_EXIT pops
// pt_regs where it was built, on the FRED stack, and has nothing to copy.
#define RETURN_ERETU(TO_USER) \
	POP_REGS(POPQ R11, POPQ CX); \
	MOVQ	SP, DI; \
	MOVQ	$(const_eEntryStackTop-16), SP; \
	PUSHQ	(ptRegs_SS-ptRegs_DI)(DI); \
	PUSHQ	(ptRegs_SP-ptRegs_DI)(DI); \
	PUSHQ	(ptRegs_Flags-ptRegs_DI)(DI); \
	PUSHQ	(ptRegs_CS-ptRegs_DI)(DI); \
	PUSHQ	(ptRegs_IP-ptRegs_DI)(DI); \
	PUSHQ	$0; \
	PUSHQ	(DI); \
	TO_USER(DI); \
	POPQ	DI; \
	ERETU

#define FRED_LINUX_EXIT(name, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	DISPATCH_PT_REGS(done); \
done: \
	RETURN_ERETU(TO_USER); \
	ENTRY_END

FRED_LINUX_EXIT(·fredLinuxExitOff, TO_USER_OFF)
FRED_LINUX_EXIT(·fredLinuxExitOn, TO_USER_ON)
FRED_LINUX_EXIT(·fredLinuxExitPCID, TO_USER_PCID)

// fredEvent is the FRED entry's event path, copied after each FRED
// trampoline at amd64.FREDRing0Entry: it is the ring-0 entry of every
// event in ring 0 during a FRED run, and the FRED trampolines jump to it
// (entryData.FREDEvent) for every event of ring 3 but SYSCALL; the FRED
// frame is on the stack. An NMI is counted as entryNMI counts it
// (NMI_COUNT: the kernel side's CR3 for the count, the interrupted CR3
// back) and returns by ERETU to ring 3, by ERETS within ring 0, as the
// frame's CS says. A #PF from ring 3 while the run recovers faults (the
// leak oracle's) is recovered as excCommon recovers it (RECOVER_PF), its
// address from the frame's event data, and returns by ERETU. Any other
// event ends the run as excCommon does, from the FRED frame: its vector,
// error code, RIP, CS, RSP, and its event data as CR2 (a #PF's faulting
// address, as Bochs's cpu/fred.cc and Linux's fred_event_data read it).
TEXT ·fredEvent(SB),NOSPLIT|NOFRAME,$0
	CMPB	fredFrame_Type(SP), $const_fredTypeNMI
	JNE	notnmi
	NMI_COUNT
	TESTQ	$const_rplMask, fredFrame_CS(SP)
	JEQ	ring0
	ERETU
ring0:
	ERETS
notnmi:
	// The leak oracle's recovery, as excCommon's: a hardware #PF from
	// ring 3, its address in the frame's event data.
	CMPB	fredFrame_Type(SP), $const_fredTypeHardware
	JNE	fatal
	CMPB	fredFrame_Vector(SP), $const_vectorPF
	JNE	fatal
	TESTQ	$const_rplMask, fredFrame_CS(SP)
	JEQ	fatal
	PUSHQ	AX			// the frame is 8 bytes further from here on
	RECOVER_PF((fredFrame_ErrorCode+8)(SP), (fredFrame_EventData+8)(SP), (fredFrame_RIP+8)(SP))
	POPQ	AX
	ERETU
norecover:
	POPQ	AX
fatal:
	MOVQ	(const_dataBase+entryData_KernelCR3), AX
	MOVQ	AX, CR3
	MOVBQZX	fredFrame_Vector(SP), AX
	MOVQ	AX, (const_dataBase+entryData_Vector)
	MOVQ	fredFrame_ErrorCode(SP), AX
	MOVQ	AX, (const_dataBase+entryData_ErrorCode)
	MOVQ	fredFrame_RIP(SP), AX
	MOVQ	AX, (const_dataBase+entryData_FaultRIP)
	MOVQ	fredFrame_CS(SP), AX
	MOVWQZX	AX, AX
	MOVQ	AX, (const_dataBase+entryData_FaultCS)
	MOVQ	fredFrame_RSP(SP), AX
	MOVQ	AX, (const_dataBase+entryData_FaultRSP)
	MOVQ	fredFrame_EventData(SP), AX
	MOVQ	AX, (const_dataBase+entryData_FaultCR2)
	END_RUN($const_ReasonFault)

// toUser starts the task: entered from enterUser on the entry stack, on
// the kernel side's CR3 with interrupts masked, it builds the IRETQ frame
// to ring 3 (SDM Vol. 3A, 6.14.3), after loading entryData.UserCR4 if it
// is set (a lass run's CR4.LASS), switches to the user side's CR3, loads
// the task's arguments, clears the other registers and IRETQs. toUserFRED
// does the same for a run whose entry is FRED, where an IRET to ring 3 is
// #GP: it builds a FRED return frame (the IRETQ frame between 16 bytes of
// zeros above, the event data and reserved slots, and an error code below)
// and returns by ERETU, which pops it (FRED specification).
#define START_TASK(BELOW_FRAME, RETURN) \
	MOVQ	(const_dataBase+entryData_UserCR4), AX; \
	TESTQ	AX, AX; \
	JEQ	2(PC); \
	MOVQ	AX, CR4; \
	PUSHQ	$const_userDS; \
	PUSHQ	(const_dataBase+entryData_UserRSP0); \
	PUSHQ	$const_userFlags; \
	PUSHQ	$const_userCS; \
	PUSHQ	(const_dataBase+entryData_UserRIP); \
	BELOW_FRAME; \
	MOVQ	(const_dataBase+entryData_UserCR3), AX; \
	MOVQ	AX, CR3; \
	MOVQ	(const_dataBase+entryData_Args), DI; \
	MOVQ	(const_dataBase+entryData_Args+8), SI; \
	MOVQ	(const_dataBase+entryData_Args+16), DX; \
	MOVQ	(const_dataBase+entryData_Args+24), R10; \
	MOVQ	(const_dataBase+entryData_Args+32), R8; \
	MOVQ	(const_dataBase+entryData_Args+40), R9; \
	XORL	AX, AX; \
	XORL	BX, BX; \
	XORL	CX, CX; \
	PUSHQ	$0; \
	POPQ	BP; \
	XORL	R11, R11; \
	XORL	R12, R12; \
	XORL	R13, R13; \
	XORL	R14, R14; \
	XORL	R15, R15; \
	RETURN; \
	ENTRY_END

// (BP is cleared too: no kernel address leaks to ring 3.)
#define NO_ERROR_CODE
#define FRED_ERROR_CODE PUSHQ $0

TEXT ·toUser(SB),NOSPLIT|NOFRAME,$0
	START_TASK(NO_ERROR_CODE, IRETQ)

TEXT ·toUserFRED(SB),NOSPLIT|NOFRAME,$0
	PUSHQ	$0			// reserved
	PUSHQ	$0			// event data
	START_TASK(FRED_ERROR_CODE, ERETU)

// excCommon is the common path of the exception entries of a run: the
// IDT's 32 gates point at stubs that Setup writes into the entry text
// (amd64.ExceptionStub), each of which pushes 0 where the CPU pushes no
// error code, then the vector, and jumps here. It records the exception in
// the entry data, goes to the kernel side, clears CR4.LASS (LASS_OFF) and
// ends the run (runExit).
//
// But a #PF from ring 3 while the run recovers faults (the leak oracle's:
// entryData.Recovered < RecoverMax) returns to ring 3 instead: it counts
// the fault, keeps its CR2 and error code, points the IRET frame's RIP at
// RecoverRIP, drops the vector and error code and IRETQs, every register
// kept. It has not left the user side: the CR3 is still the user side's
// and GS was not swapped (the entry data and this stack are mapped in
// both tables), so the IRETQ alone goes back (SDM Vol. 3A, 6.14.3).
//
// And a kernel #PF that is an ASI fault (asi.go: a page not present, on
// the nonsensitive table, in the sensitive blocks' span) resumes the
// faulting access on the sensitive table: the CR3 written, the flag set,
// the transition counted, RAX pushed and popped, the flags restored by
// the IRETQ.
TEXT ·excCommon(SB),NOSPLIT|NOFRAME,$0
	// Vector, error code, RIP, CS, RFLAGS, RSP, SS on the entry stack.
	TESTQ	$const_rplMask, 24(SP)
	JEQ	kernel
	CMPQ	0(SP), $const_vectorPF
	JNE	user
	PUSHQ	AX			// the frame is 8 bytes further from here on
	RECOVER_PF(16(SP), CR2, 24(SP))
	POPQ	AX
	ADDQ	$16, SP			// the vector and the error code
	IRETQ
norecover:
	POPQ	AX
user:
	SWAPGS
	JMP	fatal
kernel:
	// An ASI fault (asi.go: a page not present, on the nonsensitive
	// table, at an address in [ASILo, ASIHi), none when ASIHi is 0) goes
	// to the sensitive table, is counted and retried, every register
	// kept; any other kernel fault ends the run.
	CMPQ	0(SP), $const_vectorPF
	JNE	fatal
	TESTQ	$const_pfP, 8(SP)
	JNE	fatal
	PUSHQ	AX			// the frame is 8 bytes further from here on
	MOVQ	CR3, AX
	BTQ	$const_PTIUserPGTableBit, AX
	JCC	notasi
	MOVQ	CR2, AX
	CMPQ	AX, (const_dataBase+entryData_ASILo)
	JCS	notasi
	CMPQ	AX, (const_dataBase+entryData_ASIHi)
	JCC	notasi
	MOVQ	CR3, AX
	ANDQ	$~const_ptiMask, AX
	ORQ	(const_dataBase+entryData_ASINoflush), AX
	MOVQ	AX, CR3
	MOVQ	$1, (const_dataBase+entryData_ASISensitive)
	INCQ	(const_dataBase+entryData_ASITransitions)
	POPQ	AX
	ADDQ	$16, SP			// the vector and the error code
	IRETQ
notasi:
	POPQ	AX
fatal:
	// The kernel side's CR3 from the entry data, not by arithmetic: without
	// isolation the one table need not be 8 KiB aligned, and bit 12 of its
	// address is then not the user-table bit.
	MOVQ	(const_dataBase+entryData_KernelCR3), AX
	MOVQ	AX, CR3
	MOVQ	0(SP), AX
	MOVQ	AX, (const_dataBase+entryData_Vector)
	MOVQ	8(SP), AX
	MOVQ	AX, (const_dataBase+entryData_ErrorCode)
	MOVQ	16(SP), AX
	MOVQ	AX, (const_dataBase+entryData_FaultRIP)
	MOVQ	24(SP), AX
	MOVQ	AX, (const_dataBase+entryData_FaultCS)
	MOVQ	40(SP), AX
	MOVQ	AX, (const_dataBase+entryData_FaultRSP)
	MOVQ	CR2, AX
	MOVQ	AX, (const_dataBase+entryData_FaultCR2)
	END_RUN($const_ReasonFault)

// entryNMI is the NMI handler of a run (IDT vector 2, IST3: an entry-area
// stack of its own, so it is valid whatever RSP the NMI interrupts: ring 3,
// a trampoline before or after its stack switch, ring 0). It counts the
// NMI in the kernel's counter and resumes the interrupted code, as Linux's
// paranoid entry (arch/x86/entry/entry_64.S, paranoid_entry and
// paranoid_exit): an NMI can arrive on the user side's CR3 or the kernel
// side's, so it saves CR3, switches to the kernel side's unless already
// there (SAVE_AND_SWITCH_TO_KERNEL_CR3, arch/x86/entry/calling.h; the
// kernel side from the entry data, as excCommon: without isolation bit 12
// of the one table says nothing), and writes the saved value back only if
// it switched (RESTORE_CR3), with NOFLUSH under PCID (entryData.NMIRestore)
// so that the user PCID keeps its TLB entries. The interrupted CR3 reads
// with bit 63 clear, as the kernel side's compares. It touches no GS (no
// SWAPGS: nothing here reads per-CPU data through it) and keeps every
// register but the flags, which IRETQ restores. NMI_COUNT is that count,
// which fredEvent shares.
TEXT ·entryNMI(SB),NOSPLIT|NOFRAME,$0
	NMI_COUNT
	IRETQ
	ENTRY_END

// The deferred modes' routines (deferred.go), copied into the deferred
// entry text (EntryDeferText) and OnNoSwitch's handler page
// (EntryNoSwitchText), pages mapped in both tables of those modes only.
// As Chartre's RFC "x86/pti: Defer CR3 switch to C code" (Linux 5.10-rc4):
// the trampoline does not write CR3; it moves to the trampoline stack
// (mapped in both tables, as the RFC's per-task PTI stack) and calls the
// mode's dispatcher (entryData.Dispatch), which switches to the kernel
// table, runs the handler on the task's kernel stack and switches back.

// DISPATCH is a dispatcher: called from a deferred trampoline on the
// trampoline stack, on the user table, with the system call's number in
// RAX (below nsys) and its arguments in RDI, RSI, RDX, R10, R8, R9. It
// switches to the kernel table (TO_KERNEL, with RDI saved on the
// trampoline stack), moves to the task's kernel stack, keeping the
// trampoline stack's pointer there, calls the handler from the system-call
// table, comes back to the trampoline stack and switches to the user table
// of the process then current (a context switch in the handler may have
// loaded another's kernel table). It keeps every register but RAX, as the
// handlers do: R11 (the linux trampolines' pt_regs address, RegsInR11) and
// RCX reach the handler as the trampoline left them.
#define DISPATCH(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	PUSHQ	DI; \
	TO_KERNEL(DI); \
	MOVQ	SP, DI; \
	MOVQ	(const_dataBase+entryData_TaskStackTop), SP; \
	PUSHQ	DI; \
	MOVQ	(DI), DI; \
	CALL	(const_dataBase+entryData_Table)(AX*8); \
	POPQ	SP; \
	TO_USER(DI); \
	POPQ	DI; \
	RET; \
	ENTRY_END

DISPATCH(·dispatchOn, TO_KERNEL_ON, TO_USER_ON)
DISPATCH(·dispatchPCID, TO_KERNEL_PCID, TO_USER_PCID)

// NOSWITCH_MINIMAL and NOSWITCH_LINUX are OnNoSwitch's choice, RAX holding
// a number below nsys: when entryData.NoSwitch has a handler for it, they
// call it on the trampoline stack and the user table (no CR3 write) and
// go on at label back (minimal) or stored (linux); otherwise they fall
// through to the dispatcher's call. NOSWITCH_NONE is OnDefer's: nothing.
#define NOSWITCH_NONE
#define NOSWITCH_MINIMAL \
	CMPQ	(const_dataBase+entryData_NoSwitch)(AX*8), $0; \
	JEQ	doswitch; \
	CALL	(const_dataBase+entryData_NoSwitch)(AX*8); \
	JMP	back; \
doswitch:
#define NOSWITCH_LINUX \
	CMPQ	(const_dataBase+entryData_NoSwitch)(AX*8), $0; \
	JEQ	doswitch; \
	CALL	(const_dataBase+entryData_NoSwitch)(AX*8); \
	JMP	stored; \
doswitch:

// SYS_MINIMAL_DEFER is the minimal SYSCALL trampoline of the deferred
// modes: SWAPGS, the task's RSP to the entry data, the trampoline stack,
// NOSWITCH, a call of the dispatcher (which writes CR3 both ways), the
// task's RSP, SWAPGS, SYSRETQ. No CR3 write of its own. RCX and R11 hold
// the return RIP and RFLAGS throughout.
#define SYS_MINIMAL_DEFER(name, NOSWITCH) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	SYSCALL_ENTER; \
	MOVQ	$const_eTrampStackTop, SP; \
	CMPQ	AX, $const_nsys; \
	JAE	nosys; \
	NOSWITCH; \
	CALL	(const_dataBase+entryData_Dispatch); \
back: \
	SYSCALL_RETURN; \
	ENTRY_END

SYS_MINIMAL_DEFER(·sysMinimalDefer, NOSWITCH_NONE)
SYS_MINIMAL_DEFER(·sysMinimalNoSwitch, NOSWITCH_MINIMAL)

// SYS_LINUX_DEFER is the Linux-shaped SYSCALL trampoline of the deferred
// modes: SYS_LINUX's pt_regs frame, register clearing and SYSRET checks,
// but the frame is built on the trampoline stack, on the user table, and
// the dispatcher writes CR3 around the handler, which gets the frame's
// address in R11 (RegsInR11: the tasks kernel's context switch swaps the
// frame there). The way out pops the frame where it is and returns by
// SYSRETQ, or IRETQ when SYSRET is unsafe, with no stack switch and no
// CR3 write of its own.
#define SYS_LINUX_DEFER(name, NOSWITCH) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	SYSCALL_ENTER; \
	MOVQ	$const_eTrampStackTop, SP; \
	PUSH_AND_CLEAR_REGS; \
	MOVQ	ptRegs_OrigAX(SP), AX; \
	CMPQ	AX, $const_nsys; \
	JAE	done; \
	LOAD_ARGS; \
	NOSWITCH; \
	MOVQ	SP, R11; \
	CALL	(const_dataBase+entryData_Dispatch); \
stored: \
	MOVQ	AX, ptRegs_AX(SP); \
done: \
	SYSRET_CHECK(iret); \
	POP_REGS(SKIP_SLOT, SKIP_SLOT); \
	POPQ	DI; \
	MOVQ	(ptRegs_SP-ptRegs_OrigAX)(SP), SP; \
	SWAPGS; \
	SYSRETQ; \
iret: \
	POP_REGS(POPQ R11, POPQ CX); \
	POPQ	DI; \
	ADDQ	$8, SP; \
	SWAPGS; \
	IRETQ; \
	ENTRY_END

SYS_LINUX_DEFER(·sysLinuxDefer, NOSWITCH_NONE)
SYS_LINUX_DEFER(·sysLinuxNoSwitch, NOSWITCH_LINUX)

// GETPPID and WORK are the bodies of the getppid and work handlers, in
// the kernel text (sysGetppid, sysWork) and copied for OnNoSwitch
// (nsGetppid, nsWork): work spends RDI TSC cycles and returns 0; both keep
// every register but RAX.
#define GETPPID \
	MOVL	$1, AX; \
	RET
#define WORK \
	PUSHQ	DX; \
	PUSHQ	R8; \
	RDTSC; \
	SHLQ	$32, DX; \
	ORQ	DX, AX; \
	LEAQ	(AX)(DI*1), R8; \
spin: \
	RDTSC; \
	SHLQ	$32, DX; \
	ORQ	DX, AX; \
	CMPQ	AX, R8; \
	JCS	spin; \
	POPQ	R8; \
	POPQ	DX; \
	XORL	AX, AX; \
	RET

// OnNoSwitch's handlers, run on the user table from EntryNoSwitchText by
// the no-switch trampolines, on the trampoline stack: they read no data.

// func nsGetppid()
COPIED_HANDLER(·nsGetppid, GETPPID)

// func nsWork()
COPIED_HANDLER(·nsWork, WORK)

// SYS_MITIGATED is the linux flavour's trampoline (SYS_LINUX) with a
// site for each speculation mitigation of Linux's entry path
// (mitigations.go), each a TEST of its bit of entryData.Sites and a JEQ
// over its code (SITE): LFENCE after SWAPGS (FENCE_SWAPGS_KERNEL_ENTRY);
// after PUSH_AND_CLEAR_REGS, IBRS_ENTER (IA32_SPEC_CTRL from
// entryData.SpecCtrlEntry) and clear_bhb_loop (CLEAR_BRANCH_HISTORY); the
// dispatch's indirect call through a retpoline thunk; IBRS_EXIT before
// the registers come back; VERW (CLEAR_CPU_BUFFERS) after the last SWAPGS,
// before SYSRETQ or IRETQ, as Linux 6.6's entry_64.S places them. The
// AX, CX and DX the sites clobber are reloaded from pt_regs (or cleared,
// and dispatch reads only AX and the argument registers).
#define SYS_MITIGATED(name, TO_KERNEL, TO_USER) \
TEXT name(SB),NOSPLIT|NOFRAME,$0; \
	SWAPGS; \
	SITE(const_siteLFENCE, fenced); \
	LFENCE; \
fenced: \
	MOVQ	SP, (const_dataBase+entryData_UserRSP); \
	TO_KERNEL(SP); \
	MOVQ	(const_dataBase+entryData_TaskStackTop), SP; \
	PUSH_AND_CLEAR_REGS; \
	SITE(const_siteIBRS, ibrsin); \
	WRMSR64(const_msrSpecCtrl, (const_dataBase+entryData_SpecCtrlEntry)); \
ibrsin: \
	SITE(const_siteBHB, bhb); \
	CLEAR_BHB_LOOP(bhbone, bhbthree, bhbdone); \
bhb: \
	MOVQ	ptRegs_OrigAX(SP), AX; \
	CMPQ	AX, $const_nsys; \
	JAE	done; \
	LOAD_ARGS; \
	SITE(const_siteRetpoline, direct); \
	MOVQ	(const_dataBase+entryData_Table)(AX*8), R11; \
	RETPOLINE_CALL_R11(called, spectrap); \
direct: \
	CALL	(const_dataBase+entryData_Table)(AX*8); \
called: \
	MOVQ	AX, ptRegs_AX(SP); \
done: \
	SITE(const_siteIBRS, ibrsout); \
	WRMSR64(const_msrSpecCtrl, (const_dataBase+entryData_SpecCtrlExit)); \
ibrsout: \
	RETURN_LINUX(TO_USER, VERW_SITE); \
	ENTRY_END

// SITE skips to label unless bit is set in entryData.Sites: a disabled
// site costs this TEST and the taken JEQ (Linux patches its sites with
// ALTERNATIVE instead).
#define SITE(bit, label) \
	TESTQ	$bit, (const_dataBase+entryData_Sites); \
	JEQ	label

// VERW_SITE is the VERW knob's site: CLEAR_CPU_BUFFERS.
#define VERW_SITE(label) \
	SITE(const_siteVERW, label); \
	VERW	(const_dataBase+entryData_VerwSel); \
label:

// CALLREL and RETB are CALL rel32 and RET as bytes: the Go assembler has
// no CALL to a label, and rejects a RET its stack bookkeeping does not
// expect. CALLREL's displacement counts from the end of the CALL; the
// sizes it skips are checked on the built image (host/image,
// TestMitigatedTrampolines).
#define CALLREL(rel) BYTE $0xe8; LONG $rel
#define RETB BYTE $0xc3
#define JMPNOP BYTE $0xeb; BYTE $0x01; BYTE $0x90

// func asiActions()
//
// asiActions runs the asi modes' actions on the way back to the
// nonsensitive table that entryData.ASIActions turns on (site bits of
// experiment.Config.ASIActions), each a TEST of its bit and a JEQ over
// it, in this order: rsb, the return stack buffer stuffed with 32 entries
// that lead to INT3 (as tasks' fillRSB and Linux's
// __FILL_RETURN_BUFFER(reg, RSB_CLEAR_LOOPS),
// arch/x86/include/asm/nospec-branch.h); l1d, IA32_FLUSH_CMD.L1D_FLUSH
// (SDM Vol. 4, Table 2-2, 10BH: write back and invalidate the L1 data
// cache; CPUID.(EAX=07H,ECX=0):EDX[28], which pti.Plan checks); verw,
// VERW of the kernel data selector (CLEAR_CPU_BUFFERS), last, as Linux
// puts it last before the return (here the way back's pops of DI and the
// user RSP from the entry stack, and SWAPGS, still follow it). TO_USER_ASI
// calls it, after the CR3 write, only after an ASI fault. It keeps every
// register but the flags; it runs copied into the entry area, on the
// entry stack (3 slots for its saves, 2 for the stuffing's CALLs).
TEXT ·asiActions(SB),NOSPLIT|NOFRAME,$0
	TESTQ	$const_siteRSB, (const_dataBase+entryData_ASIActions)
	JEQ	rsbdone
	PUSHQ	AX
	MOVL	$16, AX
rsb:
	CALLREL(1)
	BYTE	$0xcc
	CALLREL(1)
	BYTE	$0xcc
	BYTE	$0x48; BYTE $0x83; BYTE $0xc4; BYTE $0x10	// ADDQ $16, SP: the two CALLs' slots
	DECL	AX
	JNE	rsb
	LFENCE
	POPQ	AX
rsbdone:
	TESTQ	$const_siteL1D, (const_dataBase+entryData_ASIActions)
	JEQ	l1ddone
	PUSHQ	AX
	PUSHQ	CX
	PUSHQ	DX
	MOVL	$const_msrFlushCmd, CX
	MOVL	$const_flushCmdL1D, AX
	XORL	DX, DX
	WRMSR
	POPQ	DX
	POPQ	CX
	POPQ	AX
l1ddone:
	TESTQ	$const_siteVERW, (const_dataBase+entryData_ASIActions)
	JEQ	verwdone
	VERW	(const_dataBase+entryData_VerwSel)
verwdone:
	RET
	ENTRY_END

// CLEAR_BHB_LOOP is Linux's clear_bhb_loop (arch/x86/entry/entry_64.S),
// inline: five nested CALLs, each followed by five taken JMPs, overwrite
// the branch history; LFENCE after. Linux aligns the two CALL/RET blocks
// to 64 bytes, "for performance and not for safety"; here they follow
// each other. CALLREL(2) skips the JMP after it, CALLREL(1) the RET.
// The taken JMP over a NOP is bytes (JMPNOP): the Go assembler would
// send the JNE to it straight to its target.
#define CLEAR_BHB_LOOP(one, three, end) \
	PUSHQ	BP; \
	MOVQ	SP, BP; \
	MOVL	$5, CX; \
	CALLREL(2); \
	JMP	end; \
one: \
	CALLREL(1); \
	RETB; \
	MOVL	$5, AX; \
three: \
	JMPNOP; \
	SUBL	$1, AX; \
	JNE	three; \
	SUBL	$1, CX; \
	JNE	one; \
	RETB; \
end: \
	LFENCE; \
	POPQ	BP

// RETPOLINE_CALL_R11 calls the address in R11 as Linux's
// CALL __x86_indirect_thunk_r11 (arch/x86/lib/retpoline.S): the thunk
// CALLs over a speculation trap (PAUSE; LFENCE; JMP back: 7 bytes),
// overwrites its return address with R11 and RETs there; the callee
// returns after the first CALL, whose JMP goes on at after.
#define RETPOLINE_CALL_R11(after, trap) \
	CALLREL(2); \
	JMP	after; \
	CALLREL(7); \
trap: \
	PAUSE; \
	LFENCE; \
	JMP	trap; \
	MOVQ	R11, (SP); \
	RETB

SYS_MITIGATED(·sysMitigatedOff, TO_KERNEL_OFF, TO_USER_OFF)
SYS_MITIGATED(·sysMitigatedOn, TO_KERNEL_ON, TO_USER_ON)
SYS_MITIGATED(·sysMitigatedPCID, TO_KERNEL_PCID, TO_USER_PCID)

// Kernel text: not copied.

// func enterUser()
//
// Runs the prepared task: saves Go's context (RSP, RBP, CR3, CR4, GDT, IDT,
// TR, LSTAR, FS and GS bases) in the entry data, switches to the task's kernel
// side (CR3 first with PCID 0, as CR4.PCIDE may be set only then; CR4;
// CR3 with the kernel PCID), loads the entry area's GDT, TSS and IDT,
// points LSTAR at the run's trampoline, and continues in toUser on the
// entry stack. It returns when runExit restores the context: the task
// exited or a CPU exception ended it (entryData.Reason). Interrupts are
// masked throughout.
TEXT ·enterUser(SB),NOSPLIT|NOFRAME,$0
	PUSHQ	BP			// the caller's frame pointer, popped by runExit
	MOVQ	SP, (const_dataBase+entryData_GoRSP)
	MOVQ	CR3, AX
	MOVQ	AX, (const_dataBase+entryData_GoCR3)
	MOVQ	CR4, AX
	MOVQ	AX, (const_dataBase+entryData_GoCR4)
	SGDT	(const_dataBase+entryData_GoGDT+descPtr_Limit)
	SIDT	(const_dataBase+entryData_GoIDT+descPtr_Limit)
	XORQ	AX, AX
	BYTE $0x0f; BYTE $0x00; BYTE $0xc8	// STR AX
	MOVQ	AX, (const_dataBase+entryData_GoTR)
	RDMSR64(const_msrLSTAR, (const_dataBase+entryData_GoLSTAR))
	RDMSR64(const_msrFSBase, (const_dataBase+entryData_GoFSBase))
	RDMSR64(const_msrGSBase, (const_dataBase+entryData_GoGSBase))
	RDMSR64(const_msrKernelGSBase, (const_dataBase+entryData_GoKernelGSBase))

	MOVQ	(const_dataBase+entryData_KernelRoot), AX
	MOVQ	AX, CR3
	// A FRED run's MSRs (fred.go) before its CR4 sets FRED: the entry
	// point, the entry stack for ring-3 events, stack level 0 for every
	// exception (ring-0 events stay on the interrupted stack).
	CMPQ	(const_dataBase+entryData_FREDConfig), $0
	JEQ	nofred
	WRMSR64(const_msrFREDConfig, (const_dataBase+entryData_FREDConfig))
	WRMSR64(const_msrFREDRSP0, $const_eEntryStackTop)
	WRMSR64(const_msrFREDStkLvls, $0)
nofred:
	// CR4 with PGE clear, then the run's: the PGE change flushes every TLB
	// entry, global ones included (SDM Vol. 3A, 4.10.4.1), so no global
	// entry of an earlier run or of the Go world survives into this one.
	MOVQ	(const_dataBase+entryData_RunCR4), AX
	ANDQ	$~const_cr4PGE, AX
	MOVQ	AX, CR4
	MOVQ	(const_dataBase+entryData_RunCR4), AX
	MOVQ	AX, CR4
	MOVQ	(const_dataBase+entryData_KernelCR3), AX
	MOVQ	AX, CR3
	LGDT	(const_dataBase+entryData_RunGDT+descPtr_Limit)
	MOVL	$const_tssSel, AX
	LTR	AX
	LIDT	(const_dataBase+entryData_RunIDT+descPtr_Limit)

	WRMSR64(const_msrLSTAR, (const_dataBase+entryData_Trampoline))
	WRMSR64(const_msrFSBase, (const_dataBase+entryData_RunFSBase))
	MOVL	$const_msrGSBase, CX
	XORL	AX, AX
	XORL	DX, DX
	WRMSR
	WRMSR64(const_msrKernelGSBase, $const_dataBase)

	MOVQ	$const_eEntryStackTop, SP
	MOVQ	(const_dataBase+entryData_ToUser), AX
	JMP	AX

// func runExit()
//
// Ends a run: restores the Go context saved by enterUser (the GDT, the TSS
// after clearing its busy bit, the IDT; CR3, with PCID 0, then CR4; the FS
// base, LSTAR and the GS bases), clears DF and returns from enterUser.
TEXT ·runExit(SB),NOSPLIT|NOFRAME,$0
	// A ring-3 exception enters through an interrupt gate, which clears
	// neither DF nor AC (SDM Vol. 3A, 6.12.1.3); Go's ABI needs DF clear.
	CLD
	// The Go world's descriptor tables first (the task's kernel side maps
	// them): an NMI or #MC from here on goes to the kernel's handlers,
	// never to the run's, whose CR3 value may have NOFLUSH set after
	// CR4.PCIDE is cleared below.
	LGDT	(const_dataBase+entryData_GoGDT+descPtr_Limit)
	MOVQ	(const_dataBase+entryData_GoGDT+descPtr_Base), AX
	ADDQ	(const_dataBase+entryData_GoTR), AX
	ANDB	$~const_tssBusy, const_descTypeByte(AX)
	MOVQ	(const_dataBase+entryData_GoTR), AX
	LTR	AX
	LIDT	(const_dataBase+entryData_GoIDT+descPtr_Limit)
	MOVQ	(const_dataBase+entryData_GoCR3), AX
	MOVQ	AX, CR3
	MOVQ	(const_dataBase+entryData_GoCR4), AX
	MOVQ	AX, CR4
	// The IRETQ to ring 3 nulled the FS selector, which on some CPUs clears
	// the FS base too: the Go thread's TLS comes back from the MSR.
	WRMSR64(const_msrFSBase, (const_dataBase+entryData_GoFSBase))
	WRMSR64(const_msrLSTAR, (const_dataBase+entryData_GoLSTAR))
	WRMSR64(const_msrGSBase, (const_dataBase+entryData_GoGSBase))
	WRMSR64(const_msrKernelGSBase, (const_dataBase+entryData_GoKernelGSBase))
	MOVQ	(const_dataBase+entryData_GoRSP), SP
	POPQ	BP
	POPQ	CX		// enterUser's return address: RET, but the assembler
	JMP	CX		// rejects a RET after more POPs than PUSHes

// The system calls of a task. Contract: called from a trampoline on the
// kernel stack, arguments in RDI, RSI, RDX, R10, R8, R9; they keep every
// register but RAX (the result), RCX and R11 included.

// func sysGetppid()
HANDLER(·sysGetppid, GETPPID)

// The bodies of the built-in handlers below, each used twice: in the
// kernel text (sysX, where linked) and copied for a lass run (lassX,
// lass.go). They use relative jumps and entry-area addresses only.

// SELF_NMI is the test images' getppid (build tag ptilab_selfnmi,
// selfnmi_on.go): it sends this CPU an NMI through the local APIC's
// interrupt command register (xAPIC at entryData.APIC, identity-mapped on
// the kernel side; SDM Vol. 3A, "Interrupt Command Register": delivery
// mode NMI, level assert, physical destination its own APIC ID, no
// shorthand, since the self shorthand sends fixed interrupts only), which
// arrives before it returns; then returns 1 as getppid. Keeps every
// register but RAX.
#define SELF_NMI \
	PUSHQ	BX; \
	MOVQ	(const_dataBase+entryData_APIC), BX; \
	MOVL	const_apicID(BX), AX; \
	MOVL	AX, const_apicICRHigh(BX); \
	MOVL	$const_apicICRSelfNMI, const_apicICRLow(BX); \
	POPQ	BX; \
	GETPPID

// SAMPLE records the counters entryData.SampleSrc names
// (cpustate.SampleSources) in the next cpustate.Sample of
// entryData.SampleBuf (with cpustate.SamplePMU the MSRs of
// entryData.SampleMSR, by RDMSR, into its PMC), unless SampleCap are
// recorded, and returns 0. Every MSR it reads exists (the sources come
// from #GP-safe reads at boot); the NMI count is read at
// entryData.NMICounter, mapped on the kernel side's CR3, which the system
// calls run on.
#define SAMPLE \
	PUSHQ	CX; \
	PUSHQ	DX; \
	PUSHQ	DI; \
	MOVQ	(const_dataBase+entryData_SampleN), DI; \
	CMPQ	DI, (const_dataBase+entryData_SampleCap); \
	JCC	sampled; \
	INCQ	(const_dataBase+entryData_SampleN); \
	IMULQ	$sample__size, DI; \
	ADDQ	(const_dataBase+entryData_SampleBuf), DI; \
	TESTQ	$const_sampleAPERF, (const_dataBase+entryData_SampleSrc); \
	JEQ	smi; \
	RDMSR64(const_msrAPERF, sample_APERF(DI)); \
	RDMSR64(const_msrMPERF, sample_MPERF(DI)); \
smi: \
	TESTQ	$const_sampleSMI, (const_dataBase+entryData_SampleSrc); \
	JEQ	nmi; \
	RDMSR64(const_msrSMICount, sample_SMI(DI)); \
nmi: \
	TESTQ	$const_sampleNMI, (const_dataBase+entryData_SampleSrc); \
	JEQ	pmcs; \
	MOVQ	(const_dataBase+entryData_NMICounter), CX; \
	MOVQ	(CX), CX; \
	MOVQ	CX, sample_NMI(DI); \
pmcs: \
	TESTQ	$const_samplePMU, (const_dataBase+entryData_SampleSrc); \
	JEQ	sampled; \
	PUSHQ	SI; \
	PUSHQ	R8; \
	MOVQ	$(const_dataBase+entryData_SampleMSR), R8; \
	XORL	SI, SI; \
pmc: \
	MOVQ	(R8)(SI*8), CX; \
	TESTQ	CX, CX; \
	JEQ	nextpmc; \
	RDMSR; \
	SHLQ	$32, DX; \
	ORQ	DX, AX; \
	MOVQ	AX, sample_PMC(DI)(SI*8); \
nextpmc: \
	INCQ	SI; \
	CMPQ	SI, $const_samplePMCs; \
	JCS	pmc; \
	POPQ	R8; \
	POPQ	SI; \
sampled: \
	POPQ	DI; \
	POPQ	DX; \
	POPQ	CX; \
	XORL	AX, AX; \
	RET

// SECRET reads the first quadword of the oracle's secret
// (entryData.Secret), which brings its cache line in, and returns 0.
#define SECRET \
	MOVQ	(const_dataBase+entryData_Secret), AX; \
	MOVQ	(AX), AX; \
	XORL	AX, AX; \
	RET

// NOSYS returns -ENOSYS.
#define NOSYS \
	MOVQ	$-const_enosys, AX; \
	RET

// TOUCH reads a byte in each of RDI kernel pages from RSI, RDX bytes
// apart (the TLB sweep's kernel side, sweep.go: SWEEP), and returns 0.
#define TOUCH \
	PUSHQ	CX; \
	PUSHQ	SI; \
	PUSHQ	R8; \
	MOVQ	DI, CX; \
	SWEEP(SI, DX, CX, R8, AX, touch, swept); \
	POPQ	R8; \
	POPQ	SI; \
	POPQ	CX; \
	XORL	AX, AX; \
	RET

// func sysSelfNMI()
HANDLER(·sysSelfNMI, SELF_NMI)

// func sysWork()
// Spends RDI TSC cycles in the kernel.
HANDLER(·sysWork, WORK)

// func sysSample()
HANDLER(·sysSample, SAMPLE)

// func sysSecret()
HANDLER(·sysSecret, SECRET)

// func sysExitRun()
TEXT ·sysExitRun(SB),NOSPLIT|NOFRAME,$0
	MOVQ	DI, (const_dataBase+entryData_Status)
	MOVQ	$const_ReasonExit, (const_dataBase+entryData_Reason)
	JMP	·runExit(SB)

// func ExitRun(reason, status uint64)
TEXT ·ExitRun(SB),NOSPLIT,$0-16
	MOVQ	reason+0(FP), AX
	MOVQ	AX, (const_dataBase+entryData_Reason)
	MOVQ	status+8(FP), AX
	MOVQ	AX, (const_dataBase+entryData_Status)
	JMP	·runExit(SB)

// func sysNoSys()
HANDLER(·sysNoSys, NOSYS)

// func sysTouch()
HANDLER(·sysTouch, TOUCH)

// A lass run's handlers (lass.go), copied into its handler page
// (EntryLASSText, upper half): the built-in handlers' bodies above, and
// the exit, which clears CR4.LASS before it jumps to runExit in the
// lower half. Its getppid and work are OnNoSwitch's copies (nsGetppid,
// nsWork).

COPIED_HANDLER(·lassSelfNMI, SELF_NMI)
COPIED_HANDLER(·lassSample, SAMPLE)
COPIED_HANDLER(·lassSecret, SECRET)
COPIED_HANDLER(·lassNoSys, NOSYS)
COPIED_HANDLER(·lassTouch, TOUCH)

// func lassExitRun()
// The exit system call of a lass run: sysExitRun's, through
// entryData.ExitRun after LASS_OFF.
TEXT ·lassExitRun(SB),NOSPLIT|NOFRAME,$0
	MOVQ	DI, (const_dataBase+entryData_Status)
	END_RUN($const_ReasonExit)

// ROUTINE stores the address of routine sym at field (a field's go_asm.h
// offset from its table's base register).
#define ROUTINE(sym, field) LEAQ sym(SB), AX; MOVQ AX, field

// func routines(e *entryRoutines, k *kernelRoutines, p *programTable)
//
// The tables of the entry routines, the kernel routines and the ring-3
// programs (user_amd64.s), each field set to the symbol of its name.
TEXT ·routines(SB),NOSPLIT,$0-24
	MOVQ	e+0(FP), DI
	MOVQ	k+8(FP), SI
	MOVQ	p+16(FP), DX
	ROUTINE(·sysMinimalOff, entryRoutines_SysMinimalOff(DI))
	ROUTINE(·sysMinimalOn, entryRoutines_SysMinimalOn(DI))
	ROUTINE(·sysMinimalPCID, entryRoutines_SysMinimalPCID(DI))
	ROUTINE(·sysLinuxOff, entryRoutines_SysLinuxOff(DI))
	ROUTINE(·sysLinuxOn, entryRoutines_SysLinuxOn(DI))
	ROUTINE(·sysLinuxPCID, entryRoutines_SysLinuxPCID(DI))
	ROUTINE(·toUser, entryRoutines_ToUser(DI))
	ROUTINE(·excCommon, entryRoutines_ExcCommon(DI))
	ROUTINE(·entryNMI, entryRoutines_EntryNMI(DI))
	ROUTINE(·sysMitigatedOff, entryRoutines_SysMitigatedOff(DI))
	ROUTINE(·sysMitigatedOn, entryRoutines_SysMitigatedOn(DI))
	ROUTINE(·sysMitigatedPCID, entryRoutines_SysMitigatedPCID(DI))
	ROUTINE(·toUserFRED, entryRoutines_ToUserFRED(DI))
	ROUTINE(·fredLinuxExitOff, entryRoutines_FredLinuxExitOff(DI))
	ROUTINE(·fredLinuxExitOn, entryRoutines_FredLinuxExitOn(DI))
	ROUTINE(·fredLinuxExitPCID, entryRoutines_FredLinuxExitPCID(DI))
	ROUTINE(·sysMinimalASI, entryRoutines_SysMinimalASI(DI))
	ROUTINE(·sysMinimalASIPCID, entryRoutines_SysMinimalASIPCID(DI))
	ROUTINE(·sysLinuxASI, entryRoutines_SysLinuxASI(DI))
	ROUTINE(·sysLinuxASIPCID, entryRoutines_SysLinuxASIPCID(DI))
	ROUTINE(·asiActions, entryRoutines_AsiActions(DI))
	ROUTINE(·sysGetppid, kernelRoutines_SysGetppid(SI))
	ROUTINE(·sysWork, kernelRoutines_SysWork(SI))
	ROUTINE(·sysSample, kernelRoutines_SysSample(SI))
	ROUTINE(·sysExitRun, kernelRoutines_SysExitRun(SI))
	ROUTINE(·sysNoSys, kernelRoutines_SysNoSys(SI))
	ROUTINE(·runExit, kernelRoutines_RunExit(SI))
	ROUTINE(·sysSecret, kernelRoutines_SysSecret(SI))
	ROUTINE(·sysTouch, kernelRoutines_SysTouch(SI))
	ROUTINE(·sysSelfNMI, kernelRoutines_SysSelfNMI(SI))
	ROUTINE(·userSyscalls, programTable_Syscalls(DX))
	ROUTINE(·userEmpty, programTable_Empty(DX))
	ROUTINE(·userProbe, programTable_Probe(DX))
	ROUTINE(·userPing, programTable_Ping(DX))
	ROUTINE(·userPong, programTable_Pong(DX))
	ROUTINE(·userMsgStart, programTable_MsgStart(DX))
	ROUTINE(·userMsgSender, programTable_MsgSender(DX))
	ROUTINE(·userMsgReceiver, programTable_MsgReceiver(DX))
	ROUTINE(·userOracleCal, programTable_OracleCal(DX))
	ROUTINE(·userOracle, programTable_Oracle(DX))
	ROUTINE(·userSweep, programTable_Sweep(DX))
	ROUTINE(·userSelfNMI, programTable_SelfNMI(DX))
	RET

// func pageRoutinesTable(r *pageRoutines)
//
// The tables of the routines copied to pages of their own: the deferred
// modes' (deferred.go), the FRED entry's ring-3 entries (fred.go) and a
// lass run's handlers (lass.go), each field set to the symbol of its
// name, and fredEvent.
TEXT ·pageRoutinesTable(SB),NOSPLIT,$0-8
	MOVQ	r+0(FP), DI
	ROUTINE(·sysMinimalDefer, (pageRoutines_Defer+deferRoutines_SysMinimalDefer)(DI))
	ROUTINE(·sysLinuxDefer, (pageRoutines_Defer+deferRoutines_SysLinuxDefer)(DI))
	ROUTINE(·sysMinimalNoSwitch, (pageRoutines_Defer+deferRoutines_SysMinimalNoSwitch)(DI))
	ROUTINE(·sysLinuxNoSwitch, (pageRoutines_Defer+deferRoutines_SysLinuxNoSwitch)(DI))
	ROUTINE(·dispatchOn, (pageRoutines_Defer+deferRoutines_DispatchOn)(DI))
	ROUTINE(·dispatchPCID, (pageRoutines_Defer+deferRoutines_DispatchPCID)(DI))
	ROUTINE(·nsGetppid, (pageRoutines_NoSwitch+noSwitchRoutines_NsGetppid)(DI))
	ROUTINE(·nsWork, (pageRoutines_NoSwitch+noSwitchRoutines_NsWork)(DI))
	ROUTINE(·fredMinimalOff, (pageRoutines_FRED+fredRoutines_FredMinimalOff)(DI))
	ROUTINE(·fredMinimalOn, (pageRoutines_FRED+fredRoutines_FredMinimalOn)(DI))
	ROUTINE(·fredMinimalPCID, (pageRoutines_FRED+fredRoutines_FredMinimalPCID)(DI))
	ROUTINE(·fredLinuxOff, (pageRoutines_FRED+fredRoutines_FredLinuxOff)(DI))
	ROUTINE(·fredLinuxOn, (pageRoutines_FRED+fredRoutines_FredLinuxOn)(DI))
	ROUTINE(·fredLinuxPCID, (pageRoutines_FRED+fredRoutines_FredLinuxPCID)(DI))
	ROUTINE(·nsGetppid, (pageRoutines_LASS+lassRoutines_NsGetppid)(DI))
	ROUTINE(·nsWork, (pageRoutines_LASS+lassRoutines_NsWork)(DI))
	ROUTINE(·lassSample, (pageRoutines_LASS+lassRoutines_LassSample)(DI))
	ROUTINE(·lassExitRun, (pageRoutines_LASS+lassRoutines_LassExitRun)(DI))
	ROUTINE(·lassNoSys, (pageRoutines_LASS+lassRoutines_LassNoSys)(DI))
	ROUTINE(·lassTouch, (pageRoutines_LASS+lassRoutines_LassTouch)(DI))
	ROUTINE(·lassSecret, (pageRoutines_LASS+lassRoutines_LassSecret)(DI))
	ROUTINE(·lassSelfNMI, (pageRoutines_LASS+lassRoutines_LassSelfNMI)(DI))
	ROUTINE(·fredEvent, pageRoutines_FredEvent(DI))
	RET
