package cpustate

import (
	"fmt"
	"strings"
)

// LinuxKnob is one of the mitigation ladder's knobs (package pti's
// Mitigation, by name) as Linux (LinuxLogic) would set it on this CPU
// with its default options: On when Linux runs it on the path the knob
// stands for, and Why, from the vulnerability table.
type LinuxKnob struct {
	Name string
	On   bool
	Why  string
}

// LinuxKnobNames are the knobs, in package pti's order.
var LinuxKnobNames = []string{"verw", "ibrs", "ibpb", "rsb", "bhb", "lfence", "retpoline"}

// LinuxKnobs decides, from the vulnerability table Vulns gives for c
// (and the CPUID bits it read), which of the ladder's knobs Linux would
// turn on for a SYSCALL from a plain process and a switch between two
// such processes (bugs.c):
//   - verw: X86_FEATURE_CLEAR_CPU_BUF, VERW on every return to user,
//     wherever MDS, TAA (with TSX on) or RFDS is mitigated by clearing
//     buffers, the "attempted, no microcode" states included (Linux
//     still runs VERW there); MMIO Stale Data alone clears only around
//     VM entries;
//   - ibrs: Spectre v2 mode IBRS (on entry and exit) or Enhanced IBRS (set
//     once);
//   - ibpb: only with IBPB always on; Linux's default "conditional" IBPB
//     is for tasks that ask for it (prctl, seccomp), not plain processes;
//   - rsb: "RSB filling" in the Spectre v2 line (X86_FEATURE_RSB_CTXSW);
//   - bhb: the BHI mitigation "SW loop" (clear_bhb_loop on entry) or
//     "BHI_DIS_S"; with retpolines and no RRSBA Linux needs neither;
//   - lfence: never on SYSCALL: Linux's FENCE_SWAPGS_KERNEL_ENTRY fences
//     the exception entries' conditional SWAPGS, which entry_SYSCALL_64
//     does not have (Why says whether Linux enables it there);
//   - retpoline: Spectre v2 mode Retpolines. Linux 6.6.y's own syscall
//     dispatch became a switch in the 2024 BHI backports (x64_sys_call);
//     the 5.10 reference kernels called the table through the thunk.
func LinuxKnobs(c CPU) []LinuxKnob {
	f := readFeatures(c)
	b := setBugs(f)
	v := Vulns(c)
	has := func(name, s string) bool { return strings.Contains(v.Table[name], s) }
	var out []LinuxKnob
	// knob adds name's row from the first of rules that holds; when none
	// does, the knob is off for the reason otherwise.
	type rule struct {
		when, on bool
		why      string
	}
	knob := func(name, otherwise string, rules ...rule) {
		for _, r := range rules {
			if r.when {
				out = append(out, LinuxKnob{name, r.on, r.why})
				return
			}
		}
		out = append(out, LinuxKnob{name, false, otherwise})
	}

	var clear []string
	for _, n := range []string{"mds", "tsx_async_abort"} {
		if has(n, "Clear CPU buffers") {
			clear = append(clear, n)
		}
	}
	if v.Table["reg_file_data_sampling"] == "Mitigation: Clear Register File" {
		clear = append(clear, "reg_file_data_sampling")
	}
	knob("verw", "no MDS, TAA or RFDS clearing on return to user",
		rule{len(clear) > 0, true, "clears CPU buffers for " + strings.Join(clear, ", ")})
	v2 := v.Table["spectre_v2"]
	knob("ibrs", "Spectre v2 mode: "+modeOf(v2),
		rule{strings.HasPrefix(v2, "Mitigation: IBRS"), true, "Spectre v2 mode IBRS: on entry, off on exit"},
		rule{strings.HasPrefix(v2, "Mitigation: Enhanced"), true, "Enhanced IBRS: set once"})
	knob("ibpb", "no IBPB",
		rule{strings.Contains(v2, "IBPB: always-on"), true, "IBPB always on"},
		rule{strings.Contains(v2, "IBPB: conditional"), false, "IBPB conditional: only for tasks that ask (prctl, seccomp)"})
	knob("rsb", "no RSB filling on context switch ("+modeOf(v2)+")",
		rule{strings.Contains(v2, "RSB filling"), true, "RSB filling on context switch"})
	knob("bhb", "BHI: "+v.BHI,
		rule{v.BHI == "SW loop, KVM: SW loop", true, "BHI: clear_bhb_loop on entry"},
		rule{v.BHI == "BHI_DIS_S", true, "BHI: BHI_DIS_S set once"})
	knob("lfence", "Linux would not fence SWAPGS at all here",
		rule{b.spectreV1() && (f.fsgsbase || !f.smap || b.meltdown), false, "Linux fences the exception entries' SWAPGS here (FENCE_SWAPGS_KERNEL), not SYSCALL's"})
	knob("retpoline", "Spectre v2 mode: "+modeOf(v2),
		rule{strings.HasPrefix(v2, "Mitigation: Retpolines"), true, "Spectre v2 mode Retpolines"})
	return out
}

// spectreV1 is X86_BUG_SPECTRE_V1: every CPU but the whitelisted
// no-speculation ones.
func (b bugs) spectreV1() bool { return b.ptiWhy != "whitelisted model (no speculation)" }

// modeOf is the mode part of a Spectre v2 line, "Not affected" as is.
func modeOf(v2 string) string {
	m, _, _ := strings.Cut(v2, ";")
	return strings.TrimPrefix(m, "Mitigation: ")
}

// LinuxKnobLine is the line that says what the `linux` set means on this
// CPU: the knobs on, then why each is on or off.
func LinuxKnobLine(ks []LinuxKnob) string {
	var on, why []string
	for _, k := range ks {
		if k.On {
			on = append(on, k.Name)
		}
		why = append(why, fmt.Sprintf("%s %s (%s)", k.Name, map[bool]string{true: "on", false: "off"}[k.On], k.Why))
	}
	set := "none"
	if len(on) > 0 {
		set = strings.Join(on, "+")
	}
	return fmt.Sprintf("linux = %s, as Linux %s would set them here: %s", set, LinuxLogic, strings.Join(why, "; "))
}
