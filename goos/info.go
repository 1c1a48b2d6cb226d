package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/linuxabi"
)

// What the kernel tells the Go program about the machine and the run.

// Info describes the machine and how the kernel set it up.
type Info struct {
	Board            string // "qemu", "bochs" or "pc" (board.Detect)
	Emulator         string // "qemu-tcg", "bochs", or "" on hardware and hardware virtual machines (board.Emulator)
	FirmwareVendor   string
	FirmwareRevision uint32
	ImageBase        uint64 // where the firmware loaded the image
	ImageSize        uint64 // bytes
	RAM              uint64 // bytes of RAM in the memory map at boot
	FreeAtBoot       uint64 // bytes of it free at boot
	Claimed          uint64 // bytes taken for the kernel's frame pool
	TSCHz            uint64 // TSC frequency in Hz
	TSCSource        string // how it was found: board.TSCSource's names
	TSC              board.TSCChoice
	TSCLeaves        amd64.TSCLeaves // raw CPUID 15H and 16H
	RTC              bool            // CLOCK_REALTIME was set from the firmware's clock
	Serial           bool            // a serial port present (COM1 or the SPCR's)
	Screens          int             // display text outputs written to
	Random           string          // getrandom's source
}

// MachineInfo returns the Info of this run.
func MachineInfo() Info {
	return Info{
		Board:            board.Machine.String(),
		Emulator:         board.Emulator(),
		FirmwareVendor:   efi.Vendor(),
		FirmwareRevision: efi.Firmware.Revision,
		ImageBase:        efi.Firmware.ImageBase,
		ImageSize:        efi.Firmware.ImageSize,
		RAM:              bootMem.ram,
		FreeAtBoot:       bootMem.free,
		Claimed:          bootMem.claimed,
		TSCHz:            clock.tsc.Hz,
		TSCSource:        clock.choice.Source.String(),
		TSC:              clock.choice,
		TSCLeaves:        clock.leaves,
		RTC:              clock.rtcOK,
		Serial:           board.SerialPresent(),
		Screens:          efi.Screens(),
		Random:           RandomSource(),
	}
}

// Clock returns the TSC converter the kernel's clocks use.
func Clock() amd64.TSCClock { return clock.tsc }

// Ready declares that the Go program is running: from now on a CPU
// exception in Go code continues as a Go panic in the faulting goroutine,
// with the runtime's traceback, instead of ending the run at once.
func Ready() { goReady = true }

// Faults returns the number of fatal CPU exceptions and the last one.
func Faults() (int, Fault) { return faults, lastFault }

// MemStats describes the kernel's memory.
type MemStats struct {
	PoolBytes     uint64 // frame pool size
	UsedBytes     uint64 // frames in use now
	PeakBytes     uint64 // most frames in use at once
	Reserved      uint64 // bytes of address space the runtime mapped, at any protection
	Accessible    uint64 // of which readable or writable
	PagesBacked   uint64 // pages given a frame on first touch
	PagesReleased uint64 // frames taken back (munmap, madvise)
	Exceptions    uint64 // CPU exceptions, page faults included
}

// Memory returns the kernel's memory statistics.
func Memory() MemStats {
	all, acc := vm.reserved()
	return MemStats{
		PoolBytes:     pool.total * pageSize,
		UsedBytes:     pool.used * pageSize,
		PeakBytes:     pool.peak * pageSize,
		Reserved:      all,
		Accessible:    acc,
		PagesBacked:   stats.pagesBacked,
		PagesReleased: stats.pagesReleased,
		Exceptions:    stats.exceptions,
	}
}

// SyscallCount is how often the runtime made one system call.
type SyscallCount struct {
	Nr    uint64
	Name  string
	Count uint64
}

// SyscallCounts returns the counts of the system calls made so far, in
// number order, into dst (which needs room for every distinct call: 512
// is always enough), and the count of those answered ENOSYS.
func SyscallCounts(dst []SyscallCount) (n int, unknown uint64) {
	for nr, c := range stats.syscalls {
		if c != 0 && n < len(dst) {
			dst[n] = SyscallCount{uint64(nr), linuxabi.SyscallName(uint64(nr)), c}
			n++
		}
	}
	return n, stats.unknown
}

// Switches returns the number of switches from one thread to another.
func Switches() uint64 { return sched.switches }
