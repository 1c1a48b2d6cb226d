package pti

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/tlb"
)

// env is the one CPU's entry area, the routines copied into it, the code
// pages every process shares and the processes' address-space ids.
var env struct {
	ready bool
	// nonsensitive is the asi modes' nonsensitive kernel table (asi.go).
	nonsensitive Nonsensitive
	entry        uint64         // physical address of the entry area's EntryPages frames
	code         uint64         // physical address of the code pages every process shares
	link         entryRoutines  // where the entry routines are linked
	text         entryRoutines  // where they were copied, in the entry text
	kern         kernelRoutines // the kernel routines (they run where linked)
	progs        programTable   // where each program starts, in every process
	copied       []Copied       // what Setup copied
	main         *Process       // the process of single-task runs (Exec)
	ktext        tlb.KernelText // the kernel text's pages
	nasid        uint16         // address-space ids handed out

	recoverRIP, recoverMax uint64 // the next run's fault recovery (StartRecovering)
	sensitiveSecret        uint64 // the sensitive secret's frame (oracle.go)
	// The deferred modes' routines, where they were copied.
	deferText deferRoutines
	noSwitch  noSwitchRoutines
	// The FRED trampolines' pages (fred.go), where each was copied.
	fredText fredRoutines
	// A lass run's handlers (lass.go), where they were copied, and each
	// kernel handler's copy.
	lass     lassRoutines
	lassCopy map[uint64]uint64
}

// entryEnd is the marker at the end of every copied routine and program.
var entryEnd = binary.LittleEndian.AppendUint64(nil, amd64.EndMarker)

// code returns the bytes of the routine at addr: up to and including the
// UD2 of its end marker.
func code(addr uint64) ([]byte, error) {
	b := efi.Bytes(addr, 4096)
	i := bytes.Index(b, entryEnd)
	if i < 0 {
		return nil, fmt.Errorf("no end marker within 4 KiB of %#x", addr)
	}
	return b[:i+2], nil
}

// Copied is a routine or a program that Setup copied out of the image:
// its name (its field's in entryRoutines or programTable), where it is
// linked, where it runs (in the entry text or, for a program, in every
// process's code pages) and its size in bytes (up to and including the
// UD2 of its end marker).
type Copied struct {
	Name     string
	Link, At uint64
	Size     int
}

func (c Copied) String() string {
	return fmt.Sprintf("%s: %d bytes at %#x (linked at %#x)", c.Name, c.Size, c.At, c.Link)
}

// place copies the routines whose link addresses are the fields of link
// (a pointer to a struct of uint64s, one per routine) into dst, at 64-byte
// aligned offsets, sets the same fields of at to where each landed (base
// plus its offset) and lists each in env.copied. It returns the offset
// after the last one; what names dst in errors.
func place(link, at any, dst []byte, base uint64, what string) (int, error) {
	lv, av := reflect.ValueOf(link).Elem(), reflect.ValueOf(at).Elem()
	first := len(env.copied)
	off := 0
	for i := range lv.NumField() {
		name, addr := lv.Type().Field(i).Name, lv.Field(i).Uint()
		c, err := code(addr)
		if err != nil {
			return 0, fmt.Errorf("pti: %s: %w", name, err)
		}
		if off+len(c) > len(dst) {
			return 0, fmt.Errorf("pti: %s (%d bytes) does not fit in the %s (%d bytes) after %v", name, len(c), what, len(dst), env.copied[first:])
		}
		copy(dst[off:], c)
		av.Field(i).SetUint(base + uint64(off))
		env.copied = append(env.copied, Copied{Name: name, Link: addr, At: base + uint64(off), Size: len(c)})
		off = (off + len(c) + 63) &^ 63
	}
	return off, nil
}

// excStubs is the name env.copied gives the exception stubs.
const excStubs = "exception stubs"

// writeExcStubs writes the 32 exception entry stubs (amd64.ExceptionStub)
// at offset off of the entry text, each jumping to excCommon, and lists
// them; it returns their address.
func writeExcStubs(text []byte, off int) (uint64, error) {
	const size = 32 * amd64.ExceptionStubSize
	if off+size > len(text) {
		return 0, fmt.Errorf("pti: the %s (%d bytes) do not fit in the entry text (%d bytes) after %v", excStubs, size, len(text), env.copied)
	}
	at := EntryText + uint64(off)
	for v := range 32 {
		s := amd64.ExceptionStub(v, int(int64(env.text.ExcCommon-at)))
		copy(text[off+v*amd64.ExceptionStubSize:], s[:])
	}
	env.copied = append(env.copied, Copied{Name: excStubs, At: at, Size: size})
	return at, nil
}

func data() *entryData { return (*entryData)(efi.Pointer(EntryData)) }

