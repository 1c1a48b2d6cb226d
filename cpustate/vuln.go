package cpustate

import (
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/contract"
)

// LinuxLogic names the Linux whose rules Vulns follows: the 6.6.y stable
// series as of 2025, after the April 2024 BHI and RFDS backports. The
// rules were written from these files as stored by the search tool:
// arch/x86/kernel/cpu/common.c (torvalds/linux, blob 002bba56:
// cpu_vuln_whitelist, cpu_vuln_blacklist, cpu_set_bug_bits with BHI set
// only with eIBRS or under a hypervisor) and arch/x86/kernel/cpu/bugs.c
// (gregkh/linux stable, blob 04304f5f: the *_select_mitigation functions,
// the RSB filling chosen per Spectre v2 mode, and the sysfs strings). That
// bugs.c is an older stable branch's copy carrying the same 2024-2025
// backports (BHI, RFDS, ITS); where 6.6.y's own text could differ from it
// in a string, the strings here are that copy's. The
// ARCH_CAPABILITIES bits are those of Linux's
// arch/x86/include/asm/msr-index.h and the SDM Vol. 4, Table 2-2 (10AH).
const LinuxLogic = "6.6.y (2025 stable: BHI, RFDS backports)"

// IA32_ARCH_CAPABILITIES (10AH) bits the rules read (SDM Vol. 4, Table
// 2-2; Linux arch/x86/include/asm/msr-index.h, ARCH_CAP_*).
const (
	ArchCapRDCLNo         = 1 << 0  // not susceptible to Rogue Data Cache Load (Meltdown)
	ArchCapIBRSAll        = 1 << 1  // enhanced IBRS
	ArchCapRSBA           = 1 << 2  // RET may predict from the BTB when the RSB underflows
	ArchCapSkipL1DFL      = 1 << 3  // SKIP_L1DFL_VMENTRY
	ArchCapSSBNo          = 1 << 4  // not susceptible to Speculative Store Bypass
	ArchCapMDSNo          = 1 << 5  // not susceptible to MDS
	ArchCapPSChangeMCNo   = 1 << 6  // IF_PSCHANGE_MC_NO: no machine check on a page-size change
	ArchCapTSXCtrl        = 1 << 7  // IA32_TSX_CTRL exists
	ArchCapTAANo          = 1 << 8  // not susceptible to TSX Asynchronous Abort
	ArchCapSBDRSSDPNo     = 1 << 13 // no Shared Buffers / Sideband Stale Data Propagation
	ArchCapFBSDPNo        = 1 << 14 // no Fill Buffer Stale Data Propagator
	ArchCapPSDPNo         = 1 << 15 // no Primary Stale Data Propagator
	ArchCapFBClear        = 1 << 17 // VERW clears the fill buffers
	ArchCapRRSBA          = 1 << 19 // RET may use alternate predictors (restricted RSBA)
	ArchCapBHINo          = 1 << 20 // not susceptible to Branch History Injection
	ArchCapPBRSBNo        = 1 << 24 // not susceptible to Post-Barrier RSB predictions
	ArchCapGDSCtrl        = 1 << 25 // IA32_MCU_OPT_CTRL has GDS_MITG_DIS / GDS_MITG_LOCK
	ArchCapGDSNo          = 1 << 26 // not susceptible to Gather Data Sampling
	ArchCapRFDSNo         = 1 << 27 // not susceptible to Register File Data Sampling
	ArchCapRFDSClear      = 1 << 28 // VERW clears the register file
	mcuOptCtrlGDSMitgLock = 1 << 5  // IA32_MCU_OPT_CTRL[5], GDS_MITG_LOCKED
)

// CPUID feature bits the rules read beside those package amd64 names
// (SDM Vol. 2A, CPUID; AMD APM Vol. 3, E.4.7 and E.4.17 for 8000_0008H and
// 8000_0021H).
const (
	cpuid07EBXRTM        = 1 << 11
	cpuid07EDXSRBDSCtrl  = 1 << 9  // IA32_MCU_OPT_CTRL
	cpuid07EDXRTMAbort   = 1 << 11 // RTM_ALWAYS_ABORT
	cpuid07EDXSTIBP      = 1 << 27
	cpuid07EDXFlushL1D   = 1 << 28
	cpuid0702EDXRRSBACtl = 1 << 2 // RRSBA_DIS_U/S in IA32_SPEC_CTRL
	cpuid0702EDXBHICtrl  = amd64.CPUID0702_EDX_BHI_CTRL
	amdEBXSTIBP          = 1 << 15
	amdEBXSTIBPAlwaysOn  = 1 << 17
	amdEBXBTCNo          = 1 << 29
	amdEAXAutoIBRS       = 1 << 8 // 8000_0021H:EAX[8]
)

