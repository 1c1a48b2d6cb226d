// Command ptilab-efi is the program inside ptilab.efi: an ordinary Go
// program that the goos personality runs on bare metal. It opens a results
// file on the boot volume (results.go), reads the plan from it, prints the machine line, runs the self-checks of
// the runtime on bare metal and the plan's benchmarks (package bench),
// lists the system calls the runtime made, and ends with PTILAB-END.
//
// Build it only through `make` (it needs the linker flags and the PE
// conversion there).
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	_ "github.com/ptilab/ptilab/bench/all" // every benchmark family, registered in the default plan's order
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/goos"
)

func main() {
	start := time.Now()
	goos.Ready()
	r := bench.NewReporter(os.Stdout)
	results := openResults(r, start)

	plan, perrs := loadPlan(r)
	goos.SetEndAction(plan.End, plan.EndWait)
	goos.SetScreen(plan.Screen)
	machine(r, plan.EmulatorBuild)
	power := cpuState(r)
	for _, e := range perrs {
		r.Printf("ptilab: %v; %s", e, e.Consequence())
		r.Record(contract.PlanError{Line: e.Line, Text: e.Text, Error: e.Err, Consequence: e.Consequence()})
	}

	msrProbe(r)
	if plan.Fault != "" {
		deliberateFault(r, plan.Fault)
	}

	runChecks(r)
	runBenchmarks(r, plan, power)
	syscallTable(r)
	m := goos.Memory()
	sinceEntry, bootNs := goos.SinceEntry()
	code := r.End(contract.End{
		ElapsedMs:      time.Since(start).Milliseconds(),
		PlanErrors:     len(perrs),
		UptimeMs:       goos.Monotonic() / 1e6,
		SinceEntryMs:   sinceEntry / 1e6,
		BootMs:         bootNs / 1e6,
		PoolPeakMiB:    m.PeakBytes >> 20,
		ThreadSwitches: goos.Switches(),
		NMIs:           goos.NMICount(),
		ResultsFile:    resultsEnd(results),
	})
	goos.MarkEndPrinted()
	os.Exit(code)
}

// loadPlan reads the plan file from the boot volume, if there is one.
func loadPlan(r *bench.Reporter) (bench.Plan, []bench.PlanError) {
	data, err := os.ReadFile(bench.PlanFile)
	if errors.Is(err, fs.ErrNotExist) {
		return bench.DefaultPlan(), nil
	}
	if err != nil {
		r.Printf("ptilab: reading %s: %v; using the default plan", bench.PlanFile, err)
		return bench.DefaultPlan(), nil
	}
	r.Printf("ptilab: plan %s (%d bytes)", bench.PlanFile, len(data))
	return bench.ParsePlan(data)
}