// Setup allocates the entry area and the code pages, copies the entry
// routines (the trampolines, toUser, the exception entries) into the entry
// area's text and the ring-3 programs into the code pages (env.copied says
// what went where, for the errors), fills the entry area's IDT and system-call table, maps
// it into the kernel's own table (which the run's first and last
// instructions execute on) and makes the main process. Call it once; a
// second call does nothing.
func Setup() error {
	if env.ready {
		return nil
	}
	var ok bool
	alloc := func(pa *uint64, n uint64) {
		if ok {
			*pa, ok = goos.AllocFrames(n, amd64.PageSize)
		}
	}
	ok = true
	alloc(&env.entry, EntryPages+DeferPages+FREDPages+LASSPages) // the deferred modes' pages follow, then FRED's and lass's
	alloc(&env.code, UserCodePages)
	if !ok {
		return errors.New("pti: out of memory for the entry area and the code pages")
	}

	// The entry routines and the exception stubs into the entry text,
	// every program into the shared code pages.
	var progs programTable
	routines(&env.link, &env.kern, &progs)
	env.copied = nil
	text := goos.Frames(env.entry, EntryTextPages)
	end, err := place(&env.link, &env.text, text, EntryText, "entry text")
	if err != nil {
		return err
	}
	stubs, err := writeExcStubs(text, end)
	if err != nil {
		return err
	}
	if _, err := place(&progs, &env.progs, goos.Frames(env.code, UserCodePages), UserCode, "code pages"); err != nil {
		return err
	}
	// The routines with pages of their own: the deferred modes', the
	// FRED entry's and lass's.
	var pr pageRoutines
	pageRoutinesTable(&pr)
	if err := placeDeferred(&pr.Defer, &pr.NoSwitch); err != nil {
		return err
	}
	if err := placeFRED(&pr.FRED, pr.FredEvent); err != nil {
		return err
	}
	if err := placeLASS(&pr.LASS); err != nil {
		return err
	}

	// Map the entry area into the kernel's table: enterUser's first and
	// runExit's last instructions read its data with the kernel's CR3.
	kpt := goos.KernelTable()
	if !kpt.Map(EntryBase, env.entry, EntryPages*amd64.PageSize, amd64.PageSize, amd64.PTE_W) ||
		!kpt.Map(EntryFREDText, env.entry+(EntryFREDText-EntryBase), FREDPages*amd64.PageSize, amd64.PageSize, 0) {
		return errors.New("pti: out of memory mapping the entry area")
	}

	d := data()
	*d = entryData{}
	ResetSyscalls()
	// The system-call path runs on goos's kernel stack with goos's kernel
	// TLS, so that Go handlers (package tasks) run under its kernelG.
	d.TaskStackTop, d.RunFSBase = goos.KernelContext()
	d.ExitRun = env.kern.RunExit
	d.Secret = SecretAddr()
	d.VerwSel = amd64.KERNEL_DS
	specCaps = readSpecCaps()

	// The IDT of a run: every exception vector to its stub in the entry
	// text, the NMI to the NMI entry, on stacks in the entry area (mapped
	// in both tables): IST1 (the entry stack), and their own for #DF, NMI
	// and #MC.
	idt := (*[256]amd64.Gate)(efi.Pointer(EntryIDT))
	for v := 0; v < 32; v++ {
		ist, handler := uint8(1), stubs+amd64.ExceptionStubSize*uint64(v)
		switch v {
		case amd64.VectorDF:
			ist = 2
		case amd64.VectorNMI:
			ist, handler = 3, env.text.EntryNMI
		case amd64.VectorMC:
			ist = 4
		}
		idt[v] = amd64.InterruptGate(handler, amd64.KERNEL_CS, ist, 0, amd64.TypeInterruptGate)
	}
	d.NMICounter = amd64.NMICounterAddr()
	d.RunIDT.Limit, d.RunIDT.Base = 256*16-1, EntryIDT
	d.RunGDT.Limit, d.RunGDT.Base = amd64.GDT_ENTRIES*8-1, EntryDesc

	env.ktext = tlb.FindKernelText()
	if err := env.ktext.Split(); err != nil {
		return err
	}
	env.ready = true
	env.main, err = NewProcess()
	if err == nil {
		err = writeSecrets() // after the main process: its frames where they were
	}
	if err != nil {
		env.ready = false
		return err
	}
	return nil
}

// The run's GDT (Linux's layout, as the kernel's) and TSS, in the entry
// area's descriptor page: the GDT at its start, the TSS 128 bytes in.
const tssOffset = 128

// writeDescriptors writes the run's GDT and TSS (each run: the TSS
// descriptor's busy bit is set by LTR).
func writeDescriptors() {
	*(*[amd64.GDT_ENTRIES]uint64)(efi.Pointer(EntryDesc)) = amd64.GDT(EntryDesc + tssOffset)
	tss := (*amd64.TSS)(efi.Pointer(EntryDesc + tssOffset))
	*tss = amd64.TSS{}
	tss.SetRSP0(EntryStackTop)
	tss.SetIST(1, EntryStackTop)
	tss.SetIST(2, EntryISTDF)
	tss.SetIST(3, EntryISTNMI)
	tss.SetIST(4, EntryISTMC)
	tss.SetIOMapBase(amd64.TSSSize)
}
