package pti

import "github.com/ptilab/ptilab/amd64"

// The local APIC in xAPIC mode (SDM Vol. 3A, "Advanced Programmable
// Interrupt Controller"): IA32_APIC_BASE[35:12] is its register page, at
// 0FEE00000H after reset, below 4 GiB, where the kernel's identity map
// reaches it; the registers the self-NMI uses, and its ICR low word.
const (
	msrAPICBase    = 0x1b
	apicID         = 0x20  // APIC ID register: the ID in bits 31:24
	apicICRLow     = 0x300 // interrupt command register, bits 31:0 (the write sends)
	apicICRHigh    = 0x310 // bits 63:32: the destination in bits 31:24 (56:63)
	apicDMNMI      = 4 << 8
	apicLevel      = 1 << 14
	apicICRSelfNMI = apicDMNMI | apicLevel // physical destination, no shorthand
	apicICRBusyBit = 12                    // delivery status: 1 send pending
	// IA32_APIC_BASE's enable (EN) and x2APIC mode (EXTD) bits: the
	// xAPIC's MMIO page answers only with EN set and EXTD clear.
	apicBaseEN   = 1 << 11
	apicBaseEXTD = 1 << 10
	// ring3NMISpin is the PAUSEs userSelfNMI waits after each NMI sent.
	ring3NMISpin = 1000
)

// apicBase returns the local APIC's register page from IA32_APIC_BASE.
func apicBase() uint64 { return amd64.RDMSR(msrAPICBase) &^ 0xfff & (1<<36 - 1) }