// Vendors as CPUID.0H names them (EBX, EDX, ECX).
const (
	vendorOther = iota
	vendorIntel
	vendorAMD
	vendorHygon
	vendorCentaur
	vendorZhaoxin
	vendorNSC
	vendorVortex
)

var vendorNames = map[string]int{
	"GenuineIntel": vendorIntel, "AuthenticAMD": vendorAMD, "HygonGenuine": vendorHygon,
	"CentaurHauls": vendorCentaur, "  Shanghai  ": vendorZhaoxin, "Geode by NSC": vendorNSC,
	"Vortex86 SoC": vendorVortex,
}

// The whitelist's flags (Linux common.c NO_*) and the blacklist's.
const (
	noSpeculation = 1 << iota
	noMeltdown
	noSSB
	noL1TF
	noMDS
	msbdsOnly
	noSwapgs
	noITLBMultihit
	noSpectreV2
	noMMIO
	noEIBRSPBRSB
	noBHI
)

const (
	blSRBDS = 1 << iota
	blMMIO
	blMMIOSBDS
	blRetbleed
	blSMTRSB
	blSRSO
	blGDS
	blRFDS
)

// cpuRule matches a vendor, family, model (-1: any) and stepping (-1:
// any); the first rule that matches decides, as x86_match_cpu does.
type cpuRule struct {
	vendor, family, model, stepping int
	flags                           uint32
}

const anyFamily = -1

func intelRule(model int, flags uint32) cpuRule { return cpuRule{vendorIntel, 6, model, -1, flags} }

// Intel family-6 model numbers (Linux arch/x86/include/asm/intel-family.h).
const (
	mCoreYonah      = 0x0e
	mAtomBonnell    = 0x1c
	mAtomBonnellMID = 0x26
	mAtomSaltwellM  = 0x27
	mAtomSaltwellT  = 0x35
	mAtomSaltwell   = 0x36
	mAtomSilvermont = 0x37
	mIvyBridge      = 0x3a
	mHaswell        = 0x3c
	mBroadwell      = 0x3d
	mHaswellX       = 0x3f
	mHaswellL       = 0x45
	mHaswellG       = 0x46
	mBroadwellG     = 0x47
	mSilvermontMID  = 0x4a
	mAirmont        = 0x4c
	mSilvermontD    = 0x4d
	mSkylakeL       = 0x4e
	mBroadwellX     = 0x4f
	mSkylakeX       = 0x55
	mBroadwellD     = 0x56
	mXeonPhiKNL     = 0x57
	mAirmontMID     = 0x5a
	mGoldmont       = 0x5c
	mSkylake        = 0x5e
	mGoldmontD      = 0x5f
	mCannonlakeL    = 0x66
	mIcelakeX       = 0x6a
	mIcelakeD       = 0x6c
	mAirmontNP      = 0x75
	mGoldmontPlus   = 0x7a
	mIcelakeL       = 0x7e
	mXeonPhiKNM     = 0x85
	mTremontD       = 0x86
	mLakefield      = 0x8a
	mTigerlakeL     = 0x8c
	mTigerlake      = 0x8d
	mKabylakeL      = 0x8e
	mTremont        = 0x96
	mAlderlake      = 0x97
	mAlderlakeL     = 0x9a
	mTremontL       = 0x9c
	mKabylake       = 0x9e
	mCometlake      = 0xa5
	mCometlakeL     = 0xa6
	mRocketlake     = 0xa7
	mRaptorlake     = 0xb7
	mRaptorlakeP    = 0xba
	mAlderlakeN     = 0xbe
	mRaptorlakeS    = 0xbf
)

