package image

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/ptilab/ptilab/goos"
)

// The packages whose code runs in kernel mode: before the runtime starts,
// in the system-call handlers (the runtime's and the ring-3 tasks') and in
// exception handlers, under a g that has no m. Their code must not allocate, write heap pointers (write barriers),
// or start goroutines. Besides whole packages, the parts of cpustate
// the kernel's way out runs (goos's restoreMSRs: the registry of saved
// MSRs and the writers of its line and record).
var kernelPackages = []string{
	"github.com/ptilab/ptilab/goos.",
	"github.com/ptilab/ptilab/amd64.",
	"github.com/ptilab/ptilab/efi.",
	"github.com/ptilab/ptilab/board.",
	"github.com/ptilab/ptilab/tasks.",
	"github.com/ptilab/ptilab/tasks/core.",
	"github.com/ptilab/ptilab/linuxabi.",
	"github.com/usbarmory/tamago/soc/intel/uart.",
	"github.com/usbarmory/tamago/internal/reg.",
	"github.com/ptilab/ptilab/cpustate.(*SavedMSRs).Restore",
	"github.com/ptilab/ptilab/cpustate.WriteRestore",
	"github.com/ptilab/ptilab/cpustate.(*textBuf).",
}

// goroutineSide are functions of kernel packages that run in an ordinary
// goroutine and may use the runtime: the panic the kernel injects into a
// goroutine that took a CPU exception, and its error's text; the tasks
// kernel's run builder (tasks/run.go), which sets a run up before it
// starts.
var goroutineSide = regexp.MustCompile(`^github\.com/ptilab/ptilab/(goos\.(faultPanic|\(?\*?FaultError\)?\.Error)|tasks\.(NewRun|\(\*Run\)\.\w+)(-fm|\.func\d+)?)(\.abi0)?$`)

// kernelSafeRuntime are the runtime functions kernel code may call: memory
// moves, the stack-growth check's slow path (never taken: kernel stacks are
// sized for kernel code), the panics of failed bounds checks (which
// fault, and are reported as a kernel fault), and findfunc (a read-only
// lookup in the function tables, all inlined but for bounds-check panics:
// goos's fault path asks whether the faulting function switches stacks).
var kernelSafeRuntime = regexp.MustCompile(`^(runtime\.(findfunc|memmove|memclrNoHeapPointers|morestack|morestack_noctxt|duffzero|duffcopy|memequal(64|32|8|varlen)?|panic(Index|Slice|Bounds|divide|shift|overflow|unsafeslice|unsafestring)\w*|goPanic\w*|cmpstring)|internal/bytealg\.\w+|unicode/utf8\.\w+|math/bits\.\w+)(\.abi0)?$`)

// knownPanics are calls to runtime.gopanic that kernel code cannot reach,
// by caller (none today: board's UART code is its own, with bounded waits).
var knownPanics = map[string]string{}

// pointerWrapper matches the wrappers the compiler generates to put a
// value method in the pointer type's method set ((*T).M for func (T) M):
// they call runtime.panicwrap for a nil *T, and are reached only through
// interfaces, which kernel code does not call.
var pointerWrapper = regexp.MustCompile(`\.\(\*\w+\)\.\w+$`)

