package amd64

// The operations FlushLoop times (SDM Vol. 3A, 4.10.4.1 and Vol. 2A/2B,
// INVLPG, INVPCID, MOV to CR3/CR4).
const (
	// FlushEmpty: the loop alone (DEC; JNZ), the overhead the others'
	// figures subtract.
	FlushEmpty = iota
	// FlushCR3: MOV a to CR3.
	FlushCR3
	// FlushINVLPG: INVLPG of the page at address a.
	FlushINVLPG
	// FlushINVPCID: INVPCID of type a with the 16-byte descriptor at desc
	// (PCID in bits 11:0 of its first quadword, the linear address in its
	// second).
	FlushINVPCID
	// FlushCR4: MOV a to CR4, then MOV b to CR4 (a CR4.PGE toggle when a
	// and b differ in PGE alone): two writes per operation.
	FlushCR4
)

// FlushLoop times n (at least 1) operations op in ring 0 with interrupts
// masked (RFLAGS restored at the end): it loads CR4 with cr4, reads the
// TSC (LFENCE; RDTSC), runs the loop, reads it again (LFENCE; RDTSC;
// LFENCE) and returns the difference; then it loads CR3 and CR4 with the
// values they had on entry, CR3 first. CR3 on entry must have bits 11:0
// clear when cr4 sets CR4.PCIDE (SDM Vol. 3A, 4.10.1), and every CR3 value
// the loop loads must map the loop's code and stack as the entry CR3 does.
// An op other than the Flush constants is FlushEmpty.
//
// Registers: AX..DX, SI, DI, R8..R11 are clobbered.
//
// defined in flush_amd64.s
func FlushLoop(op, n, cr4, a, b uint64, desc *[2]uint64) (cycles uint64)