// vulnWhitelist is common.c's cpu_vuln_whitelist: the CPUs Linux knows
// to be free of a bug without asking IA32_ARCH_CAPABILITIES.
var vulnWhitelist = []cpuRule{
	{-1, 4, -1, -1, noSpeculation},
	{vendorCentaur, 5, -1, -1, noSpeculation},
	{vendorIntel, 5, -1, -1, noSpeculation},
	{vendorNSC, 5, -1, -1, noSpeculation},
	{vendorVortex, 5, -1, -1, noSpeculation},
	{vendorVortex, 6, -1, -1, noSpeculation},

	intelRule(mTigerlake, noMMIO), intelRule(mTigerlakeL, noMMIO),
	intelRule(mAlderlake, noMMIO), intelRule(mAlderlakeL, noMMIO),

	intelRule(mAtomSaltwell, noSpeculation|noITLBMultihit),
	intelRule(mAtomSaltwellT, noSpeculation|noITLBMultihit),
	intelRule(mAtomSaltwellM, noSpeculation|noITLBMultihit),
	intelRule(mAtomBonnell, noSpeculation|noITLBMultihit),
	intelRule(mAtomBonnellMID, noSpeculation|noITLBMultihit),

	intelRule(mAtomSilvermont, noSSB|noL1TF|msbdsOnly|noSwapgs|noITLBMultihit),
	intelRule(mSilvermontD, noSSB|noL1TF|msbdsOnly|noSwapgs|noITLBMultihit),
	intelRule(mSilvermontMID, noSSB|noL1TF|msbdsOnly|noSwapgs|noITLBMultihit),
	intelRule(mAirmont, noSSB|noL1TF|msbdsOnly|noSwapgs|noITLBMultihit),
	intelRule(mXeonPhiKNL, noSSB|noL1TF|msbdsOnly|noSwapgs|noITLBMultihit),
	intelRule(mXeonPhiKNM, noSSB|noL1TF|msbdsOnly|noSwapgs|noITLBMultihit),

	intelRule(mCoreYonah, noSSB),

	intelRule(mAirmontMID, noL1TF|msbdsOnly|noSwapgs|noITLBMultihit),
	intelRule(mAirmontNP, noL1TF|noSwapgs|noITLBMultihit),

	intelRule(mGoldmont, noMDS|noL1TF|noSwapgs|noITLBMultihit|noMMIO),
	intelRule(mGoldmontD, noMDS|noL1TF|noSwapgs|noITLBMultihit|noMMIO),
	intelRule(mGoldmontPlus, noMDS|noL1TF|noSwapgs|noITLBMultihit|noMMIO|noEIBRSPBRSB),

	intelRule(mTremont, noEIBRSPBRSB),
	intelRule(mTremontL, noEIBRSPBRSB),
	intelRule(mTremontD, noITLBMultihit|noEIBRSPBRSB),

	// AMD families 0FH-12H before the any-family rule: the first match decides.
	{vendorAMD, 0x0f, -1, -1, noMeltdown | noSSB | noL1TF | noMDS | noSwapgs | noITLBMultihit | noMMIO | noBHI},
	{vendorAMD, 0x10, -1, -1, noMeltdown | noSSB | noL1TF | noMDS | noSwapgs | noITLBMultihit | noMMIO | noBHI},
	{vendorAMD, 0x11, -1, -1, noMeltdown | noSSB | noL1TF | noMDS | noSwapgs | noITLBMultihit | noMMIO | noBHI},
	{vendorAMD, 0x12, -1, -1, noMeltdown | noSSB | noL1TF | noMDS | noSwapgs | noITLBMultihit | noMMIO | noBHI},
	{vendorAMD, anyFamily, -1, -1, noMeltdown | noL1TF | noMDS | noSwapgs | noITLBMultihit | noMMIO | noEIBRSPBRSB | noBHI},
	{vendorHygon, anyFamily, -1, -1, noMeltdown | noL1TF | noMDS | noSwapgs | noITLBMultihit | noMMIO | noEIBRSPBRSB | noBHI},

	{vendorCentaur, 7, -1, -1, noSpectreV2 | noSwapgs | noMMIO | noBHI},
	{vendorZhaoxin, 7, -1, -1, noSpectreV2 | noSwapgs | noMMIO | noBHI},
}

