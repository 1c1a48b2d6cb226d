package bench

// The benchmarks and post-steps, registered in the default plan's order.
func init() {
	Register(
		Benchmark{Name: "null", Summary: "the null system call (getppid) under each mode, flavour and global setting; in the 32-bit world by SYSENTER and INT 0x80, and with the linux flavour also the pt_regs copy methods and the phase breakdown",
			Worlds: []int{64, 32}, Keys: []string{"modes", "flavours", "global", "n", "r", "warmup"}, Run: nullSyscall},
		Benchmark{Name: "work", Summary: "the work curve: a system call that spends 0 to 5 µs in the kernel, minimal flavour",
			Worlds: []int{64, 32}, Keys: []string{"modes", "work_n", "work_ns", "r", "warmup"}, Run: workCurve},
		Benchmark{Name: "lseek", Summary: "lseek on a kernel file of the tasks kernel (a real system call, handled in Go), linux flavour, global pages off and on",
			Worlds: []int{64, 32}, Keys: []string{"modes", "n", "r", "warmup"}, Run: lseek},
		Benchmark{Name: "pingpong", Summary: "a token through two pipes between two tasks (context switches), processes and threads",
			Worlds: []int{64, 32}, Keys: []string{"modes", "pingpong_n", "r", "warmup"}, Run: pingPongTable},
		Benchmark{Name: "messaging", Summary: "perf's sched-messaging over Unix-domain stream socket pairs (perf's default) or pipes (messaging_ipc), processes and threads, every message counted and checksummed; in the 32-bit world also where its cycles go",
			Worlds: []int{64, 32}, Keys: []string{"modes", "messaging_groups", "messaging_loops", "messaging_size", "messaging_ipc", "r", "warmup"}, Run: messagingTable},
		Benchmark{Name: "probe", Summary: "the isolation probe: ring 3 reads a kernel address, the entry area and its own page; in the 64-bit world also the deferred modes' trampoline stack, and the list of what each mode's user table maps beyond on's; in the 32-bit world also a page fault and a double fault in its kernel and 100 round trips out of long mode",
			Worlds: []int{64, 32}, Keys: []string{"modes"}, Run: probe},
		Benchmark{Name: "retention", Summary: "the TLB retention proof, in ring 0: a user page's PTE pointed at another frame without invalidation between two CR3 writes; does the second read see the old frame (the translation kept: PCID with NOFLUSH, a global page without PCID) or the new one (walked again)",
			Worlds: []int{64}, Run: retention, Optional: true},
		Benchmark{Name: "flushcost", Summary: "TLB flush costs in ring 0, per operation, empty loop subtracted: MOV to CR3 without PCID, with PCID and NOFLUSH, with PCID without NOFLUSH; INVLPG; INVPCID types 0 to 3; the CR4.PGE toggle",
			Worlds: []int{64}, Keys: []string{"n", "r", "warmup"}, Run: flushCost, Optional: true},
		Benchmark{Name: "tlbsweep", Summary: "the TLB working-set sweep: a null call plus ring 3's reads of N distinct pages between calls (4 KiB and 2 MiB pages, aliases of one frame), and the kernel-side variant where the call reads M kernel pages; PTI's extra cost over off against N",
			Worlds: []int{64}, Keys: []string{"modes", "global", "tlbsweep_pages", "tlbsweep_sizes", "tlbsweep_kernel_pages", "tlbsweep_n", "r", "warmup"}, Run: tlbSweep, Optional: true},
		Benchmark{Name: "oracle", Summary: "the leak oracle: a calibration of cached and flushed loads timed with RDTSCP, then per mode ring 3 reads a kernel secret (Meltdown: the page fault recovered, a transient load of a probe line, Flush+Reload) and counts the bytes recovered; \"unavailable\" where cache timing is not observable (the emulators), where the secret is still read once per byte to show each mode's fault",
			Worlds: []int{64}, Keys: []string{"modes", "oracle_samples", "oracle_attempts"}, Run: oracle, Optional: true},
		Benchmark{Name: "deadlock", Summary: "a deadlock provoked on purpose, to show its report",
			Worlds: []int{64}, Run: deadlock, Optional: true},
		Benchmark{Name: "ladder", Summary: "the speculation-mitigation ladder: the null call and the ping-pong between processes under the mitigated flavour, each knob of `mitigations` alone, stacked in its order and as the set Linux would enable on this CPU, each rung's increment over the one below; knobs the CPU lacks unsupported; in the 32-bit world by SYSENTER, with the knobs Linux's entry_32.S has (verw, ibpb, rsb, retpoline; the others unsupported: not in 32-bit Linux's entry)",
			Worlds: []int{64, 32}, Keys: []string{"modes", "mitigations", "n", "pingpong_n", "r", "warmup"}, Run: ladder, Optional: true},
	)
	RegisterPostSteps(
		PostStep{Name: "seed null", Summary: "the null call, 32-bit vs 64-bit, shaped as the reference thread's table",
			Needs: []string{"null", "null32"}, Run: seedNull},
		PostStep{Name: "seed messaging", Summary: "sched-messaging, 32-bit vs 64-bit, shaped as the reference thread's table",
			Needs: []string{"messaging", "messaging32"}, Run: seedMessaging},
		PostStep{Name: "retention summary", Summary: "the TLB retention answers, in a machine line", Needs: []string{"retention"}, Run: retentionSummary},
	)
}
