package amd64

import "unsafe"

// CPUFeatures is what CPUID says about the processor (SDM Vol. 2A, CPUID,
// Tables 3-8 to 3-20). It holds no pointers, so kernel code may fill it.
type CPUFeatures struct {
	MaxLeaf, MaxExtLeaf uint32
	vendor              [12]byte
	brand               [48]byte
	hypervisor          [12]byte
	Family, Model       uint32 // display family and model (SDM Vol. 2A, Figure 3-6)
	Stepping            uint32
	Signature           uint32 // CPUID.01H:EAX

	PCID           bool   // CPUID.01H:ECX[17], process-context identifiers
	INVPCID        bool   // CPUID.(EAX=07H,ECX=0):EBX[10]
	PGE            bool   // CPUID.01H:EDX[13], global pages
	SEP            bool   // CPUID.01H:EDX[11], SYSENTER and SYSEXIT
	SMEP           bool   // CPUID.(EAX=07H,ECX=0):EBX[7]
	SMAP           bool   // CPUID.(EAX=07H,ECX=0):EBX[20]
	RDRAND         bool   // CPUID.01H:ECX[30]
	RDSEED         bool   // CPUID.(EAX=07H,ECX=0):EBX[18]
	RDTSCP         bool   // CPUID.80000001H:EDX[27]
	NX             bool   // CPUID.80000001H:EDX[20]
	Page1G         bool   // CPUID.80000001H:EDX[26]
	InvariantTSC   bool   // CPUID.80000007H:EDX[8]
	FSGSBASE       bool   // CPUID.(EAX=07H,ECX=0):EBX[0]
	XSAVE          bool   // CPUID.01H:ECX[26]
	AVX            bool   // CPUID.01H:ECX[28]
	Hypervisor     bool   // CPUID.01H:ECX[31]
	PerfMonVersion uint32 // CPUID.0AH:EAX[7:0], architectural performance monitoring

	// Speculation controls (SDM Vol. 2A, CPUID, Table 3-8; AMD APM Vol. 3,
	// E.4.7 for 8000_0008H:EBX), for the mitigation knobs (package pti).
	MDClear  bool // CPUID.(EAX=07H,ECX=0):EDX[10], VERW clears the CPU buffers
	L1DFlush bool // CPUID.(EAX=07H,ECX=0):EDX[28], IA32_FLUSH_CMD.L1D_FLUSH
	SpecCtrl bool // IA32_SPEC_CTRL.IBRS: CPUID.(07H,0):EDX[26], or AMD 8000_0008H:EBX[14] (IBRS)
	PredCmd  bool // IA32_PRED_CMD.IBPB: CPUID.(07H,0):EDX[26], or AMD 8000_0008H:EBX[12] (IBPB)
	ArchCaps bool // CPUID.(07H,0):EDX[29], IA32_ARCH_CAPABILITIES
	BHICtrl  bool // CPUID.(EAX=07H,ECX=2):EDX[4], IA32_SPEC_CTRL.BHI_DIS_S

	// The 2025 CPUs' entry and isolation (SDM Vol. 3A, and Intel's FRED
	// specification, 2.1): FRED event delivery and ERETU/ERETS, and LASS.
	FRED bool // CPUID.(EAX=07H,ECX=1):EAX[17]
	LASS bool // CPUID.(EAX=07H,ECX=1):EAX[6]
}

// Features is filled by DetectFeatures at boot.
var Features CPUFeatures

// CPUID feature bits that DetectFeatures and package cpustate's rules both
// read (SDM Vol. 2A, CPUID, Tables 3-10 and 3-8).
const (
	CPUID01_ECX_AVX        = 1 << 28 // CPUID.01H:ECX[28]
	CPUID01_ECX_RDRAND     = 1 << 30 // CPUID.01H:ECX[30]
	CPUID01_ECX_HYPERVISOR = 1 << 31 // CPUID.01H:ECX[31], zero on bare metal
	CPUID07_EBX_FSGSBASE   = 1 << 0  // CPUID.(EAX=07H,ECX=0):EBX[0]
	CPUID07_EBX_RDSEED     = 1 << 18 // CPUID.(EAX=07H,ECX=0):EBX[18]
	CPUID07_EBX_SMAP       = 1 << 20 // CPUID.(EAX=07H,ECX=0):EBX[20]
)

