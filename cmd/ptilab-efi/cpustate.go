package main

import (
	"fmt"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/goos"
)

// cpuState prints the cpu-state lines and record: the firmware's CPU
// state at entry and the MSRs the figures depend on, all read #GP-safe
// (IA32_MISC_ENABLE, where boot cleared its CPUID limit, goes into the
// registry of MSRs given back at the end);
// then the vulnerabilities lines and record: the table Linux would print
// in /sys/devices/system/cpu/vulnerabilities on this CPU (cpustate.Vulns).
// It returns the core-clock state for the benchmarks.
func cpuState(r *bench.Reporter) cpustate.Power {
	cpu := cpustate.Hardware{}
	p := cpustate.ReadPower(cpu)
	st := cpustate.State(cpu, efi.Entry, p)
	cpustate.SetCPUIDLimit(&st, goos.FirmwareCPUIDLimit())
	cpustate.Saved.SaveCPUIDLimit(goos.FirmwareCPUIDLimit())
	if x := goos.FirmwareXState(); x.XCR0 != 0 {
		st.XCR0 = fmt.Sprintf("%#x", x.XCR0)
		st.XStateInit = x.Init
	}
	cpustate.SetFirmware(&st, efi.Entry, cpustate.ReadFirmwareSettings(cpu))
	for _, l := range bench.CPUStateLines(st) {
		r.Printf("%s", l)
	}
	r.Printf("%s", cpustate.FirmwareLine(st))
	r.Record(st)
	vul := cpustate.Vulns(cpu)
	for _, l := range cpustate.VulnLines(vul) {
		r.Printf("%s", l)
	}
	r.Record(vul)
	return p
}
