//go:build ptilab_selfnmi

package pti

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
)

// selfNMI makes getppid send this CPU an NMI (sysSelfNMI), in test images
// only (host/image.Build's tags): the test that counts NMIs under an
// entry whose NMI path nothing else reaches, FRED's under Bochs, which
// has no monitor to inject one (test/bochs_test.go, TestBochsFREDNMI).
const selfNMI = true

// selfNMIPage is where MapAPIC maps the local APIC's registers in a
// process's user slot: clear of its code, data, stack and the sweep
// regions (tlb.SweepUser4KOffset and beyond).
const selfNMIPage = UserBase + 0x20000000

// MapAPIC maps the local APIC's register page (xAPIC) user-accessible,
// writable and uncached (PCD, PWT) into p's user slot under c, shared by
// its kernel and user sides, so that ring 3 can send its CPU an NMI
// (program SelfNMI): an NMI that interrupts ring 3, on the user side's
// CR3 under isolation, which no emulator can inject on demand (Bochs has
// no monitor). Test images only: a real kernel never gives ring 3 the
// APIC. It returns the ICR low word's user address and the value for the
// ICR high word (this CPU's APIC ID in bits 31:24).
func (p *Process) MapAPIC(c experiment.Config) (icr uint64, dest uint32, err error) {
	sp, err := p.space(c.Mode, c.Global)
	if err != nil {
		return 0, 0, err
	}
	if b := amd64.RDMSR(msrAPICBase); b&apicBaseEN == 0 || b&apicBaseEXTD != 0 {
		return 0, 0, fmt.Errorf("%w: the local APIC is disabled or in x2APIC mode (IA32_APIC_BASE %#x): no xAPIC page to map", ErrUnsupported, b)
	}
	base := apicBase()
	nxMask, _ := amd64.LeafBits(amd64.Features.NX, false)
	pt := amd64.PageTable[goos.PhysTables]{Root: sp.KernelRoot, Mem: goos.PhysTables{}}
	flags := (amd64.PTE_U | amd64.PTE_W | amd64.PTE_PCD | amd64.PTE_PWT | amd64.PTE_NX) & nxMask
	if !pt.Map(selfNMIPage, base, amd64.PageSize, amd64.PageSize, flags) {
		return 0, 0, errors.New("pti: out of memory for the APIC's page tables")
	}
	// The process's PCIDs hold no entry for the page yet: each run's
	// enterUser toggles CR4.PGE, which flushes every PCID (SDM Vol. 3A,
	// 4.10.4.1); this INVLPG is for the Go world's own.
	amd64.INVLPG(uintptr(selfNMIPage))
	return selfNMIPage + apicICRLow, amd64.MMIORead32(uintptr(base + apicID)), nil
}