// DetectFeatures reads CPUID into Features.
func DetectFeatures() {
	f := &Features
	var b, c, d uint32
	f.MaxLeaf, b, c, d = CPUID(0, 0)
	put32(f.vendor[0:], b)
	put32(f.vendor[4:], d)
	put32(f.vendor[8:], c)

	a, _, c, d := CPUID(1, 0)
	f.Signature = a
	f.Stepping = a & 0xf
	f.Family = (a >> 8) & 0xf
	f.Model = (a >> 4) & 0xf
	if f.Family == 0xf {
		f.Family += (a >> 20) & 0xff
	}
	if f.Family == 0x6 || f.Family >= 0xf {
		f.Model |= ((a >> 16) & 0xf) << 4
	}
	f.PCID = c&(1<<17) != 0
	f.XSAVE = c&(1<<26) != 0
	f.AVX = c&CPUID01_ECX_AVX != 0
	f.RDRAND = c&CPUID01_ECX_RDRAND != 0
	f.Hypervisor = c&CPUID01_ECX_HYPERVISOR != 0
	f.PGE = d&(1<<13) != 0
	f.SEP = d&(1<<11) != 0

	if f.MaxLeaf >= 7 {
		_, b, _, _ = CPUID(7, 0)
		f.FSGSBASE = b&CPUID07_EBX_FSGSBASE != 0
		f.SMEP = b&(1<<7) != 0
		f.INVPCID = b&(1<<10) != 0
		f.RDSEED = b&CPUID07_EBX_RDSEED != 0
		f.SMAP = b&CPUID07_EBX_SMAP != 0
		a, _, _, d = CPUID(7, 0)
		f.MDClear = d&CPUID07_EDX_MD_CLEAR != 0
		f.L1DFlush = d&CPUID07_EDX_L1D_FLUSH != 0
		f.SpecCtrl = d&CPUID07_EDX_SPEC_CTRL != 0
		f.PredCmd = f.SpecCtrl
		f.ArchCaps = d&CPUID07_EDX_ARCH_CAPS != 0
		if a >= 1 {
			a1, _, _, _ := CPUID(7, 1)
			f.FRED = a1&CPUID0701_EAX_FRED != 0
			f.LASS = a1&CPUID0701_EAX_LASS != 0
		}
		if a >= 2 {
			_, _, _, d = CPUID(7, 2)
			f.BHICtrl = d&CPUID0702_EDX_BHI_CTRL != 0
		}
	}
	if f.MaxLeaf >= 0xa {
		a, _, _, _ = CPUID(0xa, 0)
		f.PerfMonVersion = a & 0xff
	}

	f.MaxExtLeaf, _, _, _ = CPUID(0x80000000, 0)
	if f.MaxExtLeaf >= 0x80000001 {
		_, _, _, d = CPUID(0x80000001, 0)
		f.NX = d&(1<<20) != 0
		f.Page1G = d&(1<<26) != 0
		f.RDTSCP = d&(1<<27) != 0
	}
	if f.MaxExtLeaf >= 0x80000004 {
		for i := uint32(0); i < 3; i++ {
			a, b, c, d = CPUID(0x80000002+i, 0)
			put32(f.brand[16*i:], a)
			put32(f.brand[16*i+4:], b)
			put32(f.brand[16*i+8:], c)
			put32(f.brand[16*i+12:], d)
		}
	}
	if f.MaxExtLeaf >= 0x80000007 {
		_, _, _, d = CPUID(0x80000007, 0)
		f.InvariantTSC = d&(1<<8) != 0
	}
	if f.MaxExtLeaf >= 0x80000008 {
		_, b, _, _ = CPUID(0x80000008, 0)
		f.SpecCtrl = f.SpecCtrl || b&CPUID80000008_EBX_IBRS != 0
		f.PredCmd = f.PredCmd || b&CPUID80000008_EBX_IBPB != 0
	}
	if f.Hypervisor {
		_, b, c, d = CPUID(0x40000000, 0)
		put32(f.hypervisor[0:], b)
		put32(f.hypervisor[4:], c)
		put32(f.hypervisor[8:], d)
	}
}

