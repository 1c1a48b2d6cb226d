// Package pathlength holds ptilab's path lengths: the instructions per
// system call (per round trip, per message) of its timed loops, counted by
// the emulators whose TSC counts instructions (QEMU -icount shift=0 and
// Bochs with clock: sync=none; host/qemu, host/bochs). It is the
// one table of them: the boot tests (test/bench_test.go TestPathLengths)
// hold the measured figures to it, and the image (package bench) compares
// the instructions retired per call that the CPU's fixed counter 0
// (INST_RETIRED.ANY) counts with its exact entries (bench's PMU
// cross-check).
//
// A figure is the TSC difference of a repeat of N calls divided by N,
// less the empty loop's (the same loop without the call, timed the same
// way): the loop's own instructions and the repeat's boundary (RDTSC to
// RDTSCP) cancel, and what is left is the call's path: from the ring-3
// SYSCALL (SYSENTER, INT 0x80, the vsyscall routine's CALL) to the
// instruction after the return, kernel and trampolines included.
package pathlength

import (
	"fmt"

	"github.com/ptilab/ptilab/contract"
)

// Path is a path's length in instructions per operation.
type Path struct {
	// Bound is the most instructions the path may take: measured when the
	// path was written. A change may make a path shorter, never longer.
	Bound int64
	// Exact marks a path that is exactly Bound instructions on every x86
	// CPU: it has no REP string instruction (QEMU's icount counts each
	// iteration and one more, Bochs each iteration, a CPU's instructions
	// retired the instruction once: V. Weaver, "Retired Instructions",
	// web.eece.maine.edu/~vweaver/projects/perf_counters), no branch on
	// what the CPU has, and no Go code (whose paths depend on the CPU's
	// features).
	// TestPathLengths checks that the emulators measure exactly Bound, and
	// the image's PMU cross-check that the CPU retires exactly Bound.
	Exact bool
}

// ICount are the paths both QEMU (-icount shift=0) and Bochs run, held
// under QEMU: keyed by Key, from the records with global pages off (global
// pages change no path: the Bochs boot test checks it). A longer
// trampoline fails the test; isolation must cost instructions.
var ICount = map[string]Path{
	"null off/minimal": {15, true},
	"null on/minimal":  {21, true},
	"null off/linux":   {86, true},
	"null on/linux":    {92, true},
	"lseek off/linux":  {245, false}, // through tasks.Syscall, in Go, with per-process descriptors
	"lseek on/linux":   {251, false},
	// Per round trip: two writes, two reads, two context switches.
	"pingpong off/processes": {2110, false},
	"pingpong on/processes":  {2134, false},
	"pingpong off/threads":   {2042, false},
	"pingpong on/threads":    {2066, false},
	// Per message, start protocol included: a write and its share of
	// reads and switches.
	"messaging off/processes": {892, false},
	"messaging on/processes":  {905, false},
	"messaging off/threads":   {837, false},
	"messaging on/threads":    {849, false},
	// The 32-bit PAE kernel: SYSENTER through the vsyscall routine, INT
	// 0x80 straight; minimal trampolines, and linux ones with pt_regs
	// copied by REP MOVSL, REP MOVSB (QEMU counts each iteration of a REP
	// string instruction) and the exit copy trimmed to 8 bytes; direct
	// (Linux 4.19's shape) copies nothing and has no REP.
	"null32 off/sysenter/minimal/false":      {21, true},
	"null32 on/sysenter/minimal/false":       {27, true},
	"null32 off/int80/minimal/false":         {13, true},
	"null32 on/int80/minimal/false":          {19, true},
	"null32 off/sysenter/linux/movsl/false":  {101, false},
	"null32 on/sysenter/linux/movsl/false":   {107, false},
	"null32 off/int80/linux/movsl/false":     {83, false},
	"null32 on/int80/linux/movsl/false":      {89, false},
	"null32 off/sysenter/linux/movsb/false":  {203, false},
	"null32 on/sysenter/linux/movsb/false":   {209, false},
	"null32 off/sysenter/linux/trim8/false":  {83, false},
	"null32 on/sysenter/linux/trim8/false":   {89, false},
	"null32 off/sysenter/linux/direct/false": {69, true}, // with the check of the frame's EIP before SYSEXIT
	"null32 on/sysenter/linux/direct/false":  {75, true},
	// The 32-bit ping-pong, per round trip, under the 32-bit tasks kernel
	// (Go compiled for 386, pipe copies as Linux's memcpy): SYSENTER
	// (Linux 4.19's entry) and INT 0x80.
	"pingpong32 off/sysenter/processes": {1989, false},
	"pingpong32 on/sysenter/processes":  {2013, false},
	"pingpong32 off/sysenter/threads":   {1957, false},
	"pingpong32 on/sysenter/threads":    {1981, false},
	"pingpong32 off/int80/processes":    {2037, false},
	"pingpong32 on/int80/processes":     {2061, false},
	"pingpong32 off/int80/threads":      {2005, false},
	"pingpong32 on/int80/threads":       {2029, false},
	// lseek in the 32-bit tasks kernel (Go compiled for 386).
	"lseek32 off/sysenter/linux/direct/false": {163, false},
	"lseek32 on/sysenter/linux/direct/false":  {169, false},
	"lseek32 off/int80/linux/movsl/false":     {177, false},
	"lseek32 on/int80/linux/movsl/false":      {183, false},
	// 32-bit sched-messaging, per message (SYSENTER, Linux 4.19's entry).
	"messaging32 off/processes": {754, false},
	"messaging32 on/processes":  {766, false},
	"messaging32 off/threads":   {717, false},
	"messaging32 on/threads":    {729, false},
	// sched-messaging over AF_UNIX stream socket pairs (perf's default),
	// per message, in both worlds: the skb accounting against sk_sndbuf
	// on top of a pipe's copy.
	"messaging socket off/processes":   {1064, false},
	"messaging socket on/processes":    {1076, false},
	"messaging socket off/threads":     {995, false},
	"messaging socket on/threads":      {1008, false},
	"messaging32 socket off/processes": {924, false},
	"messaging32 socket on/processes":  {936, false},
	"messaging32 socket off/threads":   {873, false},
	"messaging32 socket on/threads":    {885, false},
}

