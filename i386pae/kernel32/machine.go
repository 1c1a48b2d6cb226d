//go:build 386 && !kernel32host

package main

import "unsafe"

// The machine under the tasks kernel's Go code (tasks.go) in the blob:
// addresses are the 32-bit world's (layout's), the rest is assembly in
// entry_386.s. machine_host.go replaces this file in the host tests.

// ptr converts a kernel or user address to a pointer.
//
//go:nosplit
func ptr(va uint32) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&va)) }

// setCR3 loads CR3 with v (a kernel PDPT).
//
// defined in entry_386.s
func setCR3(v uint32)

// rdtsc returns the TSC.
//
// defined in entry_386.s
func rdtsc() (lo, hi uint32)

// sample records the core-clock and disturbance counters in the next of
// KState.Samples: the sample call.
//
// defined in entry_386.s
func sample()

// endRun ends the run with reason and status (leave32); it does not
// return.
//
// defined in entry_386.s
func endRun(reason, status uint32)
