#include "go_asm.h"
#include "textflag.h"

// func CPUID(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)
TEXT ·CPUID(SB),NOSPLIT,$0-24
	MOVL	leaf+0(FP), AX
	MOVL	subleaf+4(FP), CX
	CPUID
	MOVL	AX, eax+8(FP)
	MOVL	BX, ebx+12(FP)
	MOVL	CX, ecx+16(FP)
	MOVL	DX, edx+20(FP)
	RET

// func RDMSR(msr uint32) uint64
TEXT ·RDMSR(SB),NOSPLIT,$0-16
	MOVL	msr+0(FP), CX
	RDMSR
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+8(FP)
	RET

// func WRMSR(msr uint32, val uint64)
TEXT ·WRMSR(SB),NOSPLIT,$0-16
	MOVL	msr+0(FP), CX
	MOVQ	val+8(FP), AX
	MOVQ	AX, DX
	SHRQ	$32, DX
	WRMSR
	RET

// func rdmsrSafe(msr uint32) (val uint64, ok bool)
// Contract with the #GP handler: a fault on the RDMSR below resumes at the
// next instruction with R8 = 1 (see SafeMSRFixup).
TEXT ·rdmsrSafe(SB),NOSPLIT,$0-17
	MOVL	msr+0(FP), CX
	XORQ	R8, R8
	XORQ	AX, AX
	XORQ	DX, DX
	RDMSR
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, val+8(FP)
	XORQ	$1, R8
	MOVB	R8, ok+16(FP)
	RET

// func wrmsrSafe(msr uint32, val uint64) (ok bool)
// Same contract as rdmsrSafe.
TEXT ·wrmsrSafe(SB),NOSPLIT,$0-17
	MOVL	msr+0(FP), CX
	MOVQ	val+8(FP), AX
	MOVQ	AX, DX
	SHRQ	$32, DX
	XORQ	R8, R8
	WRMSR
	XORQ	$1, R8
	MOVB	R8, ok+16(FP)
	RET

// func safeMSRStart() (rd, wr uintptr)
TEXT ·safeMSRStart(SB),NOSPLIT,$0-16
	LEAQ	·rdmsrSafe(SB), AX
	MOVQ	AX, rd+0(FP)
	LEAQ	·wrmsrSafe(SB), AX
	MOVQ	AX, wr+8(FP)
	RET

// func RDTSC() uint64
TEXT ·RDTSC(SB),NOSPLIT,$0-8
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET

// func TSCBegin() uint64
TEXT ·TSCBegin(SB),NOSPLIT,$0-8
	LFENCE
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET

// func TSCEndL() uint64
TEXT ·TSCEndL(SB),NOSPLIT,$0-8
	LFENCE
	RDTSC
	LFENCE
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET

// func Pause()
TEXT ·Pause(SB),NOSPLIT,$0-0
	PAUSE
	RET

// func Halt()
TEXT ·Halt(SB),NOSPLIT,$0-0
	CLI
	HLT
	JMP	-2(PC)

// func DisableInterrupts()
TEXT ·DisableInterrupts(SB),NOSPLIT,$0-0
	CLI
	RET

// func CR0() uint64
TEXT ·CR0(SB),NOSPLIT,$0-8
	MOVQ	CR0, AX
	MOVQ	AX, ret+0(FP)
	RET

// func CR2() uint64
TEXT ·CR2(SB),NOSPLIT,$0-8
	MOVQ	CR2, AX
	MOVQ	AX, ret+0(FP)
	RET

// func CR3() uint64
TEXT ·CR3(SB),NOSPLIT,$0-8
	MOVQ	CR3, AX
	MOVQ	AX, ret+0(FP)
	RET

// func CR4() uint64
TEXT ·CR4(SB),NOSPLIT,$0-8
	MOVQ	CR4, AX
	MOVQ	AX, ret+0(FP)
	RET

// func SetCR0(v uint64)
TEXT ·SetCR0(SB),NOSPLIT,$0-8
	MOVQ	v+0(FP), AX
	MOVQ	AX, CR0
	RET

// func SetCR3(v uint64)
TEXT ·SetCR3(SB),NOSPLIT,$0-8
	MOVQ	v+0(FP), AX
	MOVQ	AX, CR3
	RET

// func SetCR4(v uint64)
TEXT ·SetCR4(SB),NOSPLIT,$0-8
	MOVQ	v+0(FP), AX
	MOVQ	AX, CR4
	RET

// func RFLAGS() uint64
TEXT ·RFLAGS(SB),NOSPLIT,$0-8
	PUSHFQ
	POPQ	AX
	MOVQ	AX, ret+0(FP)
	RET

// func INVLPG(va uintptr)
TEXT ·INVLPG(SB),NOSPLIT,$0-8
	MOVQ	va+0(FP), AX
	INVLPG	(AX)
	RET

// func RDRAND() (uint64, bool)
TEXT ·RDRAND(SB),NOSPLIT,$0-9
	MOVL	$10, CX
retry:
	RDRANDQ	AX
	JCS	ok
	DECL	CX
	JNZ	retry
	MOVQ	$0, ret+0(FP)
	MOVB	$0, ret1+8(FP)
	RET
ok:
	MOVQ	AX, ret+0(FP)
	MOVB	$1, ret1+8(FP)
	RET

// func RDSEED() (uint64, bool)
TEXT ·RDSEED(SB),NOSPLIT,$0-9
	MOVL	$10, CX
retry:
	RDSEEDQ	AX
	JCS	ok
	PAUSE
	DECL	CX
	JNZ	retry
	MOVQ	$0, ret+0(FP)
	MOVB	$0, ret1+8(FP)
	RET
