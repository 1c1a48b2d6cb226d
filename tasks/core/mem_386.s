//go:build 386 && !kernel32host

#include "go_asm.h"
#include "textflag.h"

// MEMCPY copies CX bytes from SI to DI as Linux's x86_32 memcpy: REP
// MOVSL, then REP MOVSB for the rest; SI and DI advance. Clobbers AX.
#define MEMCPY \
	MOVL	CX, AX; \
	SHRL	$2, CX; \
	REP; MOVSL; \
	MOVL	AX, CX; \
	ANDL	$3, CX; \
	REP; MOVSB

// RINGCOPY copies c bytes (c+12(FP)) between the ring and a buffer, up
// to the ring's end, then from its start: RING is the string register on
// the ring's side (SI to read it, DI to write it), BUF the other; RINGARG,
// POSARG and BUFARG the arguments. It keeps ESI and EDI for Go, in the
// 8-byte frame.
#define RINGCOPY(RING, BUF, RINGARG, POSARG, BUFARG) \
	MOVL	SI, 0(SP); \
	MOVL	DI, 4(SP); \
	MOVL	BUFARG, BUF; \
	MOVL	POSARG, RING; \
	ANDL	$(const_RingSize-1), RING; \
	MOVL	$const_RingSize, CX; \
	SUBL	RING, CX; \
	ADDL	RINGARG, RING; \
	MOVL	c+12(FP), DX; \
	CMPL	DX, CX; \
	JAE	2(PC); \
	MOVL	DX, CX; \
	SUBL	CX, DX; \
	MEMCPY; \
	MOVL	RINGARG, RING; \
	MOVL	DX, CX; \
	MEMCPY; \
	MOVL	0(SP), SI; \
	MOVL	4(SP), DI; \
	RET

// func fromRing(buf, ring uintptr, pos uint32, c uintptr)
TEXT ·fromRing(SB),NOSPLIT,$8-16
	RINGCOPY(SI, DI, ring+4(FP), pos+8(FP), buf+0(FP))

// func toRing(ring uintptr, pos uint32, buf, c uintptr)
TEXT ·toRing(SB),NOSPLIT,$8-16
	RINGCOPY(DI, SI, ring+0(FP), pos+4(FP), buf+8(FP))
