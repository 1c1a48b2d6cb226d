package i386pae

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment/sites"
	"github.com/ptilab/ptilab/i386pae/layout"
	"github.com/ptilab/ptilab/pti"
)

// Entry is the way a task enters the 32-bit kernel.
type Entry uint8

const (
	// Sysenter: SYSENTER through the vsyscall routine (Linux's
	// __kernel_vsyscall), back by SYSEXIT.
	Sysenter Entry = layout.EntrySysenter
	// Int80: INT 0x80 through a DPL-3 interrupt gate, back by IRET.
	Int80 Entry = layout.EntryInt80
)

var entryNames = [...]string{Sysenter: "sysenter", Int80: "int80"}

func (e Entry) String() string {
	if int(e) < len(entryNames) {
		return entryNames[e]
	}
	return fmt.Sprintf("entry(%d)", e)
}

// Copy is how the linux trampolines copy pt_regs between the entry stack
// and the task stack.
type Copy uint8

const (
	// Movsl: REP MOVSL both ways, the 17 words of pt_regs (the default).
	Movsl Copy = layout.CopyMovsl
	// Movsb: REP MOVSB both ways, 68 bytes.
	Movsb Copy = layout.CopyMovsb
	// Trim: REP MOVSL in; out only EFLAGS and EAX, 8 bytes, as Linux's
	// SYSEXIT path (the other registers come from the task stack before
	// the CR3 switch).
	Trim Copy = layout.CopyTrim
	// Direct: no copy in (pt_regs built on the task stack after the CR3
	// switch), out as Trim: Linux's entry_SYSENTER_32 as merged in 4.19.
	// Its instrumented variant counts the frame's build as the copy in.
	Direct Copy = layout.CopyDirect
)

var copyNames = [...]string{Movsl: "movsl", Movsb: "movsb", Trim: "trim8", Direct: "direct"}

func (c Copy) String() string {
	if int(c) < len(copyNames) {
		return copyNames[c]
	}
	return fmt.Sprintf("copy(%d)", c)
}

// Config is one configuration of the 32-bit kernel a task runs under.
type Config struct {
	// Mode is pti.Off or pti.On; pti.OnPCID is not supported: PCIDs exist
	// only in IA-32e mode (SDM Vol. 3A, 4.10.1).
	Mode  pti.Mode
	Entry Entry
	// Flavour is pti.Minimal (the mechanism alone) or pti.Linux (pt_regs
	// built on the entry stack and copied to the task stack and back, as
	// Linux's x86_32 entry under PTI).
	Flavour pti.Flavour
	// Copy is the linux flavour's copy method; INT 0x80 has Movsl only.
	Copy Copy
	// Stamps selects the instrumented linux SYSENTER trampoline, which
	// sums the TSC cycles of each phase (layout.Phase*) in Result.Phases.
	Stamps bool
	// Global makes the entry area and the kernel text global pages
	// (PTE.G with CR4.PGE): their TLB entries survive CR3 writes.
	Global bool
	// Knobs are the mitigated flavour's speculation mitigations (pti.Mitigated,
	// SYSENTER with the Direct copy method only): those Linux's
	// entry_SYSENTER_32 has (Mitigations32).
	Knobs pti.Knobs
}

// Mitigations32 are the knobs of Linux's 32-bit entry
// (arch/x86/entry/entry_32.S, Linux 6.6): VERW before SYSEXIT and IRET
// (CLEAR_CPU_BUFFERS), the system call's indirect call through a
// retpoline thunk, and IBPB and RSB stuffing on a switch between
// processes (arch/x86/mm/tlb.c, __switch_to_asm). IBRS_ENTER/EXIT,
// clear_bhb_loop and the SWAPGS fence are entry_64.S's only.
var Mitigations32 = pti.KnobsOf(pti.VERW, pti.IBPB, pti.RSB, pti.Retpoline)

// ErrNotIn32BitEntry is returned for a knob Linux's 32-bit entry does not
// have (whatever the CPU).
var ErrNotIn32BitEntry = errors.New("not in 32-bit Linux's entry")

// notIn32 says which knob of k Linux's 32-bit entry lacks
// (ErrNotIn32BitEntry), whatever the CPU.
func notIn32(k pti.Knobs) error {
	for _, m := range k.List() {
		if !Mitigations32.Has(m) {
			return fmt.Errorf("%v: %w", m, ErrNotIn32BitEntry)
		}
	}
	return nil
}

// siteBits are the mitigated trampoline's sites for knobs k
// (layout.CPUData.Sites).
func siteBits(k pti.Knobs) uint32 {
	var s uint32
	if k.Has(pti.VERW) {
		s |= sites.SiteVERW
	}
	if k.Has(pti.Retpoline) {
		s |= sites.SiteRetpoline
	}
	if k.Has(pti.IBPB) {
		s |= sites.SiteIBPB
	}
	if k.Has(pti.RSB) {
		s |= sites.SiteRSB
	}
	return s
}

func (c Config) String() string {
	f := c.Flavour.String()
	if c.Flavour == pti.Mitigated {
		f += "/" + c.Knobs.String()
	}
	if c.Flavour == pti.Linux {
		f += "/" + c.Copy.String()
		if c.Stamps {
			f += "/stamps"
		}
	}
	return fmt.Sprintf("%v/%v/%s/%s", c.Mode, c.Entry, f, pti.GlobalName(c.Global))
}