// vulnBlacklist is common.c's cpu_vuln_blacklist: the CPUs known to have
// the bugs no enumeration reports.
var vulnBlacklist = []cpuRule{
	intelRule(mIvyBridge, blSRBDS),
	intelRule(mHaswell, blSRBDS),
	intelRule(mHaswellL, blSRBDS),
	intelRule(mHaswellG, blSRBDS),
	intelRule(mHaswellX, blMMIO),
	intelRule(mBroadwellD, blMMIO),
	intelRule(mBroadwellG, blSRBDS),
	intelRule(mBroadwellX, blMMIO),
	intelRule(mBroadwell, blSRBDS),
	intelRule(mSkylakeX, blMMIO|blRetbleed|blGDS),
	intelRule(mSkylakeL, blMMIO|blRetbleed|blGDS|blSRBDS),
	intelRule(mSkylake, blMMIO|blRetbleed|blGDS|blSRBDS),
	intelRule(mKabylakeL, blMMIO|blRetbleed|blGDS|blSRBDS),
	intelRule(mKabylake, blMMIO|blRetbleed|blGDS|blSRBDS),
	intelRule(mCannonlakeL, blRetbleed),
	intelRule(mIcelakeL, blMMIO|blMMIOSBDS|blRetbleed|blGDS),
	intelRule(mIcelakeD, blMMIO|blGDS),
	intelRule(mIcelakeX, blMMIO|blGDS),
	intelRule(mCometlake, blMMIO|blMMIOSBDS|blRetbleed|blGDS),
	{vendorIntel, 6, mCometlakeL, 0, blMMIO | blRetbleed},
	intelRule(mCometlakeL, blMMIO|blMMIOSBDS|blRetbleed|blGDS),
	intelRule(mTigerlakeL, blGDS),
	intelRule(mTigerlake, blGDS),
	intelRule(mLakefield, blMMIO|blMMIOSBDS|blRetbleed),
	intelRule(mRocketlake, blMMIO|blRetbleed|blGDS),
	intelRule(mAlderlake, blRFDS),
	intelRule(mAlderlakeL, blRFDS),
	intelRule(mRaptorlake, blRFDS),
	intelRule(mRaptorlakeP, blRFDS),
	intelRule(mRaptorlakeS, blRFDS),
	intelRule(mAlderlakeN, blRFDS),
	intelRule(mTremont, blMMIO|blMMIOSBDS|blRFDS),
	intelRule(mTremontD, blMMIO|blRFDS),
	intelRule(mTremontL, blMMIO|blMMIOSBDS|blRFDS),
	intelRule(mGoldmont, blRFDS),
	intelRule(mGoldmontD, blRFDS),
	intelRule(mGoldmontPlus, blRFDS),

	{vendorAMD, 0x15, -1, -1, blRetbleed},
	{vendorAMD, 0x16, -1, -1, blRetbleed},
	{vendorAMD, 0x17, -1, -1, blRetbleed | blSMTRSB | blSRSO},
	{vendorHygon, 0x18, -1, -1, blRetbleed | blSMTRSB | blSRSO},
	{vendorAMD, 0x19, -1, -1, blSRSO},
}

// cpuID is what the tables match on.
type cpuID struct {
	vendor, family, model, stepping int
}

// matches returns the flags of the first rule matching id, and whether
// they include any of which.
func matches(table []cpuRule, id cpuID, which uint32) bool {
	for _, r := range table {
		if (r.vendor == -1 || r.vendor == id.vendor) && (r.family == anyFamily || r.family == id.family) &&
			(r.model == -1 || r.model == id.model) && (r.stepping == -1 || r.stepping == id.stepping) {
			return r.flags&which != 0
		}
	}
	return false
}

// features are the CPUID bits and MSR values the rules read, with Linux's
// feature names in the comments.
type features struct {
	id                            cpuID
	vendorName                    string
	caps                          uint64 // IA32_ARCH_CAPABILITIES, 0 when absent
	capsMSR                       MSR
	hypervisor, smt               bool
	smtSource                     string // SMT's Source
	rdrand, rdseed, avx, rtm      bool   // RTM as CPUID enumerates it, before Linux's tsx_init
	rtmAlwaysAbort                bool
	mdClear, srbdsCtrl, flushL1D  bool
	ibrs, ibpb, stibp             bool // X86_FEATURE_IBRS, _IBPB, _STIBP (Intel SPEC_CTRL or AMD 8000_0008H)
	stibpAlwaysOn, btcNo, autoIBR bool
	rrsbaCtrl, bhiCtrl            bool
	mcuOptCtrl                    MSR  // read only with GDS_CTRL
	fsgsbase, smap                bool // for FENCE_SWAPGS_KERNEL (spectre_v1_select_mitigation)
	fred, lass                    bool // CPUID.(07H,1):EAX: beyond Linux 6.6's table
}

