// Package reference holds the reference figures of the Linux kernel
// mailing-list threads that motivated ptilab (docs/references.md), and
// the lines the image prints under its tables to set them beside its own
// figures. The image (package bench) and the host tool's reports
// (host/report) both print these lines, so that a report reads as the
// run did. It is plain Go, safe for the image outside kernel mode and for
// the host.
package reference

import "fmt"

// The null system call (getppid/getpid loop) on a 64-bit Linux 5.10
// kernel without and with PTI, in ns per call, and what a 2 µs system call
// pays under PTI, in %.
const (
	NullOffNs     = 79.2
	NullOnNs      = 202.5
	Work2usPctPTI = 6
)

// LseekGlobalPct is the gain of global entry pages for will-it-scale's
// lseek1 under PTI on Skylake with PCID, in % of operations per second
// (15 783 951 -> 16 054 688 ops/s).
const LseekGlobalPct = 100 * (16054688.0/15783951.0 - 1)

// MessagingRun is perf bench sched messaging -g 20 on an Ivy Bridge Xeon
// E5-1620v2 under a Linux kernel, without and with PTI, in seconds.
type MessagingRun struct {
	Kernel    string
	OffS, OnS float64
}

// The sched-messaging runs of the 64-bit and the 32-bit PAE kernel.
var (
	Messaging64 = MessagingRun{"64-bit", 0.24, 0.30}
	Messaging32 = MessagingRun{"32-bit PAE kernel", 0.28, 0.44}
)

// MessagingAt is the sched-messaging run of width (64 or 32).
func MessagingAt(width int) MessagingRun {
	if width == 32 {
		return Messaging32
	}
	return Messaging64
}

// Null is the line under the 64-bit null call's table.
func Null() []string {
	return []string{fmt.Sprintf("reference (docs/references.md: Linux 5.10 getppid loop, 64-bit): off %.1f ns, on %.1f ns per call, on vs off %.2f",
		NullOffNs, NullOnNs, NullOnNs/NullOffNs)}
}

// Deferred is the line under the 64-bit null call's table when the plan
// runs the deferred modes (on-defer, on-noswitch): the claim on the list
// about Chartre's RFC, which those rows test.
func Deferred() []string {
	return []string{`reference (docs/references.md: the answer to Chartre's RFC "x86/pti: Defer CR3 switch to C code", 2020): "the penalty comes from the page table switch; doing it at a different time is unlikely to make much difference" (compare on-defer with on; on-noswitch skips the switch for getppid and work)`}
}

// Work is the line under the 64-bit work curve's table.
func Work() []string {
	return []string{fmt.Sprintf("reference (docs/references.md: Linux threads): on vs off %.2f for a null call, about %.2f for a 2 µs call (increases of %.0f%% and about %d%%)",
		NullOnNs/NullOffNs, 1+float64(Work2usPctPTI)/100, 100*(NullOnNs/NullOffNs-1), Work2usPctPTI)}
}

// Lseek is the line under the 64-bit lseek table.
func Lseek() []string {
	return []string{fmt.Sprintf("reference (docs/references.md): global pages for the entry text under PTI, Skylake with PCID: lseek1 15 783 951 -> 16 054 688 ops/s (an increase of %.2f%%)", LseekGlobalPct)}
}

// Messaging is the lines under the sched-messaging table of the world of
// width (64 or 32), for runs over ipc ("socket" or "pipe"): the reference
// ran perf's default, Unix-domain stream sockets, so it compares like with
// like with socket runs; pipe runs compare in ratio only (PipeNote).
func Messaging(width int, ipc string) []string {
	r := MessagingAt(width)
	l := []string{fmt.Sprintf("reference (docs/references.md: Ivy Bridge Xeon, perf bench sched messaging -g 20, %s, Unix-domain stream sockets): %.2f s off, %.2f s with PTI, on vs off %.2f",
		r.Kernel, r.OffS, r.OnS, r.OnS/r.OffS)}
	if ipc == "pipe" {
		l = append(l, PipeNote)
	}
	return l
}

// PipeNote says why runs over pipes compare with the reference in ratio
// only.
const PipeNote = "these runs use pipes (perf -p), the reference sockets: a socket's send and receive do more work per message, which dilutes PTI's cost; compare in ratio only"

// SeedMessaging is the reference part of the seed sched-messaging table's
// heading: the ratios with PTI of the 32-bit and the 64-bit kernel, over
// sockets.
func SeedMessaging() string {
	return fmt.Sprintf("reference (Unix-domain stream sockets): on vs off 32-bit %.2f, 64-bit %.2f", Messaging32.OnS/Messaging32.OffS, Messaging64.OnS/Messaging64.OffS)
}

// MessagingPhases is the line under the 32-bit sched-messaging phase
// breakdown.
const MessagingPhases = "(reference, docs/references.md: 32-bit PAE Linux, -g 20: entry_SYSENTER_32 about 25% of the cycles with PTI, 2.5% without)"

// The getppid cycles of the T-Systems microbenchmarks (January 2018) on a
// Broadwell Xeon E5-2667 v4 under Linux 4.4, the mitigation ladder's
// reference (docs/references.md): without PTI, with PTI and PCID, with
// PTI without PCID; and each again with IBRS in the kernel (set on every
// entry, cleared on every exit: the Spectre v2 mitigation of the day).
const (
	LadderNoPTI      = 140
	LadderPTIPCID    = 580
	LadderPTINoPCID  = 900
	LadderIBRSNoPTI  = 2380
	LadderIBRSPCID   = 2850
	LadderIBRSNoPCID = 3100
)

// Ladder is the line under the mitigation ladder's null-call table.
func Ladder() []string {
	return []string{fmt.Sprintf("reference (docs/references.md: T-Systems microbenchmarks, Broadwell E5-2667 v4, Linux 4.4, getppid cycles): %d without PTI, %d with PTI and PCID, %d without PCID; with IBRS in the kernel %d / %d / %d (IBRS alone +%d cycles per call without PTI)",
		LadderNoPTI, LadderPTIPCID, LadderPTINoPCID, LadderIBRSNoPTI, LadderIBRSPCID, LadderIBRSNoPCID, LadderIBRSNoPTI-LadderNoPTI)}
}
