#include "textflag.h"

// func nmiEntry()
//
// NMI handler: counts and returns (see nmi.go). INCQ changes RFLAGS, which
// IRETQ restores.
TEXT ·nmiEntry(SB),NOSPLIT|NOFRAME,$0
	INCQ	·nmis(SB)
	IRETQ

// func NMIEntryPC() uint64
TEXT ·NMIEntryPC(SB),NOSPLIT,$0-8
	LEAQ	·nmiEntry(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
