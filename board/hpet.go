package board

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
)

// The High Precision Event Timer (Intel, "IA-PC HPET (High Precision
// Event Timers) Specification", revision 1.0a, 2004; Linux
// arch/x86/kernel/hpet.c): a main counter that counts up at a fixed
// period, in a 1 KiB block of memory-mapped registers the ACPI HPET table
// names. ptilab reads it only as a second reference for the TSC's
// frequency, beside the ACPI PM timer, as Linux's TSC calibration does
// (arch/x86/kernel/tsc.c, tsc_read_refs, calc_hpet_ref).

// The ACPI HPET table (HPET specification 3.2.4, "The ACPI 2.0 HPET
// Description Table (HPET)"): the ACPI header, then these fields.
const (
	hpetTableBlockID = 36 // Event Timer Block ID: a copy of the capabilities register's low 32 bits
	hpetTableBase    = 40 // BASE_ADDRESS: a Generic Address Structure (ACPI 6.5, 5.2.3.2)
	hpetTableNumber  = 52 // HPET sequence number
	hpetTableMinTick = 53 // main counter minimum clock tick in periodic mode (16 bits)
	hpetTableLength  = 56 // the table's length: the page protection byte ends it
)

// The registers (HPET specification 2.3, "Register Descriptions"), as
// offsets from the base address, and their bits.
const (
	hpetCapID       = 0x000 // General Capabilities and ID, bits 31:0
	hpetPeriod      = 0x004 // its bits 63:32: COUNTER_CLK_PERIOD, femtoseconds per tick
	hpetConfig      = 0x010 // General Configuration
	hpetStatus      = 0x020 // General Interrupt Status (write 1 to clear)
	hpetCounter     = 0x0f0 // Main Counter Value, bits 31:0 (bits 63:32 at 0x0f4)
	hpetTimerConfig = 0x100 // Timer N Configuration and Capability: 0x100 + 0x20*N
	hpetTimerStride = 0x20
	hpetBlockBytes  = 0x400 // the register block

	hpetNumTimCap   = 0x1f << 8 // capabilities: NUM_TIM_CAP, the number of the last timer
	hpetCountSize   = 1 << 13   // capabilities: COUNT_SIZE_CAP, a 64-bit main counter
	hpetEnableCnf   = 1 << 0    // configuration: ENABLE_CNF, the main counter runs
	hpetLegRtCnf    = 1 << 1    // configuration: LEG_RT_CNF, timers 0 and 1 replace IRQ0 and IRQ8
	hpetTnIntEnbCnf = 1 << 2    // timer N: Tn_INT_ENB_CNF, its interrupt enabled
)

// The counter period's bounds in femtoseconds: at most 100 ns (10 MHz;
// HPET specification 2.3.4, HPET_MAX_PERIOD in Linux's asm/hpet.h), at
// least 100 ps (Linux's HPET_MIN_PERIOD: below it the 32-bit counter
// Linux reads wraps in less than half a second).
const (
	HPETMaxPeriodFs = 100_000_000
	HPETMinPeriodFs = 100_000
)

// HPETWhy says why the HPET gives no reference (a number, not a string:
// kernel code keeps no pointers in globals).
type HPETWhy uint8

const (
	HPETOK         HPETWhy = iota
	HPETNoTable            // the firmware publishes no ACPI HPET table
	HPETBadTable           // the table is too short or not an HPET table
	HPETNotMemory          // its base address is not in system memory space
	HPETNoBase             // its base address is 0
	HPETAbove4G            // its registers lie above 4 GiB
	HPETNoDevice           // the capabilities register reads all ones (no device decodes there)
	HPETBadPeriod          // COUNTER_CLK_PERIOD outside HPETMinPeriodFs..HPETMaxPeriodFs
	HPETNotStarted         // disabled, with a timer's interrupt or the legacy routing enabled
)

// String says why as the records do.
func (w HPETWhy) String() string {
	switch w {
	case HPETOK:
		return "ok"
	case HPETNoTable:
		return "no HPET table"
	case HPETBadTable:
		return "bad HPET table"
	case HPETNotMemory:
		return "registers not in memory space"
	case HPETNoBase:
		return "base address 0"
	case HPETAbove4G:
		return "above 4 GiB"
	case HPETNoDevice:
		return "no HPET answers at its address"
	case HPETBadPeriod:
		return "counter period out of range"
	case HPETNotStarted:
		return "disabled, with a timer interrupt or legacy routing enabled: not started"
	}
	return "unknown"
}