var built struct {
	elf string
	err error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ptilab-image-test")
	if err != nil {
		panic(err)
	}
	built.elf = filepath.Join(dir, "ptilab.elf")
	built.err = Build(context.Background(), "../..", built.elf, filepath.Join(dir, "ptilab.efi"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func openImage(t *testing.T) *elf.File {
	t.Helper()
	require.NoError(t, built.err)
	f, err := elf.Open(built.elf)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

type symtab struct {
	funcs []elf.Symbol // sorted by address
}

func (s *symtab) at(addr uint64) string {
	i := sort.Search(len(s.funcs), func(i int) bool { return s.funcs[i].Value > addr }) - 1
	if i < 0 || addr >= s.funcs[i].Value+s.funcs[i].Size {
		return "?"
	}
	return s.funcs[i].Name
}

func isKernel(name string) bool {
	for _, p := range kernelPackages {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

type image struct {
	st   symtab
	text *elf.Section
	code []byte
}

func loadImage(t *testing.T) *image {
	f := openImage(t)
	syms, err := f.Symbols()
	require.NoError(t, err)
	im := &image{text: f.Section(".text")}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			im.st.funcs = append(im.st.funcs, s)
		}
	}
	sort.Slice(im.st.funcs, func(i, j int) bool { return im.st.funcs[i].Value < im.st.funcs[j].Value })
	require.NotNil(t, im.text)
	im.code, err = im.text.Data()
	require.NoError(t, err)
	return im
}

// unsafeCalls decodes function s and returns its direct calls to functions
// kernel code must not call.
func (im *image) unsafeCalls(s elf.Symbol) []string {
	var bad []string
	body := im.code[s.Value-im.text.Addr : s.Value-im.text.Addr+s.Size]
	for off := 0; off < len(body); {
		inst, err := x86asm.Decode(body[off:], 64)
		if err != nil {
			off++ // padding or data in text: skip a byte
			continue
		}
		pc := s.Value + uint64(off)
		off += inst.Len
		if inst.Op != x86asm.CALL {
			continue
		}
		rel, ok := inst.Args[0].(x86asm.Rel)
		if !ok {
			continue // an indirect call: a func value or interface method
		}
		target := im.st.at(pc + uint64(inst.Len) + uint64(int64(rel)))
		if isKernel(target) && !goroutineSide.MatchString(target) || kernelSafeRuntime.MatchString(target) || knownPanics[s.Name] == target ||
			target == "runtime.panicwrap" && pointerWrapper.MatchString(s.Name) {
			continue
		}
		bad = append(bad, target)
	}
	return bad
}

// TestKernelCodeIsSafe decodes every function of the kernel packages in the
// built image and checks each direct call's target: another kernel
// function or a runtime function that needs no m (kernelSafeRuntime). A
// call to the allocator or a write barrier would crash kernel mode the
// first time it ran with the collector active.
func TestKernelCodeIsSafe(t *testing.T) {
	im := loadImage(t)
	checked := 0
	for _, s := range im.st.funcs {
		// runtime.findfunc is allowed (kernelSafeRuntime) because its own
		// calls are: checked with the kernel's.
		if (!isKernel(s.Name) || goroutineSide.MatchString(s.Name)) && s.Name != "runtime.findfunc" {
			continue
		}
		checked++
		for _, target := range im.unsafeCalls(s) {
			t.Errorf("kernel function %s calls %s", s.Name, target)
		}
	}
	assert.Greater(t, checked, 150, "the kernel packages' functions were found")
}

// TestSafetyCheckFindsAllocations runs the same check on code that does
// allocate and write pointers, outside the kernel: it must object.
func TestSafetyCheckFindsAllocations(t *testing.T) {
	im := loadImage(t)
	found := map[string]bool{}
	for _, s := range im.st.funcs {
		if s.Name == "github.com/ptilab/ptilab/bench.ParsePlan" || s.Name == "github.com/ptilab/ptilab/bench.(*Reporter).Check" {
			for _, target := range im.unsafeCalls(s) {
				found[target] = true
			}
		}
	}
	assert.True(t, found["runtime.growslice"] || found["runtime.newobject"] || found["runtime.mallocgc"], "allocations flagged: %v", found)
	assert.True(t, found["runtime.gcWriteBarrier2"] || found["runtime.gcWriteBarrier1"] || found["runtime.gcWriteBarrier3"] || found["runtime.gcWriteBarrier4"], "write barriers flagged: %v", found)
}

// TestKernelPackagesHaveNoInit checks that the kernel packages need no
// package initialization: their state is set up by boot, before the
// runtime runs package init functions, which would reset it.
func TestKernelPackagesHaveNoInit(t *testing.T) {
	f := openImage(t)
	syms, err := f.Symbols()
	require.NoError(t, err)
	for _, s := range syms {
		for _, p := range kernelPackages {
			if s.Name == p+"init" || strings.HasPrefix(s.Name, p+"init.") {
				t.Errorf("%s: kernel packages must initialize statically", s.Name)
			}
		}
	}
}

// TestImageLayout checks the link-time facts the kernel relies on: the entry
// point, the link base it reports faults against, and the syscall table
// laid out by the linker.
func TestImageLayout(t *testing.T) {
	f := openImage(t)
	assert.Equal(t, elf.ET_DYN, f.Type, "a position-independent executable")
	var first *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			first = p
			break
		}
	}
	require.NotNil(t, first)
	assert.Equal(t, uint64(goos.ELFLinkBase), first.Vaddr, "goos.ELFLinkBase is the first PT_LOAD")
	assert.Equal(t, uint64(TextAddress-0x1000), first.Vaddr)

	syms, err := f.Symbols()
	require.NoError(t, err)
	var entry uint64
	for _, s := range syms {
		if s.Name == EntrySymbol+".abi0" {
			entry = s.Value
		}
	}
	assert.Equal(t, entry, f.Entry, "the ELF entry is the assembly body of %s", EntrySymbol)
	for _, s := range syms {
		if s.Name == "github.com/ptilab/ptilab/goos.syscallTable" {
			sec := f.Sections[s.Section]
			assert.NotEqual(t, elf.SHT_NOBITS, sec.Type, "syscallTable is initialized data, not filled by code")
		}
	}
}