// frontier reads FRED and LASS from CPUID.(EAX=07H,ECX=1):EAX (bits 17
// and 6), where CPUID.(07H,0):EAX, a7, the last subleaf of leaf 7, says
// subleaf 1 exists.
func frontier(c CPU, a7 uint32) (fred, lass bool) {
	if a7 < 1 {
		return false, false
	}
	a71, _, _, _ := c.CPUID(7, 1)
	return a71&amd64.CPUID0701_EAX_FRED != 0, a71&amd64.CPUID0701_EAX_LASS != 0
}

func readFeatures(c CPU) features {
	max, _ := maxLeaf(c)
	_, b0, c0, d0 := c.CPUID(0, 0)
	var f features
	f.vendorName = string(le32(b0)) + string(le32(d0)) + string(le32(c0))
	f.id.vendor = vendorNames[f.vendorName]
	_, _, c1, _ := leaf(c, max, 1)
	family, model, stepping := signature(c, max)
	f.id.family, f.id.model, f.id.stepping = int(family), int(model), int(stepping)
	f.hypervisor = c1&amd64.CPUID01_ECX_HYPERVISOR != 0
	f.rdrand = c1&amd64.CPUID01_ECX_RDRAND != 0
	f.avx = c1&amd64.CPUID01_ECX_AVX != 0
	a7, b7, _, d7 := leaf(c, max, 7)
	f.rtm = b7&cpuid07EBXRTM != 0
	f.rdseed = b7&amd64.CPUID07_EBX_RDSEED != 0
	f.fsgsbase = b7&amd64.CPUID07_EBX_FSGSBASE != 0
	f.smap = b7&amd64.CPUID07_EBX_SMAP != 0
	f.srbdsCtrl = d7&cpuid07EDXSRBDSCtrl != 0
	f.mdClear = d7&amd64.CPUID07_EDX_MD_CLEAR != 0
	f.rtmAlwaysAbort = d7&cpuid07EDXRTMAbort != 0
	f.flushL1D = d7&cpuid07EDXFlushL1D != 0
	f.fred, f.lass = frontier(c, a7)
	if f.id.vendor == vendorIntel {
		f.ibrs = d7&amd64.CPUID07_EDX_SPEC_CTRL != 0
		f.ibpb = f.ibrs
		f.stibp = d7&cpuid07EDXSTIBP != 0
	}
	if max >= 7 && a7 >= 2 {
		_, _, _, d72 := c.CPUID(7, 2)
		f.rrsbaCtrl = d72&cpuid0702EDXRRSBACtl != 0
		f.bhiCtrl = d72&cpuid0702EDXBHICtrl != 0
	}
	if d7&amd64.CPUID07_EDX_ARCH_CAPS != 0 {
		f.capsMSR = read(c, amd64.MSR_IA32_ARCH_CAPABILITIES)
		if f.capsMSR.OK {
			f.caps = f.capsMSR.Value
		}
	}
	if f.id.vendor == vendorAMD || f.id.vendor == vendorHygon {
		emax, _, _, _ := c.CPUID(0x80000000, 0)
		if emax >= 0x80000008 {
			_, b, _, _ := c.CPUID(0x80000008, 0)
			f.ibpb = f.ibpb || b&amd64.CPUID80000008_EBX_IBPB != 0
			f.ibrs = f.ibrs || b&amd64.CPUID80000008_EBX_IBRS != 0
			f.stibp = f.stibp || b&amdEBXSTIBP != 0
			f.stibpAlwaysOn = b&amdEBXSTIBPAlwaysOn != 0
			f.btcNo = b&amdEBXBTCNo != 0
		}
		if emax >= 0x80000021 {
			a, _, _, _ := c.CPUID(0x80000021, 0)
			f.autoIBR = a&amdEAXAutoIBRS != 0
		}
	}
	if f.caps&ArchCapGDSCtrl != 0 {
		f.mcuOptCtrl = read(c, amd64.MSR_IA32_MCU_OPT_CTRL)
	}
	smt := ReadSMT(c)
	f.smt, f.smtSource = smt.On, smt.Source
	return f
}