// HPETTable is what the ACPI HPET table says.
type HPETTable struct {
	Base    uint64 // physical address of the register block
	BlockID uint32 // Event Timer Block ID
	Number  uint8  // HPET sequence number
	MinTick uint16 // main counter minimum clock tick in periodic mode
}

// ParseHPET reads an ACPI HPET table (t: the whole table, as its length
// field gives it) and returns its fields, or why the HPET cannot be used:
// HPETBadTable (shorter than 56 bytes, another signature, a length field
// below 56), HPETNotMemory (its Generic Address Structure names another
// address space than system memory, 0), HPETNoBase, HPETAbove4G (the
// register block does not end below 4 GiB, where the kernel's identity
// map reaches MMIO).
func ParseHPET(t []byte) (HPETTable, HPETWhy) {
	var h HPETTable
	if len(t) < hpetTableLength || string(t[:4]) != "HPET" || le32(t[4:]) < hpetTableLength {
		return h, HPETBadTable
	}
	g := t[hpetTableBase : hpetTableBase+12]
	h.Base = le64(g[4:])
	h.BlockID = le32(t[hpetTableBlockID:])
	h.Number = t[hpetTableNumber]
	h.MinTick = uint16(t[hpetTableMinTick]) | uint16(t[hpetTableMinTick+1])<<8
	switch {
	case g[0] != gasMemory:
		return h, HPETNotMemory
	case h.Base == 0:
		return h, HPETNoBase
	case h.Base > 4<<30-hpetBlockBytes:
		return h, HPETAbove4G
	}
	return h, HPETOK
}

// CheckHPETCaps reads the General Capabilities and ID register (lo: bits
// 31:0, hi: bits 63:32) and returns the counter period in femtoseconds,
// whether the main counter is 64 bits wide (COUNT_SIZE_CAP) and whether
// it can be used: HPETNoDevice when both halves read all ones (nothing
// decodes the address: the chipset's HPET turned off), HPETBadPeriod when
// the period lies outside HPETMinPeriodFs..HPETMaxPeriodFs (Linux's
// hpet_enable refuses it the same way).
func CheckHPETCaps(lo, hi uint32) (periodFs uint32, counter64 bool, why HPETWhy) {
	switch {
	case lo == 0xffffffff && hi == 0xffffffff:
		return 0, false, HPETNoDevice
	case hi < HPETMinPeriodFs || hi > HPETMaxPeriodFs:
		return hi, lo&hpetCountSize != 0, HPETBadPeriod
	}
	return hi, lo&hpetCountSize != 0, HPETOK
}

// HPETStart decides whether the HPET may run for the calibration: from
// the General Configuration register (config, bits 31:0) and each timer's
// configuration (timers, bits 31:0 of Timer N Configuration and
// Capability). A running main counter (ENABLE_CNF set: the firmware's own
// use) is only read: start false, HPETOK. A halted one is started only
// where starting it raises no interrupt: no timer with Tn_INT_ENB_CNF
// set and LEG_RT_CNF clear (with it, a running HPET takes IRQ0 and IRQ8
// from the 8254 and the RTC, which the firmware's timer tick may be).
// Otherwise HPETNotStarted.
func HPETStart(config uint32, timers []uint32) (start bool, why HPETWhy) {
	if config&hpetEnableCnf != 0 {
		return false, HPETOK
	}
	if config&hpetLegRtCnf != 0 {
		return false, HPETNotStarted
	}
	for _, t := range timers {
		if t&hpetTnIntEnbCnf != 0 {
			return false, HPETNotStarted
		}
	}
	return true, HPETOK
}

// HPETInfo is what FindHPET found.
type HPETInfo struct {
	Why       HPETWhy // HPETOK: HPETCounter is usable
	Base      uint64  // the register block's physical address (0: no table)
	PeriodFs  uint32  // COUNTER_CLK_PERIOD, femtoseconds per tick (0: not read)
	Counter64 bool    // COUNT_SIZE_CAP
	// Started: the main counter was halted (ENABLE_CNF clear, as the
	// specification's reset leaves it and most firmware does) and
	// FindHPET started it; StopHPET halts it again.
	Started bool
	// Restored: StopHPET read the General Configuration and the main
	// counter back as FindHPET found them.
	Restored bool
}

// The HPET FindHPET found, and what StopHPET puts back.
var hpet struct {
	base                 uintptr
	counter64            bool
	started              bool
	config               uint32 // General Configuration as found
	counterLo, counterHi uint32 // the halted main counter as found
	status               uint32 // General Interrupt Status as found
}

