//go:build 386 && !kernel32host

package core

// The blob's machine (the 32-bit world, i386pae/kernel32): Linux's x86_32
// memcpy in assembly. mem_host.go replaces this file in the 32-bit
// kernel's host tests, mem_amd64.go in the 64-bit kernel.

// copyBytes copies n bytes from src to dst (not overlapping): REP MOVSL,
// then REP MOVSB for the rest. Kernel mode with DF clear (SAVE_ALL's
// CLD); keeps ESI and EDI.
//
// defined in mem_386.s
func copyBytes(dst, src, n uintptr)
