//go:build 386 && kernel32host

package core

// The 32-bit kernel's host tests' machine (i386pae/kernel32 with the
// kernel32host build tag, which the blob's build never sets): the tests
// map the 32-bit world's addresses to host memory, and set HostCopy to
// their copy, which ring.go's copies call.

// HostCopy copies n bytes from src to dst, 32-bit world addresses: the
// host tests' (kernel32's machine_host.go).
var HostCopy func(dst, src, n uintptr)

func copyBytes(dst, src, n uintptr) { HostCopy(dst, src, n) }
