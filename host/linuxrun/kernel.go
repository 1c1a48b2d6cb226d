package linuxrun

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// cpuInfo is what /proc/cpuinfo says of the first CPU.
type cpuInfo struct {
	Vendor, Brand           string
	Family, Model, Stepping uint32
	Microcode               *uint32
	Flags                   []string
}

// has reports whether the CPU's flags list name (the kernel's view:
// features it cleared are absent).
func (c cpuInfo) has(name string) bool { return slices.Contains(c.Flags, name) }

// readCPUInfo parses the first processor's block of /proc/cpuinfo (x86:
// arch/x86/kernel/cpu/proc.c).
func readCPUInfo(sys fs.FS) (cpuInfo, error) {
	b, err := fs.ReadFile(sys, "proc/cpuinfo")
	if err != nil {
		return cpuInfo{}, err
	}
	var c cpuInfo
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && c.Vendor != "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		num := func() uint32 { n, _ := strconv.ParseUint(v, 0, 32); return uint32(n) }
		switch k {
		case "vendor_id":
			c.Vendor = v
		case "model name":
			c.Brand = v
		case "cpu family":
			c.Family = num()
		case "model":
			c.Model = num()
		case "stepping":
			c.Stepping = num()
		case "microcode":
			if n, err := strconv.ParseUint(v, 0, 32); err == nil {
				m := uint32(n)
				c.Microcode = &m
			}
		case "flags":
			c.Flags = strings.Fields(v)
		}
	}
	if c.Vendor == "" {
		return c, fmt.Errorf("/proc/cpuinfo: no vendor_id line (not an x86 CPU?)")
	}
	return c, nil
}