// hypervisorName names the hypervisor whose CPUID 40000000H signature is
// sig.
func hypervisorName(sig string) string {
	switch sig {
	case "TCGTCGTCGTCG":
		return "QEMU TCG (emulated)"
	case "KVMKVMKVM":
		return "KVM"
	case "VMwareVMware":
		return "VMware"
	case "Microsoft Hv":
		return "Hyper-V"
	case "XenVMMXenVMM":
		return "Xen"
	}
	return fmt.Sprintf("%q", sig)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// commit is the source ptilab was built from (host/image.Commit, set with
// the linker's -X main.commit): 12 hex digits of its git commit, with
// "+dirty" for a changed work tree.
var commit = "unknown"

// microcode returns the CPU's microcode revision (amd64.Microcode) and
// whether it could be read.
func microcode(info goos.Info) (uint32, bool) {
	ucode, ok := amd64.Microcode()
	if info.Emulator == "bochs" && ucode == 0 {
		// Bochs's models lack IA32_BIOS_SIGN_ID: it faults (ptilab bochs
		// runs with ignore_bad_msrs=0), or reads 0 with ignore_bad_msrs=1.
		ok = false
	}
	return ucode, ok
}

// machine prints the machine line and its record; build is the emulator
// build the plan names (Plan.EmulatorBuild), "" when it names none.
func machine(r *bench.Reporter, build string) {
	f := &amd64.Features
	info := goos.MachineInfo()
	ucode, ucodeOK := microcode(info)
	ucodeText := "unreadable"
	if ucodeOK {
		ucodeText = fmt.Sprintf("%#x", ucode)
	}
	hv := f.HypervisorVendor()
	where := info.Board
	if hv != "" {
		where += ", hypervisor " + hypervisorName(hv)
	}
	if info.Board == "bochs" {
		where += " (emulated: the TSC counts instructions)"
	}
	if build != "" {
		where += " [" + build + ", as the plan says]"
	}
	reloc := "at its link address"
	if info.ImageBase != goos.ELFLinkBase {
		reloc = "relocated"
	}
	inv := ""
	if f.InvariantTSC {
		inv = ", invariant"
	}
	rec := contract.Machine{
		Vendor: f.Vendor(), Brand: f.Brand(), Family: f.Family, Model: f.Model, Stepping: f.Stepping,
		TSCHz: info.TSCHz, TSCSource: info.TSCSource, TSCInvariant: f.InvariantTSC,
		PCID: f.PCID, INVPCID: f.INVPCID, PGE: f.PGE, SMEP: f.SMEP, SMAP: f.SMAP,
		RDRAND: f.RDRAND, RDSEED: f.RDSEED, RDTSCP: f.RDTSCP, NX: f.NX, FRED: f.FRED, LASS: f.LASS, PerfMonVersion: f.PerfMonVersion,
		RAMBytes: info.RAM, FreeAtBootBytes: info.FreeAtBoot, PoolBytes: info.Claimed,
		FirmwareVendor: info.FirmwareVendor, FirmwareRevision: info.FirmwareRevision,
		Board: info.Board, Hypervisor: hv,
		ImageBase: info.ImageBase, ImageBytes: info.ImageSize, Relocated: info.ImageBase != goos.ELFLinkBase,
		Serial: info.Serial, Screens: info.Screens, Random: info.Random, RTC: info.RTC,
		SerialPorts: serialPorts(board.SerialPorts()),
	}
	if ucodeOK {
		rec.Microcode = &ucode
	}
	tscRecord(&rec, info.TSC)
	rec.Emulator, rec.EmulatorBuild = info.Emulator, build
	rec.PtilabCommit = commit
	inv += "; " + rec.TSCEvidence()
	r.Printf("ptilab machine: ptilab %s | %s %q family %d model %#x stepping %d microcode %s | TSC %.3f GHz (%s%s) | pcid %s invpcid %s pge %s smep %s smap %s rdrand %s rdtscp %s fred %s lass %s | RAM %d MiB (free at boot %d MiB, kernel pool %d MiB) | firmware %q rev %#x | %s | image %#x (%s), %d KiB",
		commit, f.Vendor(), f.Brand(), f.Family, f.Model, f.Stepping, ucodeText,
		float64(info.TSCHz)/1e9, info.TSCSource, inv,
		yesNo(f.PCID), yesNo(f.INVPCID), yesNo(f.PGE), yesNo(f.SMEP), yesNo(f.SMAP), yesNo(f.RDRAND), yesNo(f.RDTSCP), yesNo(f.FRED), yesNo(f.LASS),
		info.RAM>>20, info.FreeAtBoot>>20, info.Claimed>>20,
		info.FirmwareVendor, info.FirmwareRevision, where,
		info.ImageBase, reloc, info.ImageSize>>10)
	r.Record(rec)
}

// tscRecord puts the TSC's evidence into the machine record: CPUID's
// figure, the measured one, and each reference's figure or why none.
func tscRecord(rec *contract.Machine, tc board.TSCChoice) {
	rec.TSCCPUIDHz, rec.TSCCPUIDSource, rec.TSCCPUIDRejected = tc.CPUID.Hz, tc.CPUID.Source.String(), tc.CPUID.Rejected
	rec.TSCMeasuredHz, rec.TSCMeasuredBy = tc.MeasuredHz, tc.Measured.String()
	if tc.CrossCheck {
		rec.TSCPPM = &tc.PPM
	}
	refs := tc.Refs
	if refs.PM.Hz == 0 {
		rec.TSCPMTimerError = refs.PM.Err.String()
	}
	h := tc.HPET
	rec.HPETBase, rec.HPETPeriodFs, rec.HPETStarted, rec.HPETRestored = h.Base, h.PeriodFs, h.Started, h.Restored
	switch {
	case h.Why != board.HPETOK:
		rec.TSCHPETError = h.Why.String()
	case refs.HPET.Hz == 0:
		rec.TSCHPETError = refs.HPET.Err.String()
	default:
		rec.TSCHPETHz = refs.HPET.Hz
	}
	if tc.RefsCompared {
		rec.TSCHPETvsPMPPM = &tc.HPETvsPM
	}
	if refs.PIT.Err != board.CalNotTried {
		rec.TSCPITRetries = &refs.PITRetries
		if refs.PIT.Hz == 0 {
			rec.TSCPITError = refs.PIT.Err.String()
		}
	}
}

// serialPorts describes the serial consoles for the machine record.
func serialPorts(ports []board.Port) []string {
	var out []string
	for _, p := range ports {
		s := fmt.Sprintf("io %#x", p.Base)
		if p.MMIO {
			s = fmt.Sprintf("mmio %#x/%d", p.Base, p.Width)
		}
		if p.Baud != 0 {
			s += fmt.Sprintf(" %d baud", p.Baud)
		} else {
			s += " firmware's baud"
			if p.SPCRBaud != 0 {
				s += fmt.Sprintf(" (spcr names %d)", p.SPCRBaud)
			}
		}
		if p.COM != 0 {
			s += fmt.Sprintf(" (com%d)", p.COM)
		}
		if f := p.PCI; f.VendorID != 0 {
			s += fmt.Sprintf(" (pci %02x:%02x.%x %04x:%04x", f.Bus, f.Device, f.Function, f.VendorID, f.DeviceID)
			if p.DecodeTurnedOn() {
				s += ", decode turned on"
			}
			s += ")"
		}
		if p.SPCR {
			s += " (spcr)"
		}
		if p.Stuck() {
			s += " (stuck)"
		}
		out = append(out, s)
	}
	return out
}

// deliberateFault makes the CPU fault on purpose, for the fault tests: the
// kernel dumps the registers and the runtime prints this goroutine's
// traceback; the run ends with the fault status.
func deliberateFault(r *bench.Reporter, kind string) {
	switch kind {
	case "pf":
		r.Printf("ptilab: deliberate page fault: reading address 0x10 (page 0 is never mapped)")
		amd64.Load(0x10)
	case "gp":
		r.Printf("ptilab: deliberate general-protection fault: reading non-canonical address 0x8000000000000000")
		amd64.Load(0x8000000000000000)
	case "kernel-pf":
		r.Printf("ptilab: deliberate page fault in the kernel: reading address 0x10 in the system-call handler")
		goos.KernelFault(goos.KernelPageFault)
	case "kernel-gp":
		r.Printf("ptilab: deliberate general-protection fault in the kernel: reading 0x8000000000000000 in the system-call handler")
		goos.KernelFault(goos.KernelGeneralFault)
	}
	r.Printf("ptilab: the deliberate fault did not fault")
}

// syscallTable prints the system calls the runtime made so far.
func syscallTable(r *bench.Reporter) {
	var counts [512]goos.SyscallCount
	n, unknown := goos.SyscallCounts(counts[:])
	total := uint64(0)
	rec := map[string]uint64{}
	for _, c := range counts[:n] {
		total += c.Count
		rec[c.Name] = c.Count
	}
	r.Printf("system calls made by the runtime: %d distinct, %d in all, %d answered ENOSYS", n, total, unknown)
	for _, c := range counts[:n] {
		r.Printf("  %-18s %3d  %8d", c.Name, c.Nr, c.Count)
	}
	r.Record(contract.SyscallCounts{Counts: rec, Distinct: n, Total: total, ENOSYS: unknown})
}
