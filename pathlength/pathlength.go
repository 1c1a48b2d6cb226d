// Package pathlength holds ptilab's path lengths: the instructions per
// system call (per round trip, per message, per flush operation) of its
// timed loops, counted by the emulators whose TSC counts instructions
// (QEMU -icount shift=0 and Bochs with clock: sync=none; host/qemu,
// host/bochs). It is the one table of them, keyed by the records'
// canonical key (contract.Subject.Key, with sched-messaging's IPC:
// contract.Messaging.Key): the boot tests (test/bench_test.go
// TestPathLengths, the deferred, ladder, Bochs and TLB tests) hold every
// figure their plans measure under an emulator to it and fail naming a
// record that has no row, and the image (package bench) compares the
// instructions retired per call that the CPU's fixed counter 0
// (INST_RETIRED.ANY) counts with its exact rows (bench's PMU
// cross-check).
//
// A figure is the TSC difference of a repeat of N calls divided by N,
// less the empty loop's (the same loop without the call, timed the same
// way): the loop's own instructions and the repeat's boundary (RDTSC to
// RDTSCP) cancel, and what is left is the call's path: from the ring-3
// SYSCALL (SYSENTER, INT 0x80, the vsyscall routine's CALL) to the
// instruction after the return, kernel and trampolines included.
//
// The rules, which Of applies:
//   - Global pages change no path: a record with global=on has the row of
//     the same key with global=off (the Bochs matrix checks that the
//     figures are equal). The table holds global=off rows only.
//   - Shifted programs change no path: a record with loop_offset (the
//     plan key that runs the ring-3 programs a multiple of 32 bytes
//     further) has the row of the same key without it. The programs are
//     position independent: the same bytes run at another address, with
//     the same instructions (test/bench_test.go TestLoopOffsets
//     finds every figure the same at offsets 0, 32 and 4064 under QEMU
//     -icount).
//   - A work row (a record with work_ns: the work curve) has no length:
//     the work call spins in the kernel until the TSC passes its point, so
//     the TSC, not the path, sets its instructions. Of says so with
//     ErrTSCSet.
//   - One row serves both emulators. They count the same instructions
//     except that a REP string instruction counts its iterations under
//     Bochs and one more under QEMU (README "Bochs"), and that the
//     ping-pong's repeat boundary, which no empty loop cancels, counts one
//     more under QEMU per repeat: where they differ, Bochs's figure is the
//     smaller, so the row, measured under QEMU, bounds both, and no such
//     path is exact. The rows of paths QEMU cannot run (PCID: TCG has none)
//     are Bochs's.
//   - Asi actions run only on the way back after an ASI transition: a
//     record with asi_actions other than none whose path makes none (its
//     asi_actions=none row is in noTransition) has that row.
//   - Every other key has no row: Of fails with ErrNoBound, and the boot
//     tests fail naming the record. A new mode, flavour, knob or benchmark
//     whose figures the tests' plans measure adds its rows here.
package pathlength

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ptilab/ptilab/experiment"
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
	// The boot tests check that the emulators measure exactly Bound, and
	// the image's PMU cross-check that the CPU retires exactly Bound.
	Exact bool
}

// Errors of Of.
var (
	// ErrNoBound: the table has no row for the key.
	ErrNoBound = errors.New("no path-length bound")
	// ErrTSCSet: a work row, whose instructions the TSC sets.
	ErrTSCSet = errors.New("no path length: the work loop spins on the TSC")
)

// Of returns the path of the record whose canonical key is key, by the
// package's rules: global=on takes global=off's row, a loop_offset the
// row without it, asi actions on a path without transitions the row
// without actions; a work row (work_ns) is ErrTSCSet; a key without a
// row ErrNoBound; a key that is not name=value pairs an error.
func Of(key string) (Path, error) {
	pairs, err := experiment.SplitPairs(key)
	if err != nil {
		return Path{}, err
	}
	var base, none [][2]string
	for _, p := range pairs {
		switch {
		case p[0] == "work_ns":
			return Path{}, fmt.Errorf("%s: %w", key, ErrTSCSet)
		case p[0] == "loop_offset":
			continue
		case p == [2]string{"global", "on"}:
			p[1] = "off"
		}
		base = append(base, p)
		if p[0] == "asi_actions" {
			p[1] = "none"
		}
		none = append(none, p)
	}
	if k := experiment.JoinPairs(none); noTransition[k] {
		return table[k], nil
	}
	p, ok := table[experiment.JoinPairs(base)]
	if !ok {
		return Path{}, fmt.Errorf("%s: %w", key, ErrNoBound)
	}
	return p, nil
}

