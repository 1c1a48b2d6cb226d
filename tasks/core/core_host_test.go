//go:build 386 && kernel32host

package core

import "unsafe"

// Under the kernel32host tag the rings copy through HostCopy, which
// kernel32's host tests point at their mapping of the 32-bit world; the
// core's own tests use plain host addresses, so a plain copy.
func init() {
	HostCopy = func(dst, src, n uintptr) {
		copy(unsafe.Slice((*byte)(hostPointer(dst)), n), unsafe.Slice((*byte)(hostPointer(src)), n))
	}
}

// hostPointer converts a host address the test took from a Go value back
// to a pointer (as mem_amd64.go's pointer).
func hostPointer(va uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&va)) }
