package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Benchmark is a benchmark of the registry: written once, run in each of
// its worlds under its own plan name there.
type Benchmark struct {
	// Name is its plan name in the 64-bit world; in the 32-bit world its
	// plan name is Name+"32".
	Name string
	// Summary says what it measures, in a line (the README's plan table).
	Summary string
	// Worlds are the widths of the worlds it runs in (64, 32).
	Worlds []int
	// Keys are the plan keys it reads.
	Keys []string
	// Run runs it in x.World and returns its results, for the post-steps.
	Run func(x *Ctx) any
	// Optional leaves it out of the default plan.
	Optional bool
}

// PostStep is a table made from several benchmarks' results, once every
// one it needs has run.
type PostStep struct {
	Name    string
	Summary string   // what it shows, in a line (the README)
	Needs   []string // plan names
	Run     func(x *Ctx, results map[string]any)
}

// Registry lists the benchmarks a plan may name, in the default plan's
// order.
var Registry = []Benchmark{
	{Name: "null", Summary: "the null system call (getppid) under each mode, flavour and global setting; in the 32-bit world by SYSENTER and INT 0x80, and with the linux flavour also the pt_regs copy methods and the phase breakdown",
		Worlds: []int{64, 32}, Keys: []string{"modes", "flavours", "global", "n", "r", "warmup"}, Run: nullSyscall},
	{Name: "work", Summary: "the work curve: a system call that spends 0 to 5 µs in the kernel, minimal flavour",
		Worlds: []int{64, 32}, Keys: []string{"modes", "work_n", "work_ns", "r", "warmup"}, Run: workCurve},
	{Name: "lseek", Summary: "lseek on a kernel file of the tasks kernel (a real system call, handled in Go), linux flavour, global pages off and on",
		Worlds: []int{64, 32}, Keys: []string{"modes", "n", "r", "warmup"}, Run: lseek},
	{Name: "pingpong", Summary: "a token through two pipes between two tasks (context switches), processes and threads",
		Worlds: []int{64, 32}, Keys: []string{"modes", "pingpong_n", "r", "warmup"}, Run: pingPongTable},
	{Name: "messaging", Summary: "perf's sched-messaging over Unix-domain stream socket pairs (perf's default) or pipes (messaging_ipc), processes and threads, every message counted and checksummed; in the 32-bit world also where its cycles go",
		Worlds: []int{64, 32}, Keys: []string{"modes", "messaging_groups", "messaging_loops", "messaging_size", "messaging_ipc", "r", "warmup"}, Run: messagingTable},
	{Name: "probe", Summary: "the isolation probe: ring 3 reads a kernel address, the entry area and its own page; in the 64-bit world also the deferred modes' trampoline stack, and the list of what each mode's user table maps beyond on's; in the 32-bit world also a page fault and a double fault in its kernel and 100 round trips out of long mode",
		Worlds: []int{64, 32}, Keys: []string{"modes"}, Run: probe},
	{Name: "retention", Summary: "the TLB retention proof, in ring 0: a user page's PTE pointed at another frame without invalidation between two CR3 writes; does the second read see the old frame (the translation kept: PCID with NOFLUSH, a global page without PCID) or the new one (walked again)",
		Worlds: []int{64}, Run: retention, Optional: true},
	{Name: "flushcost", Summary: "TLB flush costs in ring 0, per operation, empty loop subtracted: MOV to CR3 without PCID, with PCID and NOFLUSH, with PCID without NOFLUSH; INVLPG; INVPCID types 0 to 3; the CR4.PGE toggle",
		Worlds: []int{64}, Keys: []string{"n", "r", "warmup"}, Run: flushCost, Optional: true},
	{Name: "tlbsweep", Summary: "the TLB working-set sweep: a null call plus ring 3's reads of N distinct pages between calls (4 KiB and 2 MiB pages, aliases of one frame), and the kernel-side variant where the call reads M kernel pages; PTI's extra cost over off against N",
		Worlds: []int{64}, Keys: []string{"modes", "global", "tlbsweep_pages", "tlbsweep_sizes", "tlbsweep_kernel_pages", "tlbsweep_n", "r", "warmup"}, Run: tlbSweep, Optional: true},
	{Name: "oracle", Summary: "the leak oracle: a calibration of cached and flushed loads timed with RDTSCP, then per mode ring 3 reads a kernel secret (Meltdown: the page fault recovered, a transient load of a probe line, Flush+Reload) and counts the bytes recovered; \"unavailable\" where cache timing is not observable (the emulators), where the secret is still read once per byte to show each mode's fault",
		Worlds: []int{64}, Keys: []string{"modes", "oracle_samples", "oracle_attempts"}, Run: oracle, Optional: true},
	{Name: "deadlock", Summary: "a deadlock provoked on purpose, to show its report",
		Worlds: []int{64}, Run: deadlock, Optional: true},
	{Name: "ladder", Summary: "the speculation-mitigation ladder: the null call and the ping-pong between processes under the mitigated flavour, each knob of `mitigations` alone, stacked in its order and as the set Linux would enable on this CPU, each rung's increment over the one below; knobs the CPU lacks unsupported; in the 32-bit world by SYSENTER, with the knobs Linux's entry_32.S has (verw, ibpb, rsb, retpoline; the others unsupported: not in 32-bit Linux's entry)",
		Worlds: []int{64, 32}, Keys: []string{"modes", "mitigations", "n", "pingpong_n", "r", "warmup"}, Run: ladder, Optional: true},
}