// readLine returns the first line of file name, trimmed, or "" where it
// cannot be read.
func readLine(sys fs.FS, name string) string {
	b, err := fs.ReadFile(sys, name)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// cmdlineHas reports whether the kernel's command line has parameter p,
// alone ("nopti") or with a value ("pti=on": p is "pti=on").
func cmdlineHas(cmdline, p string) bool { return slices.Contains(strings.Fields(cmdline), p) }

// ptiParam is what the command line asks of PTI: the last pti= value
// (Linux takes the last: arch/x86/mm/pti.c, pti_parse_cmdline), "off" for
// nopti, "auto" for neither.
func ptiParam(cmdline string) string {
	v := "auto"
	for _, f := range strings.Fields(cmdline) {
		switch {
		case f == "nopti":
			v = "off"
		case strings.HasPrefix(f, "pti="):
			v = strings.TrimPrefix(f, "pti=")
		}
	}
	return v
}

// ptiState decides the running kernel's isolation mode, and says why,
// from the CPU flags it shows, the meltdown line and the command line:
// PTI is on where the kernel set X86_FEATURE_PTI ("pti" in the flags;
// arch/x86/mm/pti.c, pti_check_boottime_disable), with PCIDs where it
// kept X86_FEATURE_PCID (it clears the flag for nopcid, without PGE, and
// on CPUs with the INVLPG erratum: arch/x86/mm/init.c, setup_pcid).
func ptiState(c cpuInfo, meltdown, cmdline string) (experiment.Mode, string) {
	var why []string
	if meltdown != "" {
		why = append(why, "meltdown: "+meltdown)
	}
	if v := ptiParam(cmdline); v != "auto" {
		why = append(why, "command line: pti="+v)
	}
	for _, p := range []string{"nopcid", "mitigations=off", "mitigations=auto", "mitigations=auto,nosmt"} {
		if cmdlineHas(cmdline, p) {
			why = append(why, "command line: "+p)
		}
	}
	mode := experiment.Off
	switch {
	case c.has("pti") && c.has("pcid"):
		mode = experiment.OnPCID
		why = append([]string{"cpuinfo flags pti, pcid"}, why...)
	case c.has("pti"):
		mode = experiment.On
		why = append([]string{"cpuinfo flag pti, no pcid"}, why...)
	default:
		why = append([]string{"no pti flag in cpuinfo"}, why...)
	}
	return mode, strings.Join(why, "; ")
}

// globalState decides whether the kernel maps its entry text (the key's
// global) and the rest of its text as global pages under mode m, and says
// why. With PTI off every kernel mapping is global where the CPU has PGE
// (arch/x86/mm/init.c, probe_page_size_mask). With PTI on the entry text
// and the cpu_entry_area are global whatever else holds
// (arch/x86/mm/pti.c, pti_clone_pgtable; arch/x86/mm/cpu_entry_area.c,
// cea_set_pte), and the rest of the kernel text only where
// pti_kernel_image_global_ok() holds: no PCID, pti=auto, no
// CONFIG_RANDSTRUCT (and not K8, which never runs PTI). randstruct is
// CONFIG_RANDSTRUCT as the kernel's config says (nil: unread).
func globalState(c cpuInfo, m experiment.Mode, cmdline string, randstruct *bool) (entry, text bool, why string) {
	switch {
	case !c.has("pge"):
		return false, false, "no pge flag: no global pages"
	case m == experiment.Off:
		return true, true, "PTI off: every kernel mapping is global (PGE)"
	}
	const entryWhy = "PTI: the entry text and cpu_entry_area are global (pti_clone_pgtable, cea_set_pte)"
	var textWhy string
	switch {
	case m.PCID():
		textWhy = "with PCIDs the rest of the kernel text is not"
	case ptiParam(cmdline) != "auto":
		textWhy = "with pti=" + ptiParam(cmdline) + " the rest of the kernel text is not"
	case randstruct == nil:
		return true, true, entryWhy + "; without PCIDs and with pti=auto so is the rest of the kernel text, unless CONFIG_RANDSTRUCT (the kernel's config could not be read)"
	case *randstruct:
		textWhy = "with CONFIG_RANDSTRUCT the rest of the kernel text is not"
	default:
		return true, true, entryWhy + "; without PCIDs, with pti=auto and no CONFIG_RANDSTRUCT so is the rest of the kernel text (pti_kernel_image_global_ok)"
	}
	return true, false, entryWhy + "; " + textWhy + " (pti_kernel_image_global_ok): ptilab's global=on also makes its kernel text global"
}

// randstruct reads CONFIG_RANDSTRUCT from the kernel's config
// (/boot/config-RELEASE or /proc/config.gz): nil where neither reads.
func randstruct(sys fs.FS, release string) *bool {
	b, err := fs.ReadFile(sys, path.Join("boot", "config-"+release))
	if err != nil {
		f, err := sys.Open("proc/config.gz")
		if err != nil {
			return nil
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil
		}
		if b, err = io.ReadAll(z); err != nil {
			return nil
		}
	}
	on := false
	for _, line := range strings.Split(string(b), "\n") {
		// CONFIG_RANDSTRUCT_FULL or _PERFORMANCE select CONFIG_RANDSTRUCT
		// (security/Kconfig.hardening); kernels before 5.19 named it
		// CONFIG_GCC_PLUGIN_RANDSTRUCT.
		if line == "CONFIG_RANDSTRUCT=y" || line == "CONFIG_GCC_PLUGIN_RANDSTRUCT=y" {
			on = true
		}
	}
	return &on
}

// vulnerabilities reads the kernel's own
// /sys/devices/system/cpu/vulnerabilities, file by file.
func vulnerabilities(sys fs.FS) map[string]string {
	const dir = "sys/devices/system/cpu/vulnerabilities"
	out := map[string]string{}
	entries, _ := fs.ReadDir(sys, dir)
	for _, e := range entries {
		out[e.Name()] = readLine(sys, path.Join(dir, e.Name()))
	}
	return out
}

// boost says whether the CPU may run above its base clock: cpufreq's
// global boost file (acpi-cpufreq, amd-pstate), else intel_pstate's
// no_turbo (inverted), else "unknown".
func boost(sys fs.FS) string {
	switch readLine(sys, "sys/devices/system/cpu/cpufreq/boost") {
	case "1":
		return "on"
	case "0":
		return "off"
	}
	switch readLine(sys, "sys/devices/system/cpu/intel_pstate/no_turbo") {
	case "0":
		return "on"
	case "1":
		return "off"
	}
	return "unknown"
}

// onlineCPUs counts the CPUs of /sys/devices/system/cpu/online ("0-3,6").
func onlineCPUs(sys fs.FS) int {
	n := 0
	for _, r := range strings.Split(readLine(sys, "sys/devices/system/cpu/online"), ",") {
		lo, hi, ok := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		n += b - a + 1
	}
	return n
}

// kernelRecord reads what decides the running kernel's figures: its
// release, command line, isolation mode, global pages, clocks, SMT and
// hypervisor (hv: CPUID's hypervisor vendor, "" on bare metal), with the
// CPU's flags c, into a Linux record, and its vulnerability files into a
// Vulnerabilities record.
func kernelRecord(sys fs.FS, c cpuInfo, hv string) (contract.Linux, contract.Vulnerabilities) {
	k := contract.Linux{
		Release:    readLine(sys, "proc/sys/kernel/osrelease"),
		Version:    readLine(sys, "proc/sys/kernel/version"),
		Cmdline:    readLine(sys, "proc/cmdline"),
		INVPCID:    c.has("invpcid"),
		Governor:   readLine(sys, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
		Driver:     readLine(sys, "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"),
		Boost:      boost(sys),
		SMT:        cmp.Or(readLine(sys, "sys/devices/system/cpu/smt/control"), "unknown"),
		CPUs:       onlineCPUs(sys),
		Hypervisor: cmp.Or(hv, readLine(sys, "sys/hypervisor/type")),
	}
	table := vulnerabilities(sys)
	mode, why := ptiState(c, table["meltdown"], k.Cmdline)
	k.PTI, k.PTIWhy = mode.String(), why
	k.Global, k.KernelTextGlobal, k.GlobalWhy = globalState(c, mode, k.Cmdline, randstruct(sys, k.Release))
	if p, err := strconv.Atoi(readLine(sys, "proc/sys/kernel/perf_event_paranoid")); err == nil {
		k.PerfEventParanoid = &p
	}
	v := contract.Vulnerabilities{
		Linux: k.Release + " (the running kernel's own files)", Vendor: c.Vendor, Family: int(c.Family), Model: int(c.Model),
		Stepping: int(c.Stepping), ArchCapabilities: "not read (user space)", Hypervisor: c.has("hypervisor"),
		SMT: k.SMT == "on", SMTSource: "sysfs", Table: table,
		PTINeeded: table["meltdown"] != "" && table["meltdown"] != "Not affected", PTIWhy: "meltdown: " + cmp.Or(table["meltdown"], "no file"),
	}
	if _, bhi, ok := strings.Cut(table["spectre_v2"], "BHI: "); ok {
		v.BHI = bhi
	}
	return k, v
}