// Vendor is the CPUID vendor string ("GenuineIntel", "AuthenticAMD").
func (f *CPUFeatures) Vendor() string { return CString(f.vendor[:]) }

// Brand is the processor brand string (CPUID 80000002H-80000004H), with
// leading and trailing spaces removed; empty where the CPU has none.
func (f *CPUFeatures) Brand() string { return trimSpace(CString(f.brand[:])) }

// HypervisorVendor is the signature at CPUID 40000000H ("TCGTCGTCGTCG",
// "KVMKVMKVM"), empty on bare metal.
func (f *CPUFeatures) HypervisorVendor() string { return CString(f.hypervisor[:]) }

// Microcode returns the microcode revision (Intel: IA32_BIOS_SIGN_ID[63:32]
// after writing 0 and executing CPUID(1), SDM Vol. 3A, 10.11.7.1; AMD: the
// patch level in the low half) and whether the MSR could be read.
func Microcode() (uint32, bool) {
	if _, ok := ReadMSRSafe(MSR_IA32_BIOS_SIGN_ID); !ok {
		return 0, false
	}
	if Features.Vendor() == "AuthenticAMD" {
		v, _ := ReadMSRSafe(MSR_IA32_BIOS_SIGN_ID)
		return uint32(v), true
	}
	if !WriteMSRSafe(MSR_IA32_BIOS_SIGN_ID, 0) {
		return 0, false
	}
	CPUID(1, 0)
	v, _ := ReadMSRSafe(MSR_IA32_BIOS_SIGN_ID)
	return uint32(v >> 32), true
}

func put32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// CString returns the bytes of b up to the first NUL as a string sharing
// b's memory: no allocation, so kernel-mode code may call it, and the string
// changes if b does (the CPUID and firmware strings read through it are
// written once, at boot).
func CString(b []byte) string {
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	if n == 0 {
		return ""
	}
	return unsafe.String(&b[0], n)
}

func trimSpace(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

// MSR_AMD64_DE_CFG bit 1 makes LFENCE dispatch-serializing on AMD CPUs
// (Linux, arch/x86/kernel/cpu/amd.c, init_amd).
const (
	MSR_AMD64_DE_CFG        = 0xc0011029
	deCfgLfenceSerializeBit = 1
)

// LFENCE serialization states, as SerializeLFENCE reports them.
const (
	LFENCEArchitectural = "architectural" // Intel: LFENCE waits for earlier instructions
	LFENCESet           = "de_cfg"        // AMD: DE_CFG bit 1 is set
	LFENCEAssumed       = "assumed"       // AMD without the MSR: older families serialize anyway
	// LFENCENotSet: AMD's DE_CFG reads, but bit 1 is clear after it was
	// written (an emulator that reads the MSRs it lacks as 0 and drops
	// their writes): LFENCE may not serialize the TSC reads.
	LFENCENotSet = "de_cfg not set"
)

// SerializeLFENCE makes LFENCE wait for earlier instructions, as the TSC
// reads of the timing loops need (SDM Vol. 2B, RDTSC), and says how: on
// AMD and Hygon it sets DE_CFG bit 1 as Linux does (families without the
// MSR serialize already). It needs the kernel's #GP fix-up for the safe MSR
// accessors.
func SerializeLFENCE() string {
	switch Features.Vendor() {
	case "AuthenticAMD", "HygonGenuine":
	default:
		return LFENCEArchitectural
	}
	v, ok := ReadMSRSafe(MSR_AMD64_DE_CFG)
	if !ok {
		return LFENCEAssumed
	}
	if v&(1<<deCfgLfenceSerializeBit) == 0 && !WriteMSRSafe(MSR_AMD64_DE_CFG, v|1<<deCfgLfenceSerializeBit) {
		return LFENCEAssumed
	}
	if v, ok = ReadMSRSafe(MSR_AMD64_DE_CFG); !ok || v&(1<<deCfgLfenceSerializeBit) == 0 {
		return LFENCENotSet
	}
	return LFENCESet
}