// PostSteps are the tables made from several benchmarks' results: the
// ones shaped as the reference threads' 32-bit vs 64-bit tables.
var PostSteps = []PostStep{
	{Name: "seed null", Summary: "the null call, 32-bit vs 64-bit, shaped as the reference thread's table",
		Needs: []string{"null", "null32"}, Run: seedNull},
	{Name: "seed messaging", Summary: "sched-messaging, 32-bit vs 64-bit, shaped as the reference thread's table",
		Needs: []string{"messaging", "messaging32"}, Run: seedMessaging},
}

// planName is a benchmark's plan name in the world of width.
func planName(name string, width int) string {
	if width == 32 {
		return name + "32"
	}
	return name
}

// entry is a plan name's benchmark and world.
type entry struct {
	b     *Benchmark
	width int
}

// lookup finds the benchmark and world of a plan name.
func lookup(name string) (entry, bool) {
	for i := range Registry {
		b := &Registry[i]
		for _, w := range b.Worlds {
			if planName(b.Name, w) == name {
				return entry{b, w}, true
			}
		}
	}
	return entry{}, false
}

// PlanNames lists the plan names of the registry: each benchmark's, in
// its worlds, 64-bit ones first, in the registry's order; with optional,
// those left out of the default plan too.
func PlanNames(optional bool) []string {
	var out []string
	for _, width := range []int{64, 32} {
		for _, b := range Registry {
			if slices.Contains(b.Worlds, width) && (optional || !b.Optional) {
				out = append(out, planName(b.Name, width))
			}
		}
	}
	return out
}

// PlanTable returns the lines of the README's table of benchmarks: one
// per benchmark, with its plan names, what it measures and the plan keys
// it reads; then one per post-step, with the benchmarks it needs.
func PlanTable() []string {
	out := []string{"| names | what it measures | plan keys |", "|---|---|---|"}
	for _, b := range Registry {
		var names []string
		for _, w := range b.Worlds {
			names = append(names, "`"+planName(b.Name, w)+"`")
		}
		keys := "-"
		if len(b.Keys) > 0 {
			keys = "`" + strings.Join(b.Keys, "`, `") + "`"
		}
		out = append(out, fmt.Sprintf("| %s | %s | %s |", strings.Join(names, ", "), b.Summary, keys))
	}
	for _, s := range PostSteps {
		out = append(out, fmt.Sprintf("| after `%s` | %s | - |", strings.Join(s.Needs, "` and `"), s.Summary))
	}
	return out
}

// AppliesTo lists the plan names of the benchmarks that read plan key k,
// as the README's plan table gives them.
func AppliesTo(k string) string {
	var names []string
	for _, width := range []int{64, 32} {
		for _, b := range Registry {
			if slices.Contains(b.Worlds, width) && slices.Contains(b.Keys, k) {
				names = append(names, planName(b.Name, width))
			}
		}
	}
	return strings.Join(names, ", ")
}
