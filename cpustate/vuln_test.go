package cpustate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
)

// cascadeLake is a Xeon Gold 6252 (Cascade Lake, 06_55H stepping 7, HT
// on): CPUID leaves 0, 1, 07H and 0BH as `cpuid -r` dumped them under
// Linux, github.com/gz/rust-cpuid src/tests/xeon_gold_6252.rs
// (CPUID_VALUE_MAP). 07H:EBX has RTM clear: Linux's tsx=off had already
// hidden TSX through IA32_TSX_CTRL. 07H:EDX enumerates MD_CLEAR [10],
// SPEC_CTRL [26], STIBP [27], L1D_FLUSH [28], ARCH_CAPABILITIES [29] and
// SSBD [31], not SRBDS_CTRL [9].
// Constructed: IA32_ARCH_CAPABILITIES 0xab (RDCL_NO, IBRS_ALL,
// SKIP_L1DFL_VMENTRY, MDS_NO, TSX_CTRL): no dump of this part's MSR was
// found; these are the bits Intel's affected-processor list gives Cascade
// Lake with the TAA microcode (not affected by Meltdown, L1TF or MDS,
// affected by TAA with TSX_CTRL), and none of the later FB_CLEAR,
// GDS_CTRL or BHI_NO.
func cascadeLake() *fakeCPU {
	return &fakeCPU{
		Leaves: map[[2]uint32][4]uint32{
			{0, 0}:   {0x16, intelB, intelC, intelD},
			{1, 0}:   {0x50657, 0xc7400800, 0x7ffefbff, 0xbfebfbff},
			{7, 0}:   {0, 0xd39ff7eb, 0x818, 0xbc000400},
			{0xb, 0}: {0x1, 0x2, 0x100, 0xc7},
		},
		MSRs: map[uint32]uint64{amd64.MSR_IA32_ARCH_CAPABILITIES: 0xab}, // constructed, see above
	}
}

// "AuthenticAMD" in EBX, EDX, ECX of leaf 0.
const amdB, amdD, amdC = 0x68747541, 0x69746e65, 0x444d4163

// zen2 is a Ryzen 5 3600X (Matisse, family 17H model 71H, SMT on): CPUID
// leaves 0, 1, 07H, 0BH, 8000_0000H and 8000_0008H as `cpuid -r` dumped
// them, github.com/gz/rust-cpuid src/tests/ryzen_matisse.rs
// (CPUID_VALUE_MAP). 8000_0008H:EBX enumerates IBPB [12], STIBP [15],
// STIBP always-on preferred [17] and SSBD [24], not IBRS [14] nor BTC_NO
// [29]; there is no leaf 8000_0021H (no Automatic IBRS) and no
// IA32_ARCH_CAPABILITIES (07H:EDX = 0). Nothing constructed.
func zen2() *fakeCPU {
	return &fakeCPU{
		Leaves: map[[2]uint32][4]uint32{
			{0, 0}:          {0x10, amdB, amdC, amdD},
			{1, 0}:          {0x870f10, 0xc0800, 0x7ed8320b, 0x178bfbff},
			{7, 0}:          {0, 0x219c91a9, 0x400004, 0},
			{0xb, 0}:        {0x1, 0x2, 0x100, 0},
			{0x80000000, 0}: {0x80000020, amdB, amdC, amdD},
			{0x80000008, 0}: {0x3030, 0x010eb757, 0x700b, 0x10000},
		},
		MSRs: map[uint32]uint64{},
	}
}

// qemu64 is QEMU's default CPU under TCG. Constructed from QEMU's
// definition of the qemu64 model (target/i386/cpu.c: AuthenticAMD,
// family 15, model 107, stepping 1) with the hypervisor bit QEMU sets and
// only the bits the rules read; test/boot_test.go checks the table the
// real one gives.
func qemu64() *fakeCPU {
	return &fakeCPU{
		Leaves: map[[2]uint32][4]uint32{
			{0, 0}:          {0xd, amdB, amdC, amdD},
			{1, 0}:          {0x60fb1, 0x800, 0x80002001, 0x078bfbfd},
			{0x80000000, 0}: {0x8000000a, amdB, amdC, amdD},
		},
		MSRs: map[uint32]uint64{},
	}
}

// The tables below are what the Linux rules (LinuxLogic) give for each
// fixture, worked by hand from common.c and bugs.c; each comment says
// which rule decided.