// modeTrampolines are the blob offsets of one isolation mode's
// trampolines: the SYSENTER ones and the INT 0x80 gates' targets.
type modeTrampolines struct {
	sysenterMinimal, int80Minimal, int80Linux uint32
	// sysenterMitigated is the mitigated SYSENTER trampoline (the
	// direct one's with a site per knob); its INT 0x80 gate is the linux
	// flavour's.
	sysenterMitigated uint32
	// sysenterLinux are the linux SYSENTER trampolines by copy method,
	// plain and instrumented (Config.Stamps).
	sysenterLinux [4][2]uint32
}

// modes are the isolation modes of the 32-bit world: those it has
// trampolines for, and nothing else (Supported refuses any other mode).
// PAE has no PCID.
var modes = map[pti.Mode]modeTrampolines{
	pti.Off: {
		sysenterMinimal: offSysenterMinimalOff, int80Minimal: offInt80MinimalOff, int80Linux: offInt80LinuxOff,
		sysenterMitigated: offSysenterMitigatedOff,
		sysenterLinux: [4][2]uint32{
			Movsl:  {offSysenterLinuxMovslOff, offSysenterStampMovslOff},
			Movsb:  {offSysenterLinuxMovsbOff, offSysenterStampMovsbOff},
			Trim:   {offSysenterLinuxTrimOff, offSysenterStampTrimOff},
			Direct: {offSysenterLinuxDirectOff, offSysenterStampDirectOff},
		},
	},
	pti.On: {
		sysenterMinimal: offSysenterMinimalOn, int80Minimal: offInt80MinimalOn, int80Linux: offInt80LinuxOn,
		sysenterMitigated: offSysenterMitigatedOn,
		sysenterLinux: [4][2]uint32{
			Movsl:  {offSysenterLinuxMovslOn, offSysenterStampMovslOn},
			Movsb:  {offSysenterLinuxMovsbOn, offSysenterStampMovsbOn},
			Trim:   {offSysenterLinuxTrimOn, offSysenterStampTrimOn},
			Direct: {offSysenterLinuxDirectOn, offSysenterStampDirectOn},
		},
	},
}

// trampoline returns the blob offsets of c's SYSENTER trampoline and INT
// 0x80 gate target. c must be Supported.
func trampoline(c Config) (sysenter, int80 uint32) {
	m := modes[c.Mode]
	if c.Flavour == pti.Mitigated {
		return m.sysenterMitigated, m.int80Linux
	}
	if c.Flavour == pti.Linux {
		st := 0
		if c.Stamps {
			st = 1
		}
		return m.sysenterLinux[c.Copy][st], m.int80Linux
	}
	return m.sysenterMinimal, m.int80Minimal
}

// ErrNotInPAE is returned for a configuration PAE paging cannot have.
var ErrNotInPAE = errors.New("not in PAE")

// Supported reports whether the CPU can run c: its mode must be one of
// modes (a deferred mode or one with PCIDs is ErrNotInPAE), its entry, flavour and copy
// method ones the 32-bit kernel has, SYSENTER needs SEP and Global PGE.
// The mitigated flavour's knobs must be ones Linux's 32-bit entry has
// (else ErrNotIn32BitEntry, whatever the CPU), and ibpb needs
// IA32_PRED_CMD.
func Supported(c Config) error {
	if err := notIn32(c.Knobs); err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	_, known := modes[c.Mode]
	switch {
	case !known && c.Mode.Deferred():
		return fmt.Errorf("%v: isolation mode %v: %w (the deferred and no-switch trampolines are the 64-bit world's)", c, c.Mode, ErrNotInPAE)
	case !known && c.Mode.PCID():
		return fmt.Errorf("%v: PCID: %w (PCIDs exist only in IA-32e mode)", c, ErrNotInPAE)
	case !known:
		return fmt.Errorf("%v: isolation mode %v: %w (the 32-bit kernel has trampolines for %s)", c, c.Mode, ErrNotInPAE, modeList())
	case c.Entry == Sysenter && !amd64.Features.SEP:
		return fmt.Errorf("%v: SYSENTER: %w", c, pti.ErrUnsupported)
	case c.Global && !amd64.Features.PGE:
		return fmt.Errorf("%v: global pages: %w", c, pti.ErrUnsupported)
	case c.Copy > Direct || c.Flavour > pti.Mitigated || c.Entry > Int80:
		return fmt.Errorf("%v: no such trampoline", c)
	case c.Knobs != 0 && c.Flavour != pti.Mitigated:
		return fmt.Errorf("%v: mitigations %v need the mitigated flavour", c, c.Knobs)
	case c.Flavour == pti.Mitigated && (c.Entry != Sysenter || c.Copy != Direct || c.Stamps):
		return fmt.Errorf("%v: the mitigated trampoline is SYSENTER's with the direct copy method, without stamps", c)
	case c.Flavour == pti.Mitigated && c.Knobs.Has(pti.IBPB) && !amd64.Features.PredCmd:
		return fmt.Errorf("%v: ibpb: no IA32_PRED_CMD (CPUID.(EAX=07H,ECX=0):EDX[26]): %w", c, pti.ErrUnsupported)
	case c.Flavour == pti.Minimal && (c.Copy != Movsl || c.Stamps),
		c.Entry == Int80 && (c.Copy != Movsl || c.Stamps):
		return fmt.Errorf("%v: copy methods and stamps are the linux SYSENTER trampoline's", c)
	}
	return nil
}

// modeList names the modes of the 32-bit world, in order.
func modeList() string {
	names := make([]string, 0, len(modes))
	for m := range modes {
		names = append(names, m.String())
	}
	slices.Sort(names)
	return strings.Join(names, " and ")
}