// le32 is a register's four ASCII bytes, low byte first.
func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// bugs are Linux's X86_BUG_* bits as cpu_set_bug_bits sets them.
type bugs struct {
	spectreV2, mds, msbdsOnly, taa, srbds, mmio, mmioUnknown bool
	retbleed, eibrsPBRSB, gds, rfds, bhi, meltdown, l1tf     bool
	eibrs                                                    bool // X86_FEATURE_IBRS_ENHANCED
	ptiWhy                                                   string
}

func setBugs(f features) bugs {
	wl := func(w uint32) bool { return matches(vulnWhitelist, f.id, w) }
	bl := func(w uint32) bool { return matches(vulnBlacklist, f.id, w) }
	caps := f.caps
	var b bugs
	if wl(noSpeculation) {
		b.ptiWhy = "whitelisted model (no speculation)"
		return b
	}
	b.spectreV2 = !wl(noSpectreV2)
	if caps&ArchCapIBRSAll != 0 || f.autoIBR {
		b.eibrs = true
		b.eibrsPBRSB = !wl(noEIBRSPBRSB) && caps&ArchCapPBRSBNo == 0
	}
	if !wl(noMDS) && caps&ArchCapMDSNo == 0 {
		b.mds = true
		b.msbdsOnly = wl(msbdsOnly)
	}
	b.taa = caps&ArchCapTAANo == 0 && (f.rtm || caps&ArchCapTSXCtrl != 0)
	b.srbds = (f.rdrand || f.rdseed) && bl(blSRBDS|blMMIOSBDS)
	if caps&ArchCapFBSDPNo == 0 || caps&ArchCapPSDPNo == 0 || caps&ArchCapSBDRSSDPNo == 0 {
		if bl(blMMIO) {
			b.mmio = true
		} else if !wl(noMMIO) {
			b.mmioUnknown = true
		}
	}
	b.retbleed = !f.btcNo && (bl(blRetbleed) || caps&ArchCapRSBA != 0)
	b.gds = bl(blGDS) && caps&ArchCapGDSNo == 0 && f.avx
	b.rfds = caps&ArchCapRFDSNo == 0 && (caps&ArchCapRFDSClear != 0 || bl(blRFDS))
	b.bhi = caps&ArchCapBHINo == 0 && !wl(noBHI) && (b.eibrs || f.hypervisor)
	switch {
	case wl(noMeltdown):
		b.ptiWhy = "whitelisted model"
	case caps&ArchCapRDCLNo != 0:
		b.ptiWhy = "RDCL_NO"
	default:
		b.meltdown = true
		b.ptiWhy = "affected"
		b.l1tf = !wl(noL1TF)
	}
	return b
}