func TestVulnsIvyBridge(t *testing.T) {
	v := Vulns(ivyBridge())
	assert.Equal(t, 6, v.Family)
	assert.Equal(t, 0x3a, v.Model)
	assert.Equal(t, 9, v.Stepping)
	assert.Equal(t, Unsupported, v.ArchCapabilities, "07H:EDX = 0: no IA32_ARCH_CAPABILITIES")
	assert.True(t, v.PTINeeded)
	assert.Equal(t, "affected", v.PTIWhy)
	assert.Equal(t, map[string]string{
		"meltdown": "Mitigation: PTI",
		"l1tf":     "Mitigation: PTE Inversion",
		// No RETBLEED bug (not blacklisted, no RSBA) and no IBRS in this
		// microcode: retpolines; neither IBPB nor STIBP, so STIBP disabled.
		"spectre_v2": "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected",
		"mds":        "Vulnerable: Clear CPU buffers attempted, no microcode; SMT vulnerable",
		// No TSX.
		"tsx_async_abort": "Not affected",
		// Neither on the MMIO blacklist nor on the whitelist.
		"mmio_stale_data": "Unknown: No mitigations",
		"retbleed":        "Not affected",
		// RDRAND and IVYBRIDGE on the SRBDS blacklist; no IA32_MCU_OPT_CTRL.
		"srbds":                  "Vulnerable: No microcode",
		"gather_data_sampling":   "Not affected",
		"reg_file_data_sampling": "Not affected",
	}, v.Table)
}

func TestVulnsSkylakeClient(t *testing.T) {
	c := skylakeClient()
	c.MSRs[amd64.MSR_IA32_ARCH_CAPABILITIES] = 0 // constructed: no dump shows this part's value
	v := Vulns(c)
	assert.Equal(t, 0x8e, v.Model)
	assert.Equal(t, "0x0", v.ArchCapabilities)
	assert.True(t, v.PTINeeded)
	assert.Equal(t, map[string]string{
		"meltdown": "Mitigation: PTI",
		"l1tf":     "Mitigation: PTE Inversion",
		// KABYLAKE_L is on the RETBLEED blacklist and has IBRS: Linux picks
		// IBRS on entry over retpolines; STIBP conditional with SMT.
		"spectre_v2": "Mitigation: IBRS; IBPB: conditional; STIBP: conditional; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected",
		"mds":        "Mitigation: Clear CPU buffers; SMT vulnerable",
		// This microcode hides RTM (07H:EDX[11] RTM_ALWAYS_ABORT) and there
		// is no TSX_CTRL.
		"tsx_async_abort": "Not affected",
		// MD_CLEAR and L1D_FLUSH on an MDS-affected part: VERW clears the
		// fill buffers.
		"mmio_stale_data":        "Mitigation: Clear CPU buffers; SMT vulnerable",
		"retbleed":               "Mitigation: IBRS",
		"srbds":                  "Mitigation: Microcode",
		"gather_data_sampling":   "Vulnerable: No microcode",
		"reg_file_data_sampling": "Not affected",
	}, v.Table)
}

func TestVulnsCascadeLake(t *testing.T) {
	v := Vulns(cascadeLake())
	assert.Equal(t, 0x55, v.Model)
	assert.Equal(t, 7, v.Stepping)
	assert.Equal(t, "0xab", v.ArchCapabilities)
	assert.False(t, v.PTINeeded)
	assert.Equal(t, "RDCL_NO", v.PTIWhy)
	assert.Equal(t, "SW loop, KVM: SW loop", v.BHI, "eIBRS without BHI_NO and no BHI_DIS_S (no leaf 07H subleaf 2)")
	assert.Equal(t, map[string]string{
		"meltdown": "Not affected",
		"l1tf":     "Not affected",
		// eIBRS: no STIBP or RSB-filling part; PBRSB without PBRSB_NO.
		"spectre_v2": "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; PBRSB-eIBRS: SW sequence; BHI: SW loop, KVM: SW loop",
		"mds":        "Not affected",
		// TSX_CTRL without TAA_NO: affected; tsx=off disables TSX.
		"tsx_async_abort": "Mitigation: TSX disabled",
		// SKYLAKE_X on the MMIO blacklist; MDS_NO and no FB_CLEAR: VERW
		// is not known to clear the fill buffers.
		"mmio_stale_data":        "Vulnerable: Clear CPU buffers attempted, no microcode; SMT vulnerable",
		"retbleed":               "Mitigation: Enhanced IBRS",
		"srbds":                  "Not affected",
		"gather_data_sampling":   "Vulnerable: No microcode",
		"reg_file_data_sampling": "Not affected",
	}, v.Table)

	// Later microcode: FB_CLEAR, GDS_CTRL with the mitigation locked, BHI_NO
	// absent still (constructed variations of the same part).
	c := cascadeLake()
	c.MSRs[amd64.MSR_IA32_ARCH_CAPABILITIES] = 0xab | ArchCapFBClear | ArchCapGDSCtrl
	c.MSRs[amd64.MSR_IA32_MCU_OPT_CTRL] = mcuOptCtrlGDSMitgLock
	v = Vulns(c)
	assert.Equal(t, "Mitigation: Clear CPU buffers; SMT vulnerable", v.Table["mmio_stale_data"])
	assert.Equal(t, "Mitigation: Microcode (locked)", v.Table["gather_data_sampling"])
}

