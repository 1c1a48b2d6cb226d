package amd64

import (
	"sync/atomic"
	"unsafe"
)

// NMIs. A non-maskable interrupt (SDM Vol. 3A, 6.7.1) can strike anywhere:
// in Go code, inside a firmware call, in ring 3 and in the middle of a
// trampoline. ptilab's handlers count it and resume the interrupted code
// (an NMI from the platform, a watchdog or a debugger is a disturbance of a
// measurement, not an error); they never print, since the interrupted code
// may be in the middle of a console line.
//
// nmis is the one counter every handler increments: NMIEntry here, pti's
// entry-area handler through NMICounterAddr, and the 32-bit world's
// count added by AddNMIs when it returns.
var nmis uint64

// NMICount returns the NMIs counted since boot: monotonic, read without
// side effects, so that a measurement can read it before and after a
// repeat and mark the repeat disturbed when it moved.
func NMICount() uint64 { return atomic.LoadUint64(&nmis) }

// AddNMIs adds n NMIs counted where NMIEntry cannot reach the counter (the
// 32-bit world's handler counts in its own per-CPU data).
func AddNMIs(n uint64) { atomic.AddUint64(&nmis, n) }

// NMICounterAddr returns the counter's address, for handlers outside the
// image's text that increment it in place (pti's entry-area NMI entry,
// which runs on the kernel side's CR3, where the image is mapped).
func NMICounterAddr() uint64 { return uint64(uintptr(unsafe.Pointer(&nmis))) }

// nmiEntry is an NMI handler for an IDT gate in 64-bit mode: it increments
// the counter (a single INC, RIP-relative: it needs no register, no stack
// but the interrupt frame, no segment but CS) and returns by IRETQ, which
// also ends the CPU's NMI blocking (SDM Vol. 3A, 6.7.1). It runs on any
// code selector whose descriptor is 64-bit code and any CR3 that maps the
// image, so the same handler serves ptilab's IDT (KERNEL_CS, IST) and the
// firmware's IDT copy (the firmware's CS, no IST) of package efi.
//
// defined in nmi_amd64.s
func nmiEntry()

// NMIEntryPC returns the address of nmiEntry, for an IDT gate.
//
// defined in nmi_amd64.s
func NMIEntryPC() uint64