// Vulns decides the CPU's vulnerability table as Linux (LinuxLogic)
// would print it in /sys/devices/system/cpu/vulnerabilities, booted with
// its default options on this CPU: CONFIG_RETPOLINE, CPU_IBRS_ENTRY,
// CPU_UNRET_ENTRY, CPU_IBPB_ENTRY, CPU_SRSO, MITIGATION_SPECTRE_BHI,
// MITIGATION_RFDS and SECCOMP set, GDS_FORCE_MITIGATION clear, TSX off
// (X86_INTEL_TSX_MODE_OFF, Kconfig's default), no mitigation option on
// the command line, unprivileged eBPF disabled, kvm_intel not loaded
// (L1TF shows no VMX part), memory below MAX_PA/2 (PTE inversion
// effective), and SMT siblings online where the core has them (ReadSMT:
// MSR_CORE_THREAD_COUNT, which sees Hyper-Threading disabled in the
// firmware, else the topology leaf as shipped).
// IA32_ARCH_CAPABILITIES is read (#GP-safe) only where CPUID announces it;
// IA32_MCU_OPT_CTRL only where ARCH_CAPABILITIES has GDS_CTRL.
func Vulns(c CPU) contract.Vulnerabilities {
	f := readFeatures(c)
	b := setBugs(f)
	v := contract.Vulnerabilities{
		Linux: LinuxLogic, Vendor: f.vendorName, Family: f.id.family, Model: f.id.model, Stepping: f.id.stepping,
		ArchCapabilities: msrText(f.capsMSR), Hypervisor: f.hypervisor, SMT: f.smt, SMTSource: f.smtSource,
		PTINeeded: b.meltdown, PTIWhy: b.ptiWhy, FRED: f.fred, LASS: f.lass, Table: map[string]string{},
	}
	intel := f.id.vendor == vendorIntel
	amdLike := f.id.vendor == vendorAMD || f.id.vendor == vendorHygon
	const na = "Not affected"
	set := func(name string, bug bool, state func() string) {
		if !bug {
			v.Table[name] = na
			return
		}
		v.Table[name] = state()
	}
	// SMT suffixes of the MDS-family lines (bugs.c *_show_state).
	smtState := func() string {
		switch {
		case f.hypervisor:
			return "; SMT Host state unknown"
		case f.smt:
			return "; SMT vulnerable"
		}
		return "; SMT disabled"
	}

	// Meltdown: pti=auto enables PTI wherever the bug is set.
	set("meltdown", b.meltdown, func() string { return "Mitigation: PTI" })
	set("l1tf", b.l1tf, func() string { return "Mitigation: PTE Inversion" })

	// tsx_init with TSX off: RTM_ALWAYS_ABORT microcode or IA32_TSX_CTRL
	// leave RTM cleared before the mitigations are chosen.
	rtm := f.rtm && !f.rtmAlwaysAbort && f.caps&ArchCapTSXCtrl == 0

	// Spectre v2 (spectre_v2_select_mitigation, auto).
	const (
		modeRetpoline = "Mitigation: Retpolines"
		modeIBRS      = "Mitigation: IBRS"
		modeEIBRS     = "Mitigation: Enhanced / Automatic IBRS"
	)
	mode := modeRetpoline
	switch {
	case b.eibrs:
		mode = modeEIBRS
	case b.retbleed && f.ibrs && intel:
		mode = modeIBRS
	}
	rrsbaDisabled := f.caps&ArchCapRRSBA == 0 || f.rrsbaCtrl
	bhi := "Not affected"
	if b.bhi {
		switch {
		case mode == modeRetpoline && rrsbaDisabled:
			bhi = "Retpoline"
		case f.bhiCtrl:
			bhi = "BHI_DIS_S"
		default:
			bhi = "SW loop, KVM: SW loop"
		}
	}
	v.BHI = bhi
	// Retbleed (retbleed_select_mitigation, auto): the untrained return
	// thunk on AMD and Hygon, IBRS or eIBRS on Intel.
	retbleed := "Vulnerable"
	unret := false
	switch {
	case amdLike && b.retbleed:
		unret, retbleed = true, "Mitigation: untrained return thunk"
	case intel && mode == modeIBRS:
		retbleed = "Mitigation: IBRS"
	case intel && mode == modeEIBRS:
		retbleed = "Mitigation: Enhanced IBRS"
	}
	// spectre_v2_user (auto = seccomp): IBPB conditional; STIBP only with
	// SMT and without Intel's eIBRS, always-on where AMD prefers it or the
	// retbleed mitigation needs it.
	inEIBRS := mode == modeEIBRS
	stibp := "disabled"
	if f.stibp && f.smt && !(inEIBRS && !f.autoIBR) {
		stibp = "conditional"
		if f.stibpAlwaysOn || unret {
			stibp = "always-on"
		}
	}
	if unret {
		smt := "disabled"
		if f.smt {
			smt = "vulnerable"
			if stibp == "always-on" {
				smt = "enabled with STIBP protection"
			}
		}
		retbleed += "; SMT " + smt
	}
	set("retbleed", b.retbleed, func() string { return retbleed })
	set("spectre_v2", b.spectreV2, func() string {
		s := mode
		if f.ibpb {
			s += "; IBPB: conditional"
		}
		if f.ibrs && mode == modeRetpoline && !(b.retbleed && f.ibpb && amdLike) {
			s += "; IBRS_FW"
		}
		if !(inEIBRS && !f.autoIBR) {
			s += "; STIBP: " + stibp
		}
		if mode != modeEIBRS {
			s += "; RSB filling"
		}
		switch {
		case !b.eibrsPBRSB:
			s += "; PBRSB-eIBRS: Not affected"
		case inEIBRS:
			s += "; PBRSB-eIBRS: SW sequence"
		default:
			s += "; PBRSB-eIBRS: Vulnerable"
		}
		return s + "; BHI: " + bhi
	})

	// MDS, TAA, MMIO Stale Data, RFDS: VERW (CLEAR_CPU_BUF), or the
	// "attempted, no microcode" states without MD_CLEAR / FB_CLEAR.
	const noUcode = "Vulnerable: Clear CPU buffers attempted, no microcode"
	set("mds", b.mds, func() string {
		s := "Mitigation: Clear CPU buffers"
		if !f.mdClear {
			s = noUcode
		}
		if b.msbdsOnly && !f.hypervisor {
			if f.smt {
				return s + "; SMT mitigated"
			}
			return s + "; SMT disabled"
		}
		return s + smtState()
	})
	set("tsx_async_abort", b.taa, func() string {
		if !rtm {
			return "Mitigation: TSX disabled"
		}
		s := "Mitigation: Clear CPU buffers"
		if !f.mdClear || (f.caps&ArchCapMDSNo != 0 && f.caps&ArchCapTSXCtrl == 0) {
			s = noUcode
		}
		return s + smtState()
	})
	set("mmio_stale_data", b.mmio || b.mmioUnknown, func() string {
		if b.mmioUnknown {
			return "Unknown: No mitigations"
		}
		s := noUcode
		if f.caps&ArchCapFBClear != 0 || (f.mdClear && f.flushL1D && f.caps&ArchCapMDSNo == 0) {
			s = "Mitigation: Clear CPU buffers"
		}
		return s + smtState()
	})
	set("reg_file_data_sampling", b.rfds, func() string {
		if f.caps&ArchCapRFDSClear != 0 {
			return "Mitigation: Clear Register File"
		}
		return "Vulnerable: No microcode"
	})
	set("srbds", b.srbds, func() string {
		switch {
		case f.caps&ArchCapMDSNo != 0 && !rtm && !b.mmio:
			return "Mitigation: TSX disabled"
		case f.hypervisor:
			return "Unknown: Dependent on hypervisor status"
		case !f.srbdsCtrl:
			return "Vulnerable: No microcode"
		}
		return "Mitigation: Microcode"
	})
	set("gather_data_sampling", b.gds, func() string {
		switch {
		case f.hypervisor:
			return "Unknown: Dependent on hypervisor status"
		case f.caps&ArchCapGDSCtrl == 0:
			return "Vulnerable: No microcode"
		case f.mcuOptCtrl.OK && f.mcuOptCtrl.Value&mcuOptCtrlGDSMitgLock != 0:
			return "Mitigation: Microcode (locked)"
		}
		return "Mitigation: Microcode"
	})
	return v
}

