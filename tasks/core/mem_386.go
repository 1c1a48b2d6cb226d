//go:build 386 && !kernel32host

package core

// The blob's machine (the 32-bit world, i386pae/kernel32): the ring
// copies in assembly, as Linux's x86_32 memcpy (REP MOVSL, then REP MOVSB
// for the rest), one call per copy, wrap included. ring.go replaces this
// file in the 64-bit kernel and in the 32-bit kernel's host tests.

// fromRing copies c bytes (at most RingSize) from the ring at ring, from
// position pos, to buf: up to the ring's end, then from its start.
// Kernel mode with DF clear (SAVE_ALL's CLD); keeps ESI and EDI.
//
// defined in mem_386.s
func fromRing(buf, ring uintptr, pos uint32, c uintptr)

// toRing copies c bytes (at most RingSize) from buf into the ring at
// ring, from position pos: up to the ring's end, then from its start.
// As fromRing.
//
// defined in mem_386.s
func toRing(ring uintptr, pos uint32, buf, c uintptr)
