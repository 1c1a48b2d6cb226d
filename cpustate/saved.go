package cpustate

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
)

// The MSRs ptilab writes that the firmware (and the OS booted after it)
// owns: the P-state request (IA32_PERF_CTL, IA32_HWP_REQUEST) and the
// performance-monitoring unit's MSRs. Each is saved here, its value read
// before ptilab's first write to it, and Restore writes every saved value
// back, in the reverse order of the saves, on every way out of a run: the
// program's end (package bench, before PTILAB-END) and, for the runs the
// program does not bring to its end, the kernel's (goos's endRun: a Go
// panic, a kernel fault, a deadlock, out of memory), before the return to
// the firmware. One registry, replayed by each way out, as Linux's
// arch/x86/power/cpu.c saves and restores its list of MSRs (struct
// saved_msr) around a suspend.
//
// Save runs in ordinary Go. Restore neither allocates nor writes a
// pointer and uses only the CPU interface, so that the kernel can restore
// from an exception handler (host/image's TestKernelCodeIsSafe checks
// it, with the writers of the line and the record). The registry is not
// safe for concurrent use (one CPU, interrupts masked).

// MaxSaved is the most MSRs a registry holds: the PMU's
// (IA32_PERF_GLOBAL_CTRL, IA32_FIXED_CTR_CTRL, IA32_PERF_GLOBAL_OVF_CTRL,
// IA32_DEBUGCTL, 3 fixed counters, 8 event selects and their 8 counters),
// a P-state request, and room.
const MaxSaved = 32

// SavedMSR is one MSR of a registry: its address and SDM name, the MSR
// its value is written back through (Via: MSR itself, or an alias such as
// IA32_A_PMCx, which takes the full width where IA32_PMCx takes 32 bits
// sign-extended), and the value read before ptilab's first write. After
// Restore, Restored says whether the write-back took (false: #GP) and
// ReadBack is the MSR read after it (ReadBackOK false: the read raised
// #GP).
type SavedMSR struct {
	MSR, Via   uint32
	Name       string
	Value      uint64
	Restored   bool
	ReadBack   uint64
	ReadBackOK bool
	attempted  bool
}

// SavedMSRs is a registry of the MSRs ptilab wrote and their values from
// before. The zero value is empty.
type SavedMSRs struct {
	list [MaxSaved]SavedMSR
	n    int
}

// Saved is the run's registry: every MSR ptilab writes that the firmware
// owns is saved here before its first write (bench's startPMU and
// SetPState), and every way out of the run restores it (bench.RestoreMSRs,
// goos's endRun).
var Saved SavedMSRs

// Save records msr (named name) with its value, read #GP-safely, unless
// it is already saved: a second Save keeps the first value, read before
// the first write. It reports whether msr is saved: false when the read
// raised #GP (the CPU lacks the MSR: do not write it) or the registry is
// full (do not write it either, it could not be restored).
func (s *SavedMSRs) Save(c CPU, msr uint32, name string) bool {
	return s.SaveVia(c, msr, msr, name)
}

// SaveVia is Save of an MSR whose value Restore writes back through
// another MSR, via (IA32_A_PMCx for IA32_PMCx, say).
func (s *SavedMSRs) SaveVia(c CPU, msr, via uint32, name string) bool {
	if _, ok := s.Value(msr); ok {
		return true
	}
	if s.n == len(s.list) {
		return false
	}
	v, ok := c.ReadMSR(msr)
	if !ok {
		return false
	}
	return s.add(msr, via, name, v)
}

// SaveCPUIDLimit records IA32_MISC_ENABLE with the value boot read before
// it cleared the CPUID limit (l, amd64.UnlockCPUID), where it did clear
// it, so that every way out of the run gives the firmware its limit
// back. It reports whether the MSR is saved.
func (s *SavedMSRs) SaveCPUIDLimit(l amd64.CPUIDLimit) bool {
	if !l.Cleared {
		return false
	}
	return s.add(amd64.MSR_IA32_MISC_ENABLE, amd64.MSR_IA32_MISC_ENABLE, "IA32_MISC_ENABLE", l.MiscEnable)
}

// add records msr with its value v, unless it is already saved (true)
// or the registry is full (false).
func (s *SavedMSRs) add(msr, via uint32, name string, v uint64) bool {
	if _, ok := s.Value(msr); ok {
		return true
	}
	if s.n == len(s.list) {
		return false
	}
	s.list[s.n] = SavedMSR{MSR: msr, Via: via, Name: name, Value: v}
	s.n++
	return true
}

// Value returns msr's saved value, and whether it is saved.
func (s *SavedMSRs) Value(msr uint32) (uint64, bool) {
	for i := range s.n {
		if s.list[i].MSR == msr {
			return s.list[i].Value, true
		}
	}
	return 0, false
}

// Len is how many MSRs are saved, for Truncate.
func (s *SavedMSRs) Len() int { return s.n }

// Truncate forgets the MSRs saved after the first n (Len before them): a
// writer that saved several and then found it cannot write them all
// drops what it saved before writing anything.
func (s *SavedMSRs) Truncate(n int) { s.n = min(s.n, max(n, 0)) }

