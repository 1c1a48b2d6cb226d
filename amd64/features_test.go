package amd64

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// procCPUInfo returns the first processor's fields of /proc/cpuinfo, or nil
// where there is none.
func procCPUInfo(t *testing.T) map[string]string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	m := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if line == "" {
			break // end of the first processor
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	require.NoError(t, s.Err())
	return m
}

func TestDetectFeaturesHost(t *testing.T) {
	saved := Features
	t.Cleanup(func() { Features = saved })
	Features = CPUFeatures{}
	DetectFeatures()
	f := &Features

	vendor := f.Vendor()
	assert.NotEmpty(t, vendor)
	assert.LessOrEqual(t, len(vendor), 12)
	assert.NotZero(t, f.MaxLeaf)
	assert.NotZero(t, f.Family)
	assert.NotZero(t, f.Signature)
	// Display family and model from the signature (SDM Vol. 2A, CPUID,
	// Figure 3-6).
	eax, _, _, _ := CPUID(1, 0)
	assert.Equal(t, eax, f.Signature)
	assert.Equal(t, f.Signature&0xf, f.Stepping)
	family, model := eax>>8&0xf, eax>>4&0xf
	if family == 0xf {
		model |= eax >> 16 & 0xf << 4
		family += eax >> 20 & 0xff
	} else if family == 0x6 {
		model |= eax >> 16 & 0xf << 4
	}
	assert.Equal(t, family, f.Family, "family")
	assert.Equal(t, model, f.Model, "model")
	assert.GreaterOrEqual(t, f.MaxExtLeaf, uint32(0x80000000), "extended leaves exist on every x86-64 CPU")

	brand := f.Brand()
	assert.Equal(t, strings.Trim(brand, " "), brand, "brand without leading or trailing spaces")
	assert.NotContains(t, brand, "\x00")
	if f.MaxExtLeaf >= 0x80000004 {
		assert.NotEmpty(t, brand)
	}
	if f.Hypervisor {
		assert.NotContains(t, f.HypervisorVendor(), "\x00")
	} else {
		assert.Empty(t, f.HypervisorVendor())
	}

	// Every x86-64 CPU has long mode's NX and global pages.
	assert.True(t, f.NX, "NX")
	assert.True(t, f.PGE, "PGE")

	// A second detection gives the same answer.
	first := Features
	DetectFeatures()
	assert.Equal(t, first, Features)

	// Linux computes family, model and stepping the same way
	// (arch/x86/lib/cpu.c). (The brand is not compared: sandboxes such as
	// gVisor report their own "model name".)
	info := procCPUInfo(t)
	if info == nil || info["vendor_id"] == "" {
		t.Log("no /proc/cpuinfo: cross-check skipped")
		return
	}
	assert.Equal(t, info["vendor_id"], vendor)
	for _, c := range []struct {
		key  string
		want uint32
	}{{"cpu family", f.Family}, {"model", f.Model}, {"stepping", f.Stepping}} {
		v, err := strconv.ParseUint(info[c.key], 10, 32)
		if assert.NoError(t, err, c.key) {
			assert.Equal(t, uint32(v), c.want, c.key)
		}
	}
}

// TestReadTSCLeavesHost reads the host's leaves 15H and 16H where the
// maximum basic leaf reaches them (what board.CPUIDTSC makes of them:
// board's TestCPUIDTSCHost).
func TestReadTSCLeavesHost(t *testing.T) {
	saved := Features
	t.Cleanup(func() { Features = saved })
	DetectFeatures()
	l := ReadTSCLeaves()
	assert.Equal(t, Features.MaxLeaf >= 0x15, l.Has15)
	assert.Equal(t, Features.MaxLeaf >= 0x16, l.Has16)

	// No leaf 15H: none read.
	Features.MaxLeaf = 0xd
	l = ReadTSCLeaves()
	assert.False(t, l.Has15)
	assert.Equal(t, [3]uint32{}, l.Leaf15)
}

func TestCString(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"nil", nil, ""},
		{"empty", []byte{}, ""},
		{"all NUL", make([]byte, 12), ""},
		{"leading NUL", []byte("\x00abc"), ""},
		{"full, no NUL", []byte("GenuineIntel"), "GenuineIntel"},
		{"NUL terminated", []byte("KVMKVMKVM\x00\x00\x00"), "KVMKVMKVM"},
		{"stops at first NUL", []byte("ab\x00cd\x00"), "ab"},
		{"one byte", []byte("x"), "x"},
		{"spaces kept", []byte("  a  \x00"), "  a  "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, CString(tt.in))
		})
	}

	// The string shares the array's memory.
	b := []byte("abc\x00")
	s := CString(b)
	assert.Equal(t, unsafe.Pointer(&b[0]), unsafe.Pointer(unsafe.StringData(s)))
}

func TestTrimSpace(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{" ", ""},
		{"     ", ""},
		{"a", "a"},
		{" a", "a"},
		{"a ", "a"},
		{"   Intel(R) Xeon(R) CPU   ", "Intel(R) Xeon(R) CPU"},
		{"a  b", "a  b"},
		{"\ta\t", "\ta\t"}, // only spaces, as CPUID pads with spaces
		{" \x00 ", "\x00"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, trimSpace(tt.in), "trimSpace(%q)", tt.in)
	}
}

func TestFeatureStringsFromArrays(t *testing.T) {
	var f CPUFeatures
	copy(f.vendor[:], "AuthenticAMD")
	copy(f.brand[:], "   AMD EPYC 7763 64-Core Processor                ")
	copy(f.hypervisor[:], "KVMKVMKVM")
	assert.Equal(t, "AuthenticAMD", f.Vendor())
	assert.Equal(t, "AMD EPYC 7763 64-Core Processor", f.Brand())
	assert.Equal(t, "KVMKVMKVM", f.HypervisorVendor())

	var empty CPUFeatures
	assert.Empty(t, empty.Vendor())
	assert.Empty(t, empty.Brand())
	assert.Empty(t, empty.HypervisorVendor())
}

func TestPut32(t *testing.T) {
	b := make([]byte, 6)
	put32(b[1:], 0x756e6547) // "Genu"
	assert.Equal(t, []byte{0, 'G', 'e', 'n', 'u', 0}, b)
}

// TestRefusedCR4 checks the CR4 bits boot refuses, with the CR4 OVMF
// hands over under QEMU 7.2 (read here at the entry point: 0x668, DE,
// PAE, MCE, OSFXSR and OSXMMEXCPT), with the bits a newer firmware may add
// that ptilab runs with, and with 5-level paging or CET on.
func TestRefusedCR4(t *testing.T) {
	const ovmf = 0x668
	assert.Equal(t, "", RefusedCR4(ovmf))
	assert.Equal(t, "", RefusedCR4(ovmf|CR4_PGE|CR4_OSXSAVE|CR4_SMEP|CR4_SMAP|CR4_FSGSBASE|CR4_PCIDE))
	assert.Equal(t, "CR4.LA57 (5-level paging)", RefusedCR4(ovmf|1<<12))
	assert.Equal(t, "CR4.CET (control-flow enforcement)", RefusedCR4(ovmf|1<<23))
	assert.Equal(t, "CR4.LA57 (5-level paging)", RefusedCR4(ovmf|1<<12|1<<23), "LA57 is named first")
}

// TestInitXState runs the XRSTOR of the initial configuration in this
// process (XRSTOR and XGETBV are not privileged; Linux runs processes with
// CR4.OSXSAVE set): the area is well formed (a bad MXCSR or header would
// raise #GP, a SIGSEGV here), XCR0 comes back, and where the CPU reports
// XINUSE (XGETBV with ECX = 1, CPUID.(EAX=0DH,ECX=1):EAX[2]) the AVX and
// later components are in their initial configuration afterwards.
func TestInitXState(t *testing.T) {
	_, _, c, _ := CPUID(1, 0)
	if c&(1<<27) == 0 {
		t.Skip("the host kernel runs without CR4.OSXSAVE: XRSTOR would raise #UD")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	xcr0 := InitXState()
	var inuse uint64
	a, _, _, _ := CPUID(0xd, 1)
	hasXinuse := a&(1<<2) != 0
	if hasXinuse {
		inuse = XGETBV(1)
	}
	assert.Equal(t, XGETBV(0), xcr0)
	assert.Equal(t, uint64(3), xcr0&3, "x87 and SSE are always in XCR0")
	if hasXinuse {
		// PKRU (XCR0 bit 9) is no register state of the vector units: a
		// Linux process's PKRU is the kernel's (init_pkru, not 0, which
		// XINUSE[9] reports in use), and the kernel writes it back on its
		// way to user mode (arch/x86/kernel/fpu/core.c), so a host with
		// PKU cannot hold it in its initial configuration here.
		const pkru = 1 << 9
		assert.Zero(t, inuse&xcr0&^3&^pkru, "XINUSE %#x, XCR0 %#x: AVX and later in use after InitXState", inuse, xcr0)
	}
}
