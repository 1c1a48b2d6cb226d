package pti

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
)

// symbolOf returns the name of the function at pc, without the package
// path and ABI suffix.
func symbolOf(pc uint64) string {
	f := runtime.FuncForPC(uintptr(pc))
	if f == nil || f.Entry() != uintptr(pc) {
		return ""
	}
	name := strings.TrimSuffix(f.Name(), ".abi0")
	return name[strings.LastIndex(name, ".")+1:]
}

// checkTable checks that every field of table (a pointer to a struct of
// uint64s) holds the entry of the function named prefix + the field's name
// with its first letter in lower case (prefix empty) or as it is.
func checkTable(t *testing.T, table any, prefix string) {
	v := reflect.ValueOf(table).Elem()
	require.Positive(t, v.NumField())
	for i := range v.NumField() {
		f := v.Type().Field(i)
		want := prefix + f.Name
		if prefix == "" {
			want = strings.ToLower(f.Name[:1]) + f.Name[1:]
		}
		assert.Equal(t, want, symbolOf(v.Field(i).Uint()), "field %s", f.Name)
	}
}

// The assembly fills each table's fields by name (go_asm.h offsets): run
// the fillers here and check every field against the function it names.
// (host/image checks the same on the built image, from its symbols
// and DWARF.)
func TestRoutineTablesByName(t *testing.T) {
	var e entryRoutines
	var k kernelRoutines
	var p programTable
	routines(&e, &k, &p)
	checkTable(t, &e, "")
	checkTable(t, &k, "")
	checkTable(t, &p, "user")
}

// The trampoline table instantiates the model's rows: a trampoline for
// every entry, flavour and mode the model lets the 64-bit world run
// (experiment.Config.Check: Mode.In and Mode.Has, the entry's Flavours
// and Deferred), none for any other; those of the entry text each a
// different field of entryRoutines, the FRED entry's each a different
// field of fredRoutines (a page each). A flavour or mode without one is
// refused by Plan rather than run with another's.
func TestTrampolineTable(t *testing.T) {
	seen := map[trampoline]trampolineKey{}
	n := 0
	for _, e := range experiment.Entries(experiment.W64) {
		for _, f := range experiment.Flavours() {
			for _, m := range experiment.Modes() {
				k := trampolineKey{e, f, m}
				r, ok := trampolines[k]
				c := experiment.Config{World: experiment.W64, Mode: m, Entry: e, Flavour: f}
				assert.Equal(t, c.Check() == nil, ok, "%v/%v/%v", e, f, m)
				if !ok {
					continue
				}
				n++
				if r.deferred {
					continue // TestDeferredTrampolines
				}
				typ, prefix := reflect.TypeFor[entryRoutines](), "Sys"
				if r.fred {
					typ, prefix = reflect.TypeFor[fredRoutines](), "Fred"
				}
				assert.Equal(t, e == experiment.FRED, r.fred, "%v/%v/%v", e, f, m)
				field, ok := fieldAt(typ, r.off)
				require.True(t, ok, "%v/%v/%v: offset %d", e, f, m, r.off)
				assert.Contains(t, field.Name, prefix+strings.ToUpper(f.String()[:1])+f.String()[1:], "%v/%v/%v", e, f, m)
				prev, dup := seen[r]
				if m.Row().LASS {
					// lass runs off's trampoline (lass.go).
					assert.Equal(t, trampolineKey{e, f, experiment.Off}, prev, "%v/%v/%v", e, f, m)
					continue
				}
				assert.False(t, dup, "%v/%v/%v shares %s with %v", e, f, m, field.Name, prev)
				seen[r] = k
			}
		}
	}
	assert.Len(t, trampolines, n)
	beyond := experiment.Mode(len(experiment.Modes()))
	_, err := Plan(experiment.Config{World: experiment.W64, Mode: beyond})
	assert.ErrorIs(t, err, experiment.ErrNoTrampoline)
	assert.ErrorContains(t, err, "mode="+beyond.String())
	_, err = Plan(experiment.Config{World: experiment.W64, Flavour: experiment.Flavour(len(experiment.Flavours()))})
	assert.ErrorIs(t, err, experiment.ErrNoTrampoline)
	_, err = Plan(experiment.Config{World: experiment.W32, Entry: experiment.Sysenter})
	assert.ErrorIs(t, err, ErrUnsupported, "the 32-bit world's configurations are i386pae's")
}

func TestProgramNames(t *testing.T) {
	names := map[Program]string{Syscalls: "Syscalls", Empty: "Empty", Probe: "Probe", Ping: "Ping", Pong: "Pong",
		MsgStart: "MsgStart", MsgSender: "MsgSender", MsgReceiver: "MsgReceiver", OracleCal: "OracleCal", Oracle: "Oracle",
		Sweep: "Sweep", SelfNMI: "SelfNMI"}
	assert.Len(t, names, reflect.TypeFor[programTable]().NumField(), "every program is named")
	for p, name := range names {
		assert.Equal(t, name, p.String())
	}
	assert.Equal(t, "Program(3)", Program(3).String())
}

func TestResultNamesExitStatus(t *testing.T) {
	assert.Equal(t, "exit 0", Result{Reason: ReasonExit}.String())
	assert.Equal(t, "exit 2 (ping: read failed)", Result{Reason: ReasonExit, Status: pingReadFailed}.String())
	assert.Equal(t, "exit 9 (messaging receiver: read failed)", Result{Reason: ReasonExit, Status: msgReadFailed}.String())
	assert.Equal(t, "exit 42", Result{Reason: ReasonExit, Status: 42}.String())
}

// Setup writes the exception stubs after the entry routines; each jumps to
// the copied common path, wherever the two landed.
func TestWriteExcStubs(t *testing.T) {
	saved := env
	t.Cleanup(func() { env = saved })
	env.copied = nil
	env.text.ExcCommon = EntryText + 0x540
	text := make([]byte, EntryTextPages*4096)
	at, err := writeExcStubs(text, 0x600)
	require.NoError(t, err)
	assert.Equal(t, uint64(EntryText+0x600), at)
	for v := range 32 {
		stub := text[0x600+16*v:][:16]
		want := amd64.ExceptionStub(v, 0x540-0x600)
		assert.Equal(t, want[:], stub, "vector %d", v)
		rel := int32(binary.LittleEndian.Uint32(stub[5:]))
		assert.Equal(t, env.text.ExcCommon, uint64(int64(at)+int64(16*v+9)+int64(rel)), "vector %d's JMP", v)
	}
	assert.Equal(t, []Copied{{Name: "exception stubs", At: EntryText + 0x600, Size: 512}}, env.copied)
	_, err = writeExcStubs(text, len(text)-511)
	assert.ErrorContains(t, err, "pti: the exception stubs (512 bytes) do not fit in the entry text (8192 bytes)")
}