// Exact returns the exact length of the path of the record keyed key in
// instructions per call, whatever its global pages (they change no path),
// and whether the table holds one (Path.Exact).
func Exact(key string) (int64, bool) {
	p, err := Of(key)
	return p.Bound, err == nil && p.Exact
}

// Keys returns the table's keys, sorted: the configurations that have a
// row (global pages off).
func Keys() []string { return slices.Sorted(maps.Keys(table)) }

// noTransition are the asi modes' rows (with asi_actions=none) whose
// path never goes to the sensitive table: getppid and lseek touch no
// user data (test/asi_test.go counts 0 transitions), so their asi
// actions, which run only after one, never run.
var noTransition = map[string]bool{
	"bench=null width=64 mode=asi entry=syscall flavour=minimal global=off asi_actions=none":      true,
	"bench=null width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=none":        true,
	"bench=lseek width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=none":       true,
	"bench=null width=64 mode=asi+pcid entry=syscall flavour=minimal global=off asi_actions=none": true,
	"bench=null width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none":   true,
	"bench=lseek width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none":  true,
}

// table is every path length, keyed by the record's canonical key with
// global pages off (contract.Subject.Key; Of applies the rules).
var table = map[string]Path{
	// The 64-bit null call (getppid: the trampoline's path) and lseek
	// (through tasks.Syscall, in Go, with per-process descriptors), under
	// QEMU -icount and Bochs alike.
	"bench=null width=64 mode=off entry=syscall flavour=minimal global=off": {15, true},
	"bench=null width=64 mode=on entry=syscall flavour=minimal global=off":  {21, true},
	"bench=null width=64 mode=off entry=syscall flavour=linux global=off":   {86, true},
	"bench=null width=64 mode=on entry=syscall flavour=linux global=off":    {92, true},
	"bench=lseek width=64 mode=off entry=syscall flavour=linux global=off":  {245, false},
	"bench=lseek width=64 mode=on entry=syscall flavour=linux global=off":   {251, false},
	// The ping-pong, per round trip: two writes, two reads, two context
	// switches.
	"bench=pingpong width=64 mode=off entry=syscall flavour=linux global=off tasks=processes": {2110, false},
	"bench=pingpong width=64 mode=on entry=syscall flavour=linux global=off tasks=processes":  {2134, false},
	"bench=pingpong width=64 mode=off entry=syscall flavour=linux global=off tasks=threads":   {2042, false},
	"bench=pingpong width=64 mode=on entry=syscall flavour=linux global=off tasks=threads":    {2066, false},
	// sched-messaging over pipes (perf -p), per message, start protocol
	// included: a write and its share of reads and switches.
	"bench=messaging width=64 mode=off entry=syscall flavour=linux global=off tasks=processes ipc=pipe": {892, false},
	"bench=messaging width=64 mode=on entry=syscall flavour=linux global=off tasks=processes ipc=pipe":  {905, false},
	"bench=messaging width=64 mode=off entry=syscall flavour=linux global=off tasks=threads ipc=pipe":   {837, false},
	"bench=messaging width=64 mode=on entry=syscall flavour=linux global=off tasks=threads ipc=pipe":    {849, false},
	// The 32-bit PAE kernel: SYSENTER through the vsyscall routine, INT
	// 0x80 straight; minimal trampolines, and linux ones with pt_regs
	// copied by REP MOVSL, REP MOVSB (QEMU counts each iteration of a REP
	// string instruction and one more, Bochs each iteration) and the exit
	// copy trimmed to 8 bytes; direct (Linux 4.19's shape) copies nothing,
	// has no REP, and checks the frame's EIP before SYSEXIT. INT 0x80's
	// linux trampoline copies by REP MOVSL, its only method.
	"bench=null32 width=32 mode=off entry=sysenter flavour=minimal global=off":           {21, true},
	"bench=null32 width=32 mode=on entry=sysenter flavour=minimal global=off":            {27, true},
	"bench=null32 width=32 mode=off entry=int80 flavour=minimal global=off":              {13, true},
	"bench=null32 width=32 mode=on entry=int80 flavour=minimal global=off":               {19, true},
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=movsl global=off":  {101, false},
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=movsl global=off":   {107, false},
	"bench=null32 width=32 mode=off entry=int80 flavour=linux global=off":                {83, false},
	"bench=null32 width=32 mode=on entry=int80 flavour=linux global=off":                 {89, false},
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=movsb global=off":  {203, false},
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=movsb global=off":   {209, false},
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=trim8 global=off":  {83, false},
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=trim8 global=off":   {89, false},
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=direct global=off": {69, true},
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=direct global=off":  {75, true},
	// The instrumented SYSENTER trampolines (stamps: LFENCE;RDTSC, its
	// sum and count at each phase boundary, test/bench_test.go
	// checkStamps), measured under QEMU -icount when the canonical key gave
	// them a row; Bochs counts their REP MOVSL and REP MOVSB copies one
	// less each (148 for movsl under off, 250 for movsb, 131 for trim8).
	// Fencing the stamps and counting them per phase (issue 21) added 17
	// to each (6 MFENCEs, 6 LFENCEs, 5 INCLs: 133 to 150 for movsl under
	// off). Not exact: the
	// PMU cross-check does not sample them around every repeat.
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=movsl stamps=on global=off":  {150, false},
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=movsl stamps=on global=off":   {156, false},
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=movsb stamps=on global=off":  {252, false},
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=movsb stamps=on global=off":   {258, false},
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=trim8 stamps=on global=off":  {132, false},
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=trim8 stamps=on global=off":   {138, false},
	"bench=null32 width=32 mode=off entry=sysenter flavour=linux copy=direct stamps=on global=off": {120, false},
	"bench=null32 width=32 mode=on entry=sysenter flavour=linux copy=direct stamps=on global=off":  {126, false},
	// The 32-bit ping-pong, per round trip, under the 32-bit tasks kernel
	// (Go compiled for 386, pipe copies as Linux's memcpy): SYSENTER
	// (Linux 4.19's entry) and INT 0x80.
	"bench=pingpong width=32 mode=off entry=sysenter flavour=linux copy=direct global=off tasks=processes": {1989, false},
	"bench=pingpong width=32 mode=on entry=sysenter flavour=linux copy=direct global=off tasks=processes":  {2013, false},
	"bench=pingpong width=32 mode=off entry=sysenter flavour=linux copy=direct global=off tasks=threads":   {1957, false},
	"bench=pingpong width=32 mode=on entry=sysenter flavour=linux copy=direct global=off tasks=threads":    {1981, false},
	"bench=pingpong width=32 mode=off entry=int80 flavour=linux global=off tasks=processes":                {2037, false},
	"bench=pingpong width=32 mode=on entry=int80 flavour=linux global=off tasks=processes":                 {2061, false},
	"bench=pingpong width=32 mode=off entry=int80 flavour=linux global=off tasks=threads":                  {2005, false},
	"bench=pingpong width=32 mode=on entry=int80 flavour=linux global=off tasks=threads":                   {2029, false},
	// lseek in the 32-bit tasks kernel (Go compiled for 386).
	"bench=lseek32 width=32 mode=off entry=sysenter flavour=linux copy=direct global=off": {163, false},
	"bench=lseek32 width=32 mode=on entry=sysenter flavour=linux copy=direct global=off":  {169, false},
	"bench=lseek32 width=32 mode=off entry=int80 flavour=linux global=off":                {177, false},
	"bench=lseek32 width=32 mode=on entry=int80 flavour=linux global=off":                 {183, false},
	// 32-bit sched-messaging over pipes, per message (SYSENTER, Linux
	// 4.19's entry).
	"bench=messaging width=32 mode=off entry=sysenter flavour=linux copy=direct global=off tasks=processes ipc=pipe": {754, false},
	"bench=messaging width=32 mode=on entry=sysenter flavour=linux copy=direct global=off tasks=processes ipc=pipe":  {766, false},
	"bench=messaging width=32 mode=off entry=sysenter flavour=linux copy=direct global=off tasks=threads ipc=pipe":   {717, false},
	"bench=messaging width=32 mode=on entry=sysenter flavour=linux copy=direct global=off tasks=threads ipc=pipe":    {729, false},
	// sched-messaging over AF_UNIX stream socket pairs (perf's default),
	// per message, in both worlds: the skb accounting against sk_sndbuf
	// on top of a pipe's copy.
	"bench=messaging width=64 mode=off entry=syscall flavour=linux global=off tasks=processes ipc=socket":              {1064, false},
	"bench=messaging width=64 mode=on entry=syscall flavour=linux global=off tasks=processes ipc=socket":               {1076, false},
	"bench=messaging width=64 mode=off entry=syscall flavour=linux global=off tasks=threads ipc=socket":                {995, false},
	"bench=messaging width=64 mode=on entry=syscall flavour=linux global=off tasks=threads ipc=socket":                 {1008, false},
	"bench=messaging width=32 mode=off entry=sysenter flavour=linux copy=direct global=off tasks=processes ipc=socket": {924, false},
	"bench=messaging width=32 mode=on entry=sysenter flavour=linux copy=direct global=off tasks=processes ipc=socket":  {936, false},
	"bench=messaging width=32 mode=off entry=sysenter flavour=linux copy=direct global=off tasks=threads ipc=socket":   {873, false},
	"bench=messaging width=32 mode=on entry=sysenter flavour=linux copy=direct global=off tasks=threads ipc=socket":    {885, false},
	// The deferred modes under QEMU -icount (test/deferred_test.go, null
	// and lseek): on-defer pays, beyond on, the dispatcher's call and
	// return, its save of RDI and its two stack moves (6 per call);
	// on-noswitch's getppid runs on the user table: no CR3 write, the path
	// of off's minimal trampoline, one less than off's linux one (which
	// leaves by the entry stack); its lseek goes through the dispatcher as
	// on-defer's, after the no-switch table's check (CMP, JEQ: 2 more).
	"bench=null width=64 mode=on-defer entry=syscall flavour=minimal global=off":    {27, true},
	"bench=null width=64 mode=on-defer entry=syscall flavour=linux global=off":      {98, true},
	"bench=null width=64 mode=on-noswitch entry=syscall flavour=minimal global=off": {15, true},
	"bench=null width=64 mode=on-noswitch entry=syscall flavour=linux global=off":   {85, true},
	"bench=lseek width=64 mode=on-defer entry=syscall flavour=linux global=off":     {257, false},
	"bench=lseek width=64 mode=on-noswitch entry=syscall flavour=linux global=off":  {259, false},
	// The asi modes (test/asi_test.go): off's entry; the way out tests the
	// ASI flag (CMP, JE: 2 more than off's). getppid and lseek touch no
	// user data: no ASI fault, and so no asi actions (noTransition). The
	// ping-pong's and sched-messaging's copies into and out of the rings
	// fault once each (4 per round trip; 2 per message and the start
	// protocol's, 2.1 per message over a run): the fault's delivery
	// through the stub and excCommon's ASI path, the retried access and
	// the switch back on the way out, with ASI_ACTIONS's test of
	// ASIActionsAt (CMP, JEQ: 2 more per transition since the actions
	// came, issue 26: 2250 -> 2258 and 964 -> 968 with asi_actions=none)
	// and the actions asiActions runs (test/asi_test.go asiActionCost:
	// verw 9, l1d 18, rsb 92 per transition). Bochs counts the faulting
	// access twice (before the fault and at the retry), QEMU once, as a
	// CPU retires it: these rows are Bochs's (QEMU's figures 4 per round
	// trip and about 2 per message below; truncated), under arrow_lake
	// (IA32_FLUSH_CMD for l1d). asi+pcid (Bochs only): a BTS of NOFLUSH
	// at each switch back, 1 per transition more.
	"bench=null width=64 mode=asi entry=syscall flavour=minimal global=off asi_actions=none":                                  {17, true},
	"bench=null width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=none":                                    {88, true},
	"bench=lseek width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=none":                                   {247, false},
	"bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=none tasks=processes":                {2258, false},
	"bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=none tasks=threads":                  {2190, false},
	"bench=messaging width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=none tasks=processes ipc=pipe":      {968, false},
	"bench=messaging width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=none tasks=threads ipc=pipe":        {913, false},
	"bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=verw tasks=processes":                {2294, false},
	"bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=verw tasks=threads":                  {2226, false},
	"bench=messaging width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=verw tasks=processes ipc=pipe":      {987, false},
	"bench=messaging width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=verw tasks=threads ipc=pipe":        {932, false},
	"bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=l1d tasks=processes":                 {2330, false},
	"bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=l1d tasks=threads":                   {2262, false},
	"bench=messaging width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=l1d tasks=processes ipc=pipe":       {1005, false},
	"bench=messaging width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=l1d tasks=threads ipc=pipe":         {950, false},
	"bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=rsb tasks=processes":                 {2626, false},
	"bench=pingpong width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=rsb tasks=threads":                   {2558, false},
	"bench=messaging width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=rsb tasks=processes ipc=pipe":       {1157, false},
	"bench=messaging width=64 mode=asi entry=syscall flavour=linux global=off asi_actions=rsb tasks=threads ipc=pipe":         {1102, false},
	"bench=null width=64 mode=asi+pcid entry=syscall flavour=minimal global=off asi_actions=none":                             {17, true},
	"bench=null width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none":                               {88, true},
	"bench=lseek width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none":                              {247, false},
	"bench=pingpong width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none tasks=processes":           {2262, false},
	"bench=pingpong width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none tasks=threads":             {2194, false},
	"bench=messaging width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none tasks=processes ipc=pipe": {970, false},
	"bench=messaging width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=none tasks=threads ipc=pipe":   {915, false},
	"bench=pingpong width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=verw tasks=processes":           {2298, false},
	"bench=pingpong width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=verw tasks=threads":             {2230, false},
	"bench=messaging width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=verw tasks=processes ipc=pipe": {989, false},
	"bench=messaging width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=verw tasks=threads ipc=pipe":   {934, false},
	"bench=pingpong width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=l1d tasks=processes":            {2334, false},
	"bench=pingpong width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=l1d tasks=threads":              {2266, false},
	"bench=messaging width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=l1d tasks=processes ipc=pipe":  {1007, false},
	"bench=messaging width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=l1d tasks=threads ipc=pipe":    {952, false},
	"bench=pingpong width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=rsb tasks=processes":            {2630, false},
	"bench=pingpong width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=rsb tasks=threads":              {2562, false},
	"bench=messaging width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=rsb tasks=processes ipc=pipe":  {1159, false},
	"bench=messaging width=64 mode=asi+pcid entry=syscall flavour=linux global=off asi_actions=rsb tasks=threads ipc=pipe":    {1104, false},
	// The paths only Bochs runs, on+pcid's (QEMU's TCG has no PCID), held
	// under Bochs (corei7_haswell_4770 and broadwell_ult alike; the
	// pinned 3.1-line build as Debian's 2.7 before it); per
	// round trip and per message truncated. on+pcid's null call: a BTS of
	// CR3's NOFLUSH bit each way.
	"bench=null width=64 mode=on+pcid entry=syscall flavour=minimal global=off":                             {23, true},
	"bench=null width=64 mode=on+pcid entry=syscall flavour=linux global=off":                               {94, true},
	"bench=lseek width=64 mode=on+pcid entry=syscall flavour=linux global=off":                              {253, false},
	"bench=pingpong width=64 mode=on+pcid entry=syscall flavour=linux global=off tasks=processes":           {2142, false},
	"bench=pingpong width=64 mode=on+pcid entry=syscall flavour=linux global=off tasks=threads":             {2074, false},
	"bench=messaging width=64 mode=on+pcid entry=syscall flavour=linux global=off tasks=processes ipc=pipe": {909, false},
	"bench=messaging width=64 mode=on+pcid entry=syscall flavour=linux global=off tasks=threads ipc=pipe":   {854, false},
	// The FRED entry's paths (experiment.FRED), which only Bochs's
	// wildcat_lake runs (its CPUID has FRED), per call and per round trip
	// (truncated). The minimal trampoline is SYSCALL's length: four
	// instructions of the event check where SYSCALL's has two SWAPGS and
	// the saved RSP's two MOVs. The linux one is 7 shorter than SYSCALL's
	// (no SYSRET check, no SWAPGS; a return frame built from pt_regs and a
	// JMP out of the FRED page instead), on every call of lseek and the
	// ping-pong too.
	"bench=null width=64 mode=off entry=fred flavour=minimal global=off":                       {15, true},
	"bench=null width=64 mode=on entry=fred flavour=minimal global=off":                        {21, true},
	"bench=null width=64 mode=on+pcid entry=fred flavour=minimal global=off":                   {23, true},
	"bench=null width=64 mode=off entry=fred flavour=linux global=off":                         {79, true},
	"bench=null width=64 mode=on entry=fred flavour=linux global=off":                          {85, true},
	"bench=null width=64 mode=on+pcid entry=fred flavour=linux global=off":                     {87, true},
	"bench=lseek width=64 mode=off entry=fred flavour=linux global=off":                        {238, false},
	"bench=lseek width=64 mode=on entry=fred flavour=linux global=off":                         {244, false},
	"bench=lseek width=64 mode=on+pcid entry=fred flavour=linux global=off":                    {246, false},
	"bench=pingpong width=64 mode=off entry=fred flavour=linux global=off tasks=processes":     {2082, false},
	"bench=pingpong width=64 mode=off entry=fred flavour=linux global=off tasks=threads":       {2014, false},
	"bench=pingpong width=64 mode=on entry=fred flavour=linux global=off tasks=processes":      {2106, false},
	"bench=pingpong width=64 mode=on entry=fred flavour=linux global=off tasks=threads":        {2038, false},
	"bench=pingpong width=64 mode=on+pcid entry=fred flavour=linux global=off tasks=processes": {2114, false},
	"bench=pingpong width=64 mode=on+pcid entry=fred flavour=linux global=off tasks=threads":   {2046, false},
	// lass (Bochs wildcat_lake, TestBochsFRED): off's trampolines and the
	// upper-half copies of its handlers, with CR4.LASS set: off's lengths.
	"bench=null width=64 mode=lass entry=syscall flavour=minimal global=off": {15, true},
	"bench=null width=64 mode=lass entry=syscall flavour=linux global=off":   {86, true},
	"bench=null width=64 mode=lass entry=fred flavour=minimal global=off":    {15, true},
	"bench=null width=64 mode=lass entry=fred flavour=linux global=off":      {79, true},
	// The deferred modes' PCID variants (truncated likewise):
	// on-defer+pcid pays on-defer's dispatcher over on+pcid;
	// on-noswitch+pcid's getppid writes no CR3 (off's path), its other
	// calls switch as on-defer+pcid's after the no-switch check.
	"bench=null width=64 mode=on-defer+pcid entry=syscall flavour=minimal global=off":                                {29, true},
	"bench=null width=64 mode=on-defer+pcid entry=syscall flavour=linux global=off":                                  {100, true},
	"bench=null width=64 mode=on-noswitch+pcid entry=syscall flavour=minimal global=off":                             {15, true},
	"bench=null width=64 mode=on-noswitch+pcid entry=syscall flavour=linux global=off":                               {85, true},
	"bench=lseek width=64 mode=on-defer+pcid entry=syscall flavour=linux global=off":                                 {259, false},
	"bench=lseek width=64 mode=on-noswitch+pcid entry=syscall flavour=linux global=off":                              {261, false},
	"bench=pingpong width=64 mode=on-defer+pcid entry=syscall flavour=linux global=off tasks=processes":              {2166, false},
	"bench=pingpong width=64 mode=on-defer+pcid entry=syscall flavour=linux global=off tasks=threads":                {2098, false},
	"bench=pingpong width=64 mode=on-noswitch+pcid entry=syscall flavour=linux global=off tasks=processes":           {2174, false},
	"bench=pingpong width=64 mode=on-noswitch+pcid entry=syscall flavour=linux global=off tasks=threads":             {2106, false},
	"bench=messaging width=64 mode=on-defer+pcid entry=syscall flavour=linux global=off tasks=processes ipc=pipe":    {921, false},
	"bench=messaging width=64 mode=on-defer+pcid entry=syscall flavour=linux global=off tasks=threads ipc=pipe":      {866, false},
	"bench=messaging width=64 mode=on-noswitch+pcid entry=syscall flavour=linux global=off tasks=processes ipc=pipe": {925, false},
	"bench=messaging width=64 mode=on-noswitch+pcid entry=syscall flavour=linux global=off tasks=threads ipc=pipe":   {870, false},
	// sched-messaging over socket pairs on on+pcid's path, which only
	// Bochs runs, per message (truncated).
	"bench=messaging width=64 mode=on+pcid entry=syscall flavour=linux global=off tasks=processes ipc=socket": {1080, false},
	"bench=messaging width=64 mode=on+pcid entry=syscall flavour=linux global=off tasks=threads ipc=socket":   {1026, false},
	// The mitigation ladder's rungs under off (bench ladder), per null
	// call and per ping-pong round trip (processes), measured under QEMU
	// -icount (its default CPU) when the mitigated flavour was written and
	// holding under Bochs: the linux flavour, the mitigated one with every
	// site off (6 disabled sites on the null path, a TEST and a taken JE
	// each), and each knob alone.
	"bench=ladder width=64 mode=off entry=syscall flavour=linux global=off":                                     {86, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=none":                      {98, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw":                      {99, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=bhb":                       {206, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=lfence":                    {99, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=retpoline":                 {103, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=linux global=off tasks=processes":                     {2110, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=none tasks=processes":      {2158, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw tasks=processes":      {2162, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=rsb tasks=processes":       {2370, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=bhb tasks=processes":       {2590, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=lfence tasks=processes":    {2162, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=retpoline tasks=processes": {2178, false},
	// The context switch's knobs (tasks.switchMM) as Linux orders them
	// since issue 21: the IBPB before the CR3 load, the RSB stuffing after
	// it; the rsb-only switch (switchRSB) lost the IBPB test, 4
	// instructions a switch (2378 to 2370 for rsb), and the IBPB's
	// switch keeps its CR3 value across the IBPB's call, 1 more (2238 to
	// 2240 for ibpb, below).
	// The stacked rungs and the linux set of QEMU's default CPU
	// (rsb+retpoline), measured under QEMU -icount when the canonical key
	// gave them a row (per round trip truncated).
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+bhb":                                      {207, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+bhb+lfence":                               {208, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+bhb+lfence+retpoline":                     {213, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=rsb+retpoline":                                 {103, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+rsb tasks=processes":                      {2374, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+rsb+bhb tasks=processes":                  {2806, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+rsb+bhb+lfence tasks=processes":           {2810, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+rsb+bhb+lfence+retpoline tasks=processes": {2830, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=rsb+retpoline tasks=processes":                 {2390, false},
	// The rungs only Bochs's tigerlake model runs (IA32_SPEC_CTRL,
	// IA32_PRED_CMD: TestBochsLadder), measured there when the canonical
	// key gave them a row: ibrs is eIBRS, set once for the run (none's
	// path), ibpb an IBPB at each switch between processes; its stacked
	// rungs and linux set (verw+ibrs+bhb).
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=ibrs":                                                    {98, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs":                                               {99, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+bhb":                                           {207, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+bhb+lfence":                                    {208, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+bhb+lfence+retpoline":                          {213, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=ibrs tasks=processes":                                    {2158, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=ibpb tasks=processes":                                    {2240, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs tasks=processes":                               {2162, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+bhb tasks=processes":                           {2594, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+ibpb tasks=processes":                          {2244, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+ibpb+rsb tasks=processes":                      {2434, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+ibpb+rsb+bhb tasks=processes":                  {2866, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+ibpb+rsb+bhb+lfence tasks=processes":           {2870, false},
	"bench=ladder width=64 mode=off entry=syscall flavour=mitigated global=off knobs=verw+ibrs+ibpb+rsb+bhb+lfence+retpoline tasks=processes": {2890, false},
	// The 32-bit ladder's rungs (bench ladder32) as the 64-bit one's,
	// measured when the mitigated SYSENTER trampoline was written: the
	// linux flavour (the direct trampoline), the mitigated one with every
	// site off (4 disabled sites on the null path), each knob alone.
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=linux copy=direct global=off":                                     {69, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=none":                      {77, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw":                      {78, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=retpoline":                 {82, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=linux copy=direct global=off tasks=processes":                     {1989, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=none tasks=processes":      {2021, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw tasks=processes":      {2025, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=rsb tasks=processes":       {2117, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=retpoline tasks=processes": {2041, false},
	// Its stacked rungs and QEMU's linux set, measured likewise.
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw+retpoline":                     {83, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=rsb+retpoline":                      {87, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw+rsb tasks=processes":           {2121, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw+rsb+retpoline tasks=processes": {2141, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=rsb+retpoline tasks=processes":      {2137, false},
	// The rungs only Bochs's tigerlake model runs in the 32-bit world
	// (IA32_PRED_CMD: TestBochsLadder32), measured there likewise: ibpb
	// alone and stacked.
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=ibpb tasks=processes":                    {2055, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw+ibpb tasks=processes":               {2059, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw+ibpb+rsb tasks=processes":           {2127, false},
	"bench=ladder32 width=32 mode=off entry=sysenter flavour=mitigated copy=direct global=off knobs=verw+ibpb+rsb+retpoline tasks=processes": {2147, false},
	// The TLB sweep (bench tlbsweep), per call plus its touches, global
	// pages off: the null call and the block's loads (20 per call under
	// off, 26 under on, 28 under on+pcid: a BTS of CR3's NOFLUSH bit each
	// way, Bochs only), 7 per page touched; the kernel's touch call 9 more
	// than getppid. Measured under QEMU -icount and Bochs alike.
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=0":        {20, false},
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=1":        {27, false},
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=16":       {132, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=0":         {26, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=1":         {33, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=16":        {138, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=0":    {28, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=1":    {35, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"user 4k\" sweep_pages=16":   {140, false},
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=0":        {20, false},
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=1":        {27, false},
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=16":       {132, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=0":         {26, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=1":         {33, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=16":        {138, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=0":    {28, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=1":    {35, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"user 2m\" sweep_pages=16":   {140, false},
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=0":      {29, false},
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=1":      {36, false},
	"bench=tlbsweep width=64 mode=off entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=16":     {141, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=0":       {35, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=1":       {42, false},
	"bench=tlbsweep width=64 mode=on entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=16":      {147, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=0":  {37, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=1":  {44, false},
	"bench=tlbsweep width=64 mode=on+pcid entry=syscall flavour=minimal global=off target=\"kernel 4k\" sweep_pages=16": {149, false},
	// The TLB flush operations (bench flushcost, no configuration: the
	// Go kernel's table, PCID 0), per operation: the operation alone, the
	// loop's DEC and JNZ subtracted (two MOVs for the CR4.PGE toggle).
	"bench=flushcost width=64 target=\"mov cr3\"":              {1, false},
	"bench=flushcost width=64 target=\"mov cr3 pcid noflush\"": {1, false},
	"bench=flushcost width=64 target=\"mov cr3 pcid\"":         {1, false},
	"bench=flushcost width=64 target=invlpg":                   {1, false},
	"bench=flushcost width=64 target=\"invlpg live\"":          {2, false},
	"bench=flushcost width=64 target=\"invpcid 0\"":            {1, false},
	"bench=flushcost width=64 target=\"invpcid 1\"":            {1, false},
	"bench=flushcost width=64 target=\"invpcid 2\"":            {1, false},
	"bench=flushcost width=64 target=\"invpcid 3\"":            {1, false},
	"bench=flushcost width=64 target=\"cr4.pge toggle\"":       {2, false},
}
