package linuxabi

import "unsafe"

// PtRegs is x86-64's struct pt_regs (arch/x86/include/asm/ptrace.h): a
// thread's registers as the kernel entry saves them on the kernel stack,
// the general registers (the callee-saved ones first), orig_ax (the
// system-call number, or an exception's error code) and the five words
// IRETQ pops (SDM Vol. 3A, 6.14.2). PtRegsSize bytes.
//
// ptrace's struct user_regs_struct (golang.org/x/sys/unix.PtraceRegs)
// starts with the same 21 words and adds fs_base, gs_base, ds, es, fs and
// gs, which pt_regs does not hold.
type PtRegs struct {
	R15, R14, R13, R12, BP, BX, R11, R10, R9, R8 uint64
	AX, CX, DX, SI, DI                           uint64
	OrigAX                                       uint64
	IP, CS, Flags, SP, SS                        uint64
}

// PtRegsSize is the size of PtRegs: 21 words.
const PtRegsSize = 21 * 8

// PtRegs32 is i386's struct pt_regs (arch/x86/include/asm/ptrace.h,
// !CONFIG_X86_64): the registers entry_32.S's SAVE_ALL pushes, orig_ax,
// and the words IRET pops (SDM Vol. 3A, 6.12.1). Linux declares the
// segment registers as a 16-bit selector and 16 bits of padding each; here
// they are whole words, with the selector in the low half. PtRegs32Size
// bytes, the same as ptrace's struct user_regs_struct (x/sys/unix's
// PtraceRegs for GOARCH=386).
type PtRegs32 struct {
	BX, CX, DX, SI, DI, BP, AX uint32
	DS, ES, FS, GS             uint32
	OrigAX                     uint32
	IP, CS, Flags, SP, SS      uint32
}

// PtRegs32Size is the size of PtRegs32: 17 words.
const PtRegs32Size = 17 * 4

// The sizes hold for both types on every GOARCH: these fail to compile
// otherwise.
var (
	_ [PtRegsSize - unsafe.Sizeof(PtRegs{})]byte
	_ [unsafe.Sizeof(PtRegs{}) - PtRegsSize]byte
	_ [PtRegs32Size - unsafe.Sizeof(PtRegs32{})]byte
	_ [unsafe.Sizeof(PtRegs32{}) - PtRegs32Size]byte
)
