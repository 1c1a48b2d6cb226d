// The TLB sweep's loop, for user_amd64.s and entry_amd64.s (sweep.go; tlb/sweep.go).

// SWEEP(ptr, stride, k, off, val, lbl, done) reads a byte in each of k
// pages from ptr, stride bytes apart, the one read with k pages left at
// byte offset (k*64) & tlb.SweepLineMask (consecutive touches in different
// cache sets); k = 0 reads none. It uses off and val as scratch; lbl and
// done are its labels. The TLB sweep's loop, in ring 3 (userSweep) and in
// the kernel (sysTouch, entry_amd64.s).
#define SWEEP(ptr, stride, k, off, val, lbl, done) \
	TESTQ	k, k; \
	JEQ	done; \
lbl: \
	MOVQ	k, off; \
	SHLQ	$6, off; \
	ANDL	$const_sweepLineMask, off; \
	MOVBLZX	(ptr)(off*1), val; \
	ADDQ	stride, ptr; \
	DECQ	k; \
	JNE	lbl; \
done:
