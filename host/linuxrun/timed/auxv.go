package timed

import (
	"encoding/binary"
	"fmt"
	"os"
	"unsafe"
)

// atSysinfo is the auxiliary vector's AT_SYSINFO: the entry point of the
// 32-bit vDSO's __kernel_vsyscall (Linux, include/uapi/linux/auxvec.h and
// arch/x86/include/uapi/asm/auxvec.h; only 32-bit processes get it).
const atSysinfo = 32

// KernelVsyscall returns the address of the vDSO's __kernel_vsyscall
// from the process's auxiliary vector (/proc/self/auxv), or an error
// when the vector has no AT_SYSINFO: every 64-bit process, and a 32-bit
// one under a kernel built without the 32-bit vDSO.
func KernelVsyscall() (uintptr, error) {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0, err
	}
	word := int(unsafe.Sizeof(uintptr(0)))
	for len(b) >= 2*word {
		tag, val := wordAt(b, word), wordAt(b[word:], word)
		b = b[2*word:]
		if tag == atSysinfo && val != 0 {
			return uintptr(val), nil
		}
		if tag == 0 {
			break
		}
	}
	return 0, fmt.Errorf("no AT_SYSINFO in the auxiliary vector (a %d-bit process)", 8*word)
}

// wordAt reads a native-endian word of size bytes from b.
func wordAt(b []byte, size int) uint64 {
	if size == 4 {
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}