// hpetMaxTimers: NUM_TIM_CAP is five bits.
const hpetMaxTimers = 32

// FindHPET locates the HPET through the ACPI HPET table (ParseHPET),
// checks its capabilities (CheckHPETCaps) and, where its main counter is
// halted, starts it when HPETStart allows: it saves the General
// Configuration, the counter's value and the interrupt status, and sets
// ENABLE_CNF. StopHPET undoes that after the calibration. Running it for
// half a second with every timer interrupt off raises no interrupt; a
// comparator in periodic mode may advance meanwhile (its next user writes
// it before enabling its interrupt, as Linux does) and a level-triggered
// timer may latch a status bit, which StopHPET clears.
//
// The registers are read through the kernel's identity map of [0, 4
// GiB), whose pages are write-back: the firmware's MTRRs make the
// chipset's MMIO range uncacheable on a PC (a cached counter would not
// advance, which Calibrator.Validate reports).
func FindHPET() HPETInfo {
	a := findACPITable([4]byte{'H', 'P', 'E', 'T'})
	if a == 0 {
		return HPETInfo{Why: HPETNoTable}
	}
	n := min(efi.Read32(a+4), 4096)
	t, why := ParseHPET(efi.Bytes(a, int(n)))
	info := HPETInfo{Why: why, Base: t.Base}
	if why != HPETOK {
		return info
	}
	base := uintptr(t.Base)
	lo := amd64.MMIORead32(base + hpetCapID)
	info.PeriodFs, info.Counter64, info.Why = CheckHPETCaps(lo, amd64.MMIORead32(base+hpetPeriod))
	if info.Why != HPETOK {
		return info
	}
	var timers [hpetMaxTimers]uint32
	nt := int(lo&hpetNumTimCap>>8) + 1
	for i := 0; i < nt; i++ {
		timers[i] = amd64.MMIORead32(base + hpetTimerConfig + uintptr(i)*hpetTimerStride)
	}
	config := amd64.MMIORead32(base + hpetConfig)
	start, why := HPETStart(config, timers[:nt])
	if info.Why = why; why != HPETOK {
		return info
	}
	hpet.base, hpet.counter64, hpet.config = base, info.Counter64, config
	if start {
		hpet.counterLo = amd64.MMIORead32(base + hpetCounter)
		hpet.counterHi = amd64.MMIORead32(base + hpetCounter + 4)
		hpet.status = amd64.MMIORead32(base + hpetStatus)
		amd64.MMIOWrite32(base+hpetConfig, config|hpetEnableCnf)
		hpet.started, info.Started = true, true
	}
	return info
}

// StopHPET puts back what FindHPET changed when it started the HPET: the
// General Configuration as found (ENABLE_CNF clear: the counter halts),
// then the main counter's value as found (writable while halted), and
// clears the interrupt status bits set since. It reports whether the
// configuration and the counter's low half then read as found (false
// when FindHPET started nothing).
func StopHPET() (restored bool) {
	if !hpet.started {
		return false
	}
	b := hpet.base
	amd64.MMIOWrite32(b+hpetConfig, hpet.config)
	amd64.MMIOWrite32(b+hpetCounter, hpet.counterLo)
	if hpet.counter64 {
		amd64.MMIOWrite32(b+hpetCounter+4, hpet.counterHi)
	}
	if s := amd64.MMIORead32(b+hpetStatus) &^ hpet.status; s != 0 {
		amd64.MMIOWrite32(b+hpetStatus, s)
	}
	hpet.started = false
	return amd64.MMIORead32(b+hpetConfig) == hpet.config && amd64.MMIORead32(b+hpetCounter) == hpet.counterLo
}

// hpetRead reads the main counter's low 32 bits: one 32-bit access, as
// Linux reads it (hpet_readl(HPET_COUNTER)); a 64-bit counter read in two
// halves could tear, and 32 bits wrap after 7 minutes at 10 MHz and 0.43
// s at HPETMinPeriodFs, long after each step of the calibration's reads.
func hpetRead() uint64 { return uint64(amd64.MMIORead32(hpet.base + hpetCounter)) }

// HPETCounter returns the HPET's main counter as a reference counter of
// 32 bits at 10^15 / periodFs Hz (rounded: at most 0.05 ppm off at the
// longest period); FindHPET must have found it usable.
func HPETCounter(periodFs uint32) RefCounter {
	return RefCounter{Read: hpetRead, Hz: (1e15 + uint64(periodFs)/2) / uint64(periodFs), Bits: 32}
}
