package amd64

// FRED, flexible return and event delivery (Intel, "Flexible Return and
// Event Delivery (FRED)" specification, document 819481, since in the
// SDM; Linux arch/x86/include/asm/fred.h and
// Documentation/arch/x86/x86_64/fred.rst): with CR4.FRED set every
// event, a ring-3 SYSCALL included, is delivered at IA32_FRED_CONFIG's entry point (ring-3
// events at it, ring-0 events 256 bytes after it) on a FRED stack, with a
// 64-byte frame; ERETU returns to ring 3, ERETS within ring 0; the IDT is
// not used, and IRET to ring 3, SYSRET, SYSEXIT and SWAPGS raise #GP or
// #UD.
//
// LASS, linear-address-space separation (SDM Vol. 3A, chapter 4): with
// CR4.LASS set a user-mode access to the upper half (bit 63 set) and a
// supervisor instruction fetch from the lower half fault with #GP (#SS for
// the stack) before any page walk.
// LASSBlocksUser reports whether LASS faults a user-mode access to va:
// bit 63 set, the supervisor half (#GP with error code 0, no CR2).
func LASSBlocksUser(va uint64) bool { return va>>63 != 0 }

const (
	CPUID0701_EAX_LASS = 1 << 6  // CPUID.(EAX=07H,ECX=1):EAX[6]
	CPUID0701_EAX_FRED = 1 << 17 // CPUID.(EAX=07H,ECX=1):EAX[17]

	CR4_LASS_BIT = 27
	CR4_LASS     = 1 << CR4_LASS_BIT
	CR4_FRED     = 1 << 32

	// The FRED MSRs: the stack of each stack
	// level, the stack level of each exception vector (2 bits each), and
	// the configuration: the entry point in [63:12], the stack level of
	// external interrupts in [10:9], the red zone in [8:6] (64-byte units)
	// that ring-0 events skip below the interrupted RSP.
	MSR_IA32_FRED_RSP0    = 0x1cc
	MSR_IA32_FRED_STKLVLS = 0x1d0
	MSR_IA32_FRED_CONFIG  = 0x1d4

	// FREDFrameSize is the frame event delivery pushes: from the new RSP up, the error code, RIP, CS (with the
	// interrupted stack level in [17:16]), RFLAGS, RSP, SS (with the event
	// information in [63:32]: vector [39:32], type [51:48], 64-bit mode
	// [57], instruction length [63:60]), the event data (CR2 for #PF) and
	// 8 bytes of zeros.
	FREDFrameSize = 64
	// FRED event types (the frame's SS[51:48]).
	FREDTypeExternal = 0 // external interrupt
	FREDTypeNMI      = 2
	FREDTypeHardware = 3 // hardware exception
	FREDTypeOther    = 7 // SYSCALL (vector 1), SYSENTER (vector 2)
	// FREDVectorSyscall is SYSCALL's vector within FREDTypeOther.
	FREDVectorSyscall = 1

	// FREDRing0Entry is the offset of the ring-0 events' entry point from
	// IA32_FRED_CONFIG's (FRED specification; Bochs cpu/fred.cc adds 256).
	FREDRing0Entry = 256
)

// ERETU and ERETS as bytes (FRED specification): Go's
// assembler has neither, and golang.org/x/arch/x86/x86asm decodes them
// as a REP or REPNE prefix on an unknown opcode.
var (
	ERETU = [4]byte{0xf3, 0x0f, 0x01, 0xca}
	ERETS = [4]byte{0xf2, 0x0f, 0x01, 0xca}
)
