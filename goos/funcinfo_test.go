package goos

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSPWrite checks funcHeader's layout against the toolchain that built
// the test: the assembly that switches stacks is flagged SPWRITE, ordinary
// Go code and assembly that keeps its frame are not.
func TestSPWrite(t *testing.T) {
	entry := syscallEntryPC() // MOVQ ·curThread(SB), SP
	require.Equal(t, "github.com/ptilab/ptilab/goos.syscallEntry", runtime.FuncForPC(uintptr(entry)).Name())
	assert.True(t, spWrite(entry), "syscallEntry")
	assert.True(t, spWrite(entry+8), "inside syscallEntry")

	panicPC := faultPanicPC()
	assert.False(t, spWrite(panicPC), "faultPanic (Go)")
	memory := uint64(reflect.ValueOf(Memory).Pointer())
	assert.False(t, spWrite(memory), "Memory (Go)")
	raw := uint64(reflect.ValueOf(rawSyscall).Pointer())
	assert.False(t, spWrite(raw), "rawSyscall (assembly with a frame)")
	assert.False(t, spWrite(0), "no function")

	// runtime.goexit, at the bottom of every goroutine's stack, has a
	// funcID of its own and the TopFrame flag (internal/abi: FuncFlagTopFrame
	// = 1): both bytes sit where funcHeader says.
	pcs := make(chan []uintptr)
	go func() {
		pc := make([]uintptr, 16)
		pcs <- pc[:runtime.Callers(0, pc)]
	}()
	stack := <-pcs
	goexit := stack[len(stack)-1]
	require.Equal(t, "runtime.goexit", runtime.FuncForPC(goexit).Name())
	f := findfunc(goexit)
	require.NotNil(t, f.fn)
	assert.NotZero(t, f.fn.funcID, "goexit's funcID")
	assert.Equal(t, uint8(1), f.fn.flag&1, "goexit is a top frame")
	assert.False(t, spWrite(uint64(goexit)))
	assert.Zero(t, findfunc(uintptr(entry)).fn.funcID, "syscallEntry is no special runtime function")
}