// Bochs are the paths only Bochs runs, on+pcid's (QEMU's TCG has no
// PCID), held under Bochs 2.7 (corei7_haswell_4770 and broadwell_ult
// alike); per round trip and per message truncated.
var Bochs = map[string]Path{
	"null on+pcid/minimal": {23, true}, // a BTS of CR3's NOFLUSH bit each way
	"null on+pcid/linux":   {94, true},
	"lseek on+pcid/linux":  {253, false},
	// Per round trip and per message (truncated).
	"pingpong on+pcid/processes":  {2142, false},
	"pingpong on+pcid/threads":    {2074, false},
	"messaging on+pcid/processes": {909, false},
	"messaging on+pcid/threads":   {854, false},
	// The deferred modes' PCID variants (truncated likewise): on-defer+pcid
	// pays on-defer's dispatcher over on+pcid; on-noswitch+pcid's getppid
	// writes no CR3 (off's path), its other calls switch as on-defer+pcid's
	// after the no-switch check.
	"null on-defer+pcid/minimal":           {29, true},
	"null on-defer+pcid/linux":             {100, true},
	"null on-noswitch+pcid/minimal":        {15, true},
	"null on-noswitch+pcid/linux":          {85, true},
	"lseek on-defer+pcid/linux":            {259, false},
	"lseek on-noswitch+pcid/linux":         {261, false},
	"pingpong on-defer+pcid/processes":     {2166, false},
	"pingpong on-defer+pcid/threads":       {2098, false},
	"pingpong on-noswitch+pcid/processes":  {2174, false},
	"pingpong on-noswitch+pcid/threads":    {2106, false},
	"messaging on-defer+pcid/processes":    {921, false},
	"messaging on-defer+pcid/threads":      {866, false},
	"messaging on-noswitch+pcid/processes": {925, false},
	"messaging on-noswitch+pcid/threads":   {870, false},
}

// Deferred are the deferred modes' paths under QEMU -icount shift=0, held
// by their own boot (test/deferred_test.go, null and lseek under off, on,
// on-defer and on-noswitch): on-defer pays, beyond on, the dispatcher's
// call and return, its save of RDI and its two stack moves (6 per call);
// on-noswitch's getppid runs on the user table: no CR3 write, the path of
// off's minimal trampoline, one less than off's linux one (which leaves by
// the entry stack); its lseek goes through the dispatcher as on-defer's,
// after the no-switch table's check (CMP, JEQ: 2 more).
var Deferred = map[string]Path{
	"null on-defer/minimal":    {27, true},
	"null on-defer/linux":      {98, true},
	"null on-noswitch/minimal": {15, true},
	"null on-noswitch/linux":   {85, true},
	"lseek on-defer/linux":     {257, false},
	"lseek on-noswitch/linux":  {259, false},
}

// Key names a timing loop's record in the tables: "bench mode/flavour"
// in the 64-bit world, "bench Key32" in the 32-bit one.
func Key(s contract.Subject) string {
	if s.Width == 32 {
		return s.Bench + " " + Key32(s)
	}
	return fmt.Sprintf("%v %v/%v", s.Bench, s.Mode, s.Flavour)
}

// Key32 names a 32-bit record's configuration:
// mode/entry/flavour[/copy][/stamps]/global.
func Key32(s contract.Subject) string {
	k := fmt.Sprintf("%v/%v/%v", s.Mode, s.Entry, s.Flavour)
	if s.Copy != "" {
		k += "/" + s.Copy
	}
	if s.Stamps {
		k += "/stamps"
	}
	return k + fmt.Sprintf("/%v", s.Global)
}

// Exact returns the exact length of s's path in instructions per call,
// whatever its global pages (they change no path), and whether the
// tables hold one (Path.Exact).
func Exact(s contract.Subject) (int64, bool) {
	s.Global = false
	k := Key(s)
	for _, m := range []map[string]Path{ICount, Bochs, Deferred} {
		if p, ok := m[k]; ok {
			return p.Bound, p.Exact
		}
	}
	return 0, false
}