ok:
	MOVQ	AX, ret+0(FP)
	MOVB	$1, ret1+8(FP)
	RET

// func FXSAVE(p uintptr)
TEXT ·FXSAVE(SB),NOSPLIT,$0-8
	MOVQ	p+0(FP), DI
	FXSAVE64	(DI)
	RET

// func MMIORead8(addr uintptr) uint8
TEXT ·MMIORead8(SB),NOSPLIT,$0-9
	MOVQ	addr+0(FP), DX
	MOVB	(DX), AX
	MOVB	AX, ret+8(FP)
	RET

// func MMIORead16(addr uintptr) uint16
TEXT ·MMIORead16(SB),NOSPLIT,$0-10
	MOVQ	addr+0(FP), DX
	MOVW	(DX), AX
	MOVW	AX, ret+8(FP)
	RET

// func MMIORead32(addr uintptr) uint32
TEXT ·MMIORead32(SB),NOSPLIT,$0-12
	MOVQ	addr+0(FP), DX
	MOVL	(DX), AX
	MOVL	AX, ret+8(FP)
	RET

// func MMIOWrite8(addr uintptr, v uint8)
TEXT ·MMIOWrite8(SB),NOSPLIT,$0-9
	MOVQ	addr+0(FP), DX
	MOVB	v+8(FP), AX
	MOVB	AX, (DX)
	RET

// func MMIOWrite16(addr uintptr, v uint16)
TEXT ·MMIOWrite16(SB),NOSPLIT,$0-10
	MOVQ	addr+0(FP), DX
	MOVW	v+8(FP), AX
	MOVW	AX, (DX)
	RET

// func MMIOWrite32(addr uintptr, v uint32)
TEXT ·MMIOWrite32(SB),NOSPLIT,$0-12
	MOVQ	addr+0(FP), DX
	MOVL	v+8(FP), AX
	MOVL	AX, (DX)
	RET

// func In8(port uint16) uint8
TEXT ·In8(SB),NOSPLIT,$0-9
	MOVW	port+0(FP), DX
	XORQ	AX, AX
	INB
	MOVB	AX, ret+8(FP)
	RET

// func In16(port uint16) uint16
TEXT ·In16(SB),NOSPLIT,$0-10
	MOVW	port+0(FP), DX
	XORQ	AX, AX
	INW
	MOVW	AX, ret+8(FP)
	RET

// func In32(port uint16) uint32
TEXT ·In32(SB),NOSPLIT,$0-12
	MOVW	port+0(FP), DX
	INL
	MOVL	AX, ret+8(FP)
	RET

// func Out8(port uint16, v uint8)
TEXT ·Out8(SB),NOSPLIT,$0-3
	MOVW	port+0(FP), DX
	MOVB	v+2(FP), AX
	OUTB
	RET

// func Out16(port uint16, v uint16)
TEXT ·Out16(SB),NOSPLIT,$0-4
	MOVW	port+0(FP), DX
	MOVW	v+2(FP), AX
	OUTW
	RET

// func Out32(port uint16, v uint32)
TEXT ·Out32(SB),NOSPLIT,$0-8
	MOVW	port+0(FP), DX
	MOVL	v+4(FP), AX
	OUTL
	RET

// func Load(addr uintptr) uint64
TEXT ·Load(SB),NOSPLIT,$0-16
	MOVQ	addr+0(FP), AX
	MOVQ	(AX), AX
	MOVQ	AX, ret+8(FP)
	RET

// func LoadGDT(p *DescPtr)
TEXT ·LoadGDT(SB),NOSPLIT,$0-8
	MOVQ	p+0(FP), AX
	LGDT	DescPtr_Limit(AX)
	RET

// func LoadIDT(p *DescPtr)
TEXT ·LoadIDT(SB),NOSPLIT,$0-8
	MOVQ	p+0(FP), AX
	LIDT	DescPtr_Limit(AX)
	RET

// func LoadTR(sel uint16)
TEXT ·LoadTR(SB),NOSPLIT,$0-2
	MOVW	sel+0(FP), AX
	LTR	AX
	RET

// func FSGSSelectors() (fs, gs uint16)
TEXT ·FSGSSelectors(SB),NOSPLIT,$0-4
	MOVW	FS, AX
	MOVW	AX, fs+0(FP)
	MOVW	GS, AX
	MOVW	AX, gs+2(FP)
	RET

// func LoadSegments(cs, ds uint16)
TEXT ·LoadSegments(SB),NOSPLIT,$0-4
	MOVWQZX	ds+2(FP), AX
	MOVW	AX, DS
	MOVW	AX, ES
	MOVW	AX, SS
	MOVWQZX	cs+0(FP), AX
	// Far return to the next instruction with the new CS: push CS:RIP and
	// RETFQ. The return address of this call is the RIP we want; it sits
	// at 0(SP), so push CS below it and rotate.
	POPQ	BX
	PUSHQ	AX
	PUSHQ	BX
	RETFQ

// func XGETBV(xcr uint32) uint64
TEXT ·XGETBV(SB),NOSPLIT,$0-16
	MOVL	xcr+0(FP), CX
	XGETBV
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+8(FP)
	RET

// func xrstor(p uintptr, mask uint64)
TEXT ·xrstor(SB),NOSPLIT,$0-16
	MOVQ	p+0(FP), DI
	MOVQ	mask+8(FP), AX
	MOVQ	AX, DX
	SHRQ	$32, DX
	XRSTOR64	(DI)
	RET
