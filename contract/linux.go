package contract

// Linux is the running Linux kernel that a `ptilab linux` run measured
// (the machine record's board "linux"), read from /proc and /sys before
// the benchmarks: what decides its figures and how its rows are keyed.
type Linux struct {
	// Release and Version are uname's (/proc/sys/kernel/osrelease and
	// version), Cmdline the kernel's command line (/proc/cmdline).
	Release string `json:"release"`
	Version string `json:"version"`
	Cmdline string `json:"cmdline"`
	// PTI is the kernel's page-table isolation as a mode of the model:
	// "off", "on" or "on+pcid" (the mode of every record of the run), and
	// PTIWhy what said so: the pti and pcid flags of /proc/cpuinfo
	// (X86_FEATURE_PTI, X86_FEATURE_PCID, which the kernel clears where it
	// does not use them: arch/x86/mm/pti.c, arch/x86/mm/init.c), the
	// vulnerabilities' meltdown line, and pti=, nopti, nopcid or
	// mitigations= on the command line.
	PTI     string `json:"pti"`
	PTIWhy  string `json:"pti_why"`
	INVPCID bool   `json:"invpcid"`
	// Global is whether the kernel maps its entry text as global pages
	// (the records' global), KernelTextGlobal the rest of its text, and
	// GlobalWhy why: with PTI off every kernel mapping is global where the
	// CPU has PGE; with PTI on the entry text and cpu_entry_area are
	// (pti_clone_pgtable, cea_set_pte), the rest of the text only where
	// pti_kernel_image_global_ok() holds (no PCID, pti=auto, no
	// CONFIG_RANDSTRUCT: arch/x86/mm/pti.c). ptilab's global=on makes both
	// global: a Linux row with PCIDs stands beside it with less global.
	Global           bool   `json:"global"`
	KernelTextGlobal bool   `json:"kernel_text_global"`
	GlobalWhy        string `json:"global_why"`
	// Governor is cpu0's cpufreq scaling governor and Driver its driver
	// (absent without cpufreq: most virtual machines); Boost is "on",
	// "off" or "unknown" (/sys/devices/system/cpu/cpufreq/boost, or
	// intel_pstate's no_turbo); SMT /sys/devices/system/cpu/smt/control
	// ("on", "off", "notsupported", ...); CPUs the online CPUs.
	Governor string `json:"governor,omitempty"`
	Driver   string `json:"driver,omitempty"`
	Boost    string `json:"boost"`
	SMT      string `json:"smt"`
	CPUs     int    `json:"cpus"`
	// Hypervisor is the hypervisor the kernel runs under (CPUID leaf
	// 40000000H's vendor, or /sys/hypervisor/type), absent on bare metal.
	Hypervisor string `json:"hypervisor,omitempty"`
	// Pinned is the CPU the timed loops ran on (plan key cpu), "none"
	// when unpinned (the scheduler's choice, as perf bench's).
	Pinned string `json:"pinned"`
	// PerfEventParanoid is /proc/sys/kernel/perf_event_paranoid, and
	// Counters what perf_event_open gave: "kernel+user", "user" (the
	// kernel's part refused), or "unsupported: <why>".
	PerfEventParanoid *int   `json:"perf_event_paranoid,omitempty"`
	Counters          string `json:"counters"`
	// Compat32 is "native" where the kernel runs the 386 build's
	// program natively (the compat rows ran), else why not ("exec format
	// error", "runs under qemu-i386", "no build/ptilab-linux386").
	Compat32 string `json:"compat32"`
	// Perf is `perf version`'s line, absent without perf on the PATH.
	Perf string `json:"perf,omitempty"`
}

// PerfBench is a figure of perf's own benchmark (`perf bench syscall
// basic`, `perf bench sched messaging`) taken in the same run as
// ptilab's figure of the same workload, the two interleaved (a perf run,
// then ptilab's, Rounds times): both per round, in Unit ("ns" per call,
// "s" per sched-messaging run), and Ratio, ptilab's median over perf's.
// Key is the ptilab record's key it stands beside; Command perf's command
// line. Error says why perf gave no figure (its output is absent).
type PerfBench struct {
	Key     string    `json:"key"`
	Command string    `json:"command"`
	Unit    string    `json:"unit"`             // "ns" per call, "s" per run
	Rounds  int       `json:"rounds"`           // perf runs, and ptilab's
	Perf    []float64 `json:"perf,omitempty"`   // perf's figure per round, in Unit
	Ptilab  []float64 `json:"ptilab,omitempty"` // ptilab's, likewise
	Ratio   float64   `json:"ratio,omitempty"`  // ptilab's median / perf's
	Error   string    `json:"error,omitempty"`  // why there is no figure
}