func TestVulnsZen2(t *testing.T) {
	v := Vulns(zen2())
	assert.Equal(t, 0x17, v.Family)
	assert.Equal(t, 0x71, v.Model)
	assert.False(t, v.PTINeeded)
	assert.Equal(t, "whitelisted model", v.PTIWhy)
	assert.Equal(t, map[string]string{
		"meltdown": "Not affected",
		"l1tf":     "Not affected",
		// Retpolines; the untrained return thunk for retbleed makes STIBP
		// always-on; no IBRS, so no IBRS_FW.
		"spectre_v2":             "Mitigation: Retpolines; IBPB: conditional; STIBP: always-on; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected",
		"mds":                    "Not affected",
		"tsx_async_abort":        "Not affected",
		"mmio_stale_data":        "Not affected",
		"retbleed":               "Mitigation: untrained return thunk; SMT enabled with STIBP protection",
		"srbds":                  "Not affected",
		"gather_data_sampling":   "Not affected",
		"reg_file_data_sampling": "Not affected",
	}, v.Table)
}

func TestVulnsEmulated(t *testing.T) {
	v := Vulns(qemu64())
	assert.True(t, v.Hypervisor)
	assert.False(t, v.PTINeeded, "AMD family 0FH is whitelisted")
	assert.Equal(t, "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected", v.Table["spectre_v2"])

	// QEMU's Skylake-Client under TCG (emulated): Intel 06_5EH under a
	// hypervisor, no SPEC_CTRL, no MD_CLEAR.
	v = Vulns(emulated())
	assert.True(t, v.Hypervisor)
	assert.True(t, v.PTINeeded)
	assert.Equal(t, "Retpoline", v.BHI, "BHI assumed under a hypervisor; retpolines without RRSBA cover it")
	assert.Equal(t, "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Retpoline", v.Table["spectre_v2"])
	assert.Equal(t, "Vulnerable: Clear CPU buffers attempted, no microcode; SMT Host state unknown", v.Table["mds"])
	assert.Equal(t, "Vulnerable", v.Table["retbleed"], "Intel without IBRS: retpolines leave retbleed open")
	assert.Equal(t, "Unknown: Dependent on hypervisor status", v.Table["srbds"])

	lines := VulnLines(v)
	require.Len(t, lines, 1+len(VulnNames))
	assert.Contains(t, lines[0], "PTI needed: yes (affected) | FRED no, LASS no")
	assert.Contains(t, lines[0], "under a hypervisor")
	assert.Equal(t, "ptilab vulnerabilities: meltdown               Mitigation: PTI", lines[4])
}

func TestVulnsRules(t *testing.T) {
	// The first matching rule decides: COMETLAKE_L stepping 0 has no GDS.
	id := cpuID{vendorIntel, 6, mCometlakeL, 0}
	assert.False(t, matches(vulnBlacklist, id, blGDS))
	id.stepping = 1
	assert.True(t, matches(vulnBlacklist, id, blGDS))
	// AMD family 10H takes its own rule (no SSB), not the any-family one.
	assert.True(t, matches(vulnWhitelist, cpuID{vendorAMD, 0x10, 4, 0}, noSSB))
	assert.False(t, matches(vulnWhitelist, cpuID{vendorAMD, 0x17, 0x71, 0}, noSSB))

	// Immune to MMIO by enumeration: all three *_NO bits.
	c := cascadeLake()
	c.MSRs[amd64.MSR_IA32_ARCH_CAPABILITIES] = 0xab | ArchCapFBSDPNo | ArchCapPSDPNo | ArchCapSBDRSSDPNo
	assert.Equal(t, "Not affected", Vulns(c).Table["mmio_stale_data"])
	// BHI_DIS_S where 07H subleaf 2 enumerates it.
	c = cascadeLake()
	c.Leaves[[2]uint32{7, 0}] = [4]uint32{2, 0xd39ff7eb, 0x818, 0xbc000400}
	c.Leaves[[2]uint32{7, 2}] = [4]uint32{0, 0, 0, cpuid0702EDXBHICtrl}
	assert.Equal(t, "BHI_DIS_S", Vulns(c).BHI)
	// An unreadable ARCH_CAPABILITIES decides as 0 and says unsupported.
	c = cascadeLake()
	delete(c.MSRs, amd64.MSR_IA32_ARCH_CAPABILITIES)
	v := Vulns(c)
	assert.Equal(t, Unsupported, v.ArchCapabilities)
	assert.True(t, v.PTINeeded)
}
