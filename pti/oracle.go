package pti

import (
	"errors"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/goos"
)

// The leak oracle's secrets and fault recovery (package bench's oracle
// benchmark runs them): pages holding a known pattern, mapped
// supervisor-only in the kernel's own table and so on the kernel side of
// every mode's address space (Build shares the kernel's PML4 entries).
// The kernel secret is a page of the kernel image: under Off the one table
// is also the user side's, so ring 3 has a translation to it
// (supervisor-only: a read faults with P=1), under isolation the user
// table does not map it (P=0), but under the asi modes it does: it is
// nonsensitive, and their user side is the nonsensitive table (asi.go).
// The sensitive secret is a frame of goos's sensitive blocks, user data as
// the processes' pages are, reached by the kernel's identity map: Off's
// one table maps it as the kernel secret, no isolated mode's user table
// does, asi's included. Their addresses are the kernel's own, which ring 3
// can name as any other.

// SecretPattern is what the secret page starts with: 16 distinct nonzero
// bytes (a transient read that the CPU suppresses gives 0, so a 0 would
// not tell a leak from none).
const SecretPattern = "PTI:Meltdown/F+R"

// The oracle's probe array: OracleLines lines, one per byte value,
// OracleStride bytes apart (2 KiB: two lines per page, visited in an
// order the prefetchers do not follow; the Meltdown paper's 4 KiB would
// need 256 data pages, more than a process has, MaxDataPages).
const (
	OracleLines       = 256
	OracleStrideShift = 11
	OracleStride      = 1 << OracleStrideShift
)

// OracleNoRDTSCP is the oracle programs' flag (in their last argument)
// for a CPU without RDTSCP (CPUID.80000001H:EDX[27]): they time with
// LFENCE; RDTSC; LFENCE instead.
const OracleNoRDTSCP = 1 << 32

// Secret is one of the oracle's secret pages, each holding SecretPattern.
type Secret uint8

const (
	// KernelSecret is a page of the kernel image's data (SecretAddr),
	// nonsensitive.
	KernelSecret Secret = iota
	// SensitiveSecret is a frame of the sensitive blocks
	// (goos.AllocSensitiveFrames), which Setup takes.
	SensitiveSecret
)

// Addr returns the address of the secret's page, a kernel address (page
// aligned; the sensitive one's is its frame's, by the identity map, 0
// before Setup).
func (s Secret) Addr() uint64 {
	if s == SensitiveSecret {
		return env.sensitiveSecret
	}
	return SecretAddr()
}

// secretPage holds the kernel secret's page: its page-aligned 4 KiB
// (secret).
var secretPage [2 * amd64.PageSize]byte

// SecretAddr returns the address of the kernel secret's page, a kernel
// address (page aligned).
func SecretAddr() uint64 {
	return (uint64(uintptr(unsafe.Pointer(&secretPage))) + amd64.PageSize - 1) &^ (amd64.PageSize - 1)
}

// secret returns the kernel secret's page.
func secret() *[amd64.PageSize]byte {
	off := SecretAddr() - uint64(uintptr(unsafe.Pointer(&secretPage)))
	return (*[amd64.PageSize]byte)(secretPage[off:])
}

// writeSecrets fills the secret pages, the sensitive one taken first if
// it has no frame yet: the pattern, then zeros.
func writeSecrets() error {
	if env.sensitiveSecret == 0 {
		pa, ok := goos.AllocSensitiveFrames(1)
		if !ok {
			return errors.New("pti: out of memory for the sensitive secret")
		}
		env.sensitiveSecret = pa
	}
	for _, page := range [][]byte{secret()[:], goos.Frames(env.sensitiveSecret, 1)} {
		clear(page)
		copy(page, SecretPattern)
	}
	return nil
}

// StartRecovering is Start with fault recovery: up to max page faults
// from ring 3 do not end the run; each returns to ring 3 at the entry of
// program p with every register as it was at the fault (the Oracle
// program's contract). Result.Recovered counts them, RecoverCR2 and
// RecoverError are the last one's CR2 and error code. Any other exception,
// and a page fault past max, ends the run as under Start. The secret call
// (SysSecret) reads secret's page in the run (under an asi mode the
// sensitive one's read is an ASI transition), the kernel secret's after it.
func StartRecovering(s Switch, proc *Process, p Program, rsp uint64, args [6]uint64, max uint64, secret Secret) (Result, error) {
	env.recoverRIP, env.recoverMax = ProgramEntry(p), max
	data().Secret = secret.Addr()
	defer func() { env.recoverRIP, env.recoverMax, data().Secret = 0, 0, SecretAddr() }()
	return Start(s, proc, p, rsp, args)
}
