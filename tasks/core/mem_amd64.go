package core

import "unsafe"

// The 64-bit kernel's machine (package tasks): its rings and the tasks'
// memory are mapped in the kernel side of every process, and the bytes
// move by Go's copy (runtime.memmove, which kernel code may call).

// copyBytes copies n bytes from src to dst (not overlapping).
//
//go:nosplit
func copyBytes(dst, src, n uintptr) {
	copy(unsafe.Slice((*byte)(pointer(dst)), n), unsafe.Slice((*byte)(pointer(src)), n))
}

// pointer converts an address of the kernel's to a pointer.
//
//go:nosplit
func pointer(va uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&va)) }