// Entries are the MSRs saved and not yet restored, in the order they were
// saved. The slice is the registry's: read it before the next Save.
func (s *SavedMSRs) Entries() []SavedMSR { return s.list[:s.n] }

// Restore writes each saved MSR's value back (through its Via), the last
// saved first, reads it back, and empties the registry; it returns the
// entries it restored, in the order they were saved (the registry's
// array: read them before the next Save), nil when none was saved. A
// write that raises #GP is recorded (Restored false) and the others still
// go on. An entry is written back once even if Restore is entered again
// before it returns (a fault inside it that ends the run: the kernel's
// way out restores what is left).
func (s *SavedMSRs) Restore(c CPU) []SavedMSR {
	for i := s.n - 1; i >= 0; i-- {
		e := &s.list[i]
		if e.attempted {
			continue
		}
		e.attempted = true
		e.Restored = c.WriteMSR(e.Via, e.Value)
		e.ReadBack, e.ReadBackOK = c.ReadMSR(e.MSR)
	}
	out := s.list[:s.n]
	s.n = 0
	if len(out) == 0 {
		return nil
	}
	return out
}

// RestoreRecord is the msr-restore record of entries restored on the way
// out at (Restore's result).
func RestoreRecord(at string, entries []SavedMSR) contract.MSRRestore {
	rec := contract.MSRRestore{At: at, MSRs: []contract.RestoredMSR{}}
	for _, e := range entries {
		r := contract.RestoredMSR{Name: e.Name, MSR: hex(uint64(e.MSR)), Firmware: hex(e.Value), Restored: e.Restored}
		if e.Via != e.MSR {
			r.Via = hex(uint64(e.Via))
		}
		if e.ReadBackOK {
			r.ReadBack = hex(e.ReadBack)
		}
		rec.MSRs = append(rec.MSRs, r)
	}
	return rec
}

// WriteRestoreJSON writes into b the JSON object of RestoreRecord(at,
// entries), kind first, exactly as contract.Encode writes it, and returns
// its length; what does not fit in b is dropped (about 160 bytes per
// entry). It does not allocate and calls nothing the kernel may not (the
// kernel writes the record from an exception handler, where
// encoding/json cannot run: host/image's TestKernelCodeIsSafe checks it).
func WriteRestoreJSON(b []byte, at string, entries []SavedMSR) int {
	w := textBuf{b: b}
	w.s(`{"kind":"msr-restore","at":"`)
	w.s(at)
	w.s(`","msrs":[`)
	for i, e := range entries {
		if i > 0 {
			w.s(",")
		}
		w.s(`{"name":"`)
		w.s(e.Name)
		w.s(`","msr":"`)
		w.hex(uint64(e.MSR))
		w.s(`","firmware":"`)
		w.hex(e.Value)
		w.s(`"`)
		if e.Via != e.MSR {
			w.s(`,"via":"`)
			w.hex(uint64(e.Via))
			w.s(`"`)
		}
		w.s(`,"restored":`)
		if e.Restored {
			w.s("true")
		} else {
			w.s("false")
		}
		if e.ReadBackOK {
			w.s(`,"read_back":"`)
			w.hex(e.ReadBack)
			w.s(`"`)
		}
		w.s("}")
	}
	w.s("]}")
	return w.n
}

// WriteRestoreLine writes into b the human line of a restore and returns
// its length: each MSR with the value written back, then what did not go
// as it should (a write that raised #GP, a read back that raised #GP or
// differs), or that every value reads back as it was. Like
// WriteRestoreJSON it does not allocate and is kernel-safe.
func WriteRestoreLine(b []byte, at string, entries []SavedMSR) int {
	w := textBuf{b: b}
	w.s("ptilab: MSRs given back their values from before the run (")
	w.s(at)
	w.s("):")
	for i, e := range entries {
		if i > 0 {
			w.s(",")
		}
		w.s(" ")
		w.s(e.Name)
		w.s(" ")
		w.hex(e.Value)
	}
	clean := true
	for _, e := range entries {
		switch {
		case !e.Restored:
			w.s("; ")
			w.s(e.Name)
			w.s(": WRMSR ")
			w.hex(uint64(e.Via))
			w.s(" raised #GP")
		case !e.ReadBackOK:
			w.s("; ")
			w.s(e.Name)
			w.s(": the read back raised #GP")
		case e.ReadBack != e.Value:
			w.s("; ")
			w.s(e.Name)
			w.s(" reads back ")
			w.hex(e.ReadBack)
		default:
			continue
		}
		clean = false
	}
	if clean {
		w.s("; each reads back as it was")
	}
	return w.n
}

// textBuf writes text into a fixed buffer, dropping what does not fit,
// without allocating (kernel-safe: copies only).
type textBuf struct {
	b []byte
	n int
}

func (w *textBuf) s(s string) { w.n += copy(w.b[w.n:], s) }

// hex writes v as 0x and lower-case hexadecimal digits, as %#x does.
func (w *textBuf) hex(v uint64) {
	var d [18]byte
	i := len(d)
	for {
		i--
		d[i] = "0123456789abcdef"[v&15]
		v >>= 4
		if v == 0 {
			break
		}
	}
	i -= 2
	d[i], d[i+1] = '0', 'x'
	w.n += copy(w.b[w.n:], d[i:])
}