// VulnNames are the table's entries in the order sysfs lists them.
var VulnNames = []string{
	"gather_data_sampling", "l1tf", "mds", "meltdown", "mmio_stale_data", "reg_file_data_sampling",
	"retbleed", "spectre_v2", "srbds", "tsx_async_abort",
}

// VulnLines are the human lines of the vulnerabilities record: a
// heading with the CPU, IA32_ARCH_CAPABILITIES, whether PTI is needed,
// whether the CPU has FRED and LASS (which Linux 6.6's table does not
// say) and SMT siblings (which the SMT parts of the entries assume), then
// one line per entry as sysfs prints it.
func VulnLines(v contract.Vulnerabilities) []string {
	yn := map[bool]string{true: "yes", false: "no"}
	lines := []string{fmt.Sprintf("ptilab vulnerabilities: as Linux %s would print them with its default options: %s family %#x model %#x stepping %d, IA32_ARCH_CAPABILITIES %s%s | PTI needed: %s (%s) | FRED %s, LASS %s (not in Linux %s's table) | SMT siblings %s (%s)",
		v.Linux, v.Vendor, v.Family, v.Model, v.Stepping, v.ArchCapabilities,
		map[bool]string{true: ", under a hypervisor", false: ""}[v.Hypervisor], yn[v.PTINeeded], v.PTIWhy, yn[v.FRED], yn[v.LASS], v.Linux,
		yn[v.SMT], SMTSourceNames[v.SMTSource])}
	for _, n := range VulnNames {
		lines = append(lines, fmt.Sprintf("ptilab vulnerabilities: %-22s %s", n, v.Table[n]))
	}
	return lines
}
