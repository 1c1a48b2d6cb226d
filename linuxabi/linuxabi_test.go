package linuxabi_test

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/linuxabi"
)

// constants returns every package-level constant of linuxabi whose name
// matches re, with its value, type-checked from the package's source for
// the GOARCH under test: the tests compare the whole set, so that a
// constant added without its check fails.
func constants(t *testing.T, re *regexp.Regexp) map[string]uint64 {
	t.Helper()
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	conf := types.Config{Importer: unsafeOnly{}}
	tp, err := conf.Check("linuxabi", fset, files, nil)
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, name := range tp.Scope().Names() {
		c, ok := tp.Scope().Lookup(name).(*types.Const)
		if !ok || !re.MatchString(name) {
			continue
		}
		v, exact := constant.Uint64Val(c.Val())
		require.True(t, exact, "%s", name)
		out[name] = v
	}
	require.NotEmpty(t, out, "no constant matches %v", re)
	return out
}

// unsafeOnly imports package unsafe, the only one linuxabi may import.
type unsafeOnly struct{}

func (unsafeOnly) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	return nil, fmt.Errorf("linuxabi imports %s: it must import nothing but unsafe", path)
}

// compare checks that ours (linuxabi's constants, by name) and theirs
// (x/sys/unix's, by linuxabi's name) hold the same names and values.
func compare(t *testing.T, ours, theirs map[string]uint64) {
	t.Helper()
	for name, v := range ours {
		w, ok := theirs[name]
		if assert.True(t, ok, "%s has no golang.org/x/sys counterpart in the test", name) {
			assert.Equal(t, w, v, "%s", name)
		}
	}
	for name := range theirs {
		_, ok := ours[name]
		assert.True(t, ok, "the test checks %s, which linuxabi does not define", name)
	}
}

var (
	errnoName   = regexp.MustCompile(`^E[A-Z0-9]+$`)
	sys64Name   = regexp.MustCompile(`^SYS_[a-z]`)
	sysIA32Name = regexp.MustCompile(`^SYS_ia32_`)
	ptilabName  = regexp.MustCompile(`ptilab`)
)

// linuxNames drops ptilab's own numbers from cs.
func linuxNames(cs map[string]uint64) map[string]uint64 {
	for name := range cs {
		if ptilabName.MatchString(name) {
			delete(cs, name)
		}
	}
	return cs
}

// TestSyscallName checks the generated names against the x86-64
// constants: SYS_x is named x.
func TestSyscallName(t *testing.T) {
	for name, nr := range linuxNames(constants(t, sys64Name)) {
		if sysIA32Name.MatchString(name) {
			continue
		}
		assert.Equal(t, strings.TrimPrefix(name, "SYS_"), linuxabi.SyscallName(nr), "%s", name)
	}
	assert.Equal(t, "mmap", linuxabi.SyscallName(linuxabi.SYS_mmap))
	assert.Equal(t, "epoll_pwait", linuxabi.SyscallName(linuxabi.SYS_epoll_pwait))
	assert.Equal(t, "rt_sigpending", linuxabi.SyscallName(linuxabi.SYS_ptilab_work), "the Linux call ptilab's work call shadows")
	assert.Equal(t, "?", linuxabi.SyscallName(100000))
	assert.Equal(t, "?", linuxabi.SyscallName(linuxabi.SYS_ptilab_fault))
}

// field is a struct field's name and offset.
type field struct {
	Name   string
	Offset uintptr
}

// fields lists the fields of struct type t with their offsets, names
// normalized to pt_regs' (lower case, without the e/r/x register-width
// prefixes ptrace's struct user_regs_struct gives them).
func fields(t reflect.Type, n int) []field {
	var fs []field
	for i := 0; i < n; i++ {
		f := t.Field(i)
		fs = append(fs, field{ptRegsName(f.Name), f.Offset})
	}
	return fs
}

// ptRegsName maps a field name of PtRegs, PtRegs32 or x/sys/unix's
// PtraceRegs to pt_regs' (arch/x86/include/asm/ptrace.h).
func ptRegsName(s string) string {
	s = strings.ToLower(strings.ReplaceAll(s, "_", ""))
	switch s {
	case "origax", "origrax", "origeax":
		return "orig_ax"
	case "eflags":
		return "flags"
	}
	if len(s) == 3 && (s[0] == 'r' || s[0] == 'e' || s[0] == 'x') && s[1] != '1' && s[1] != '8' && s[1] != '9' {
		return s[1:] // rbp, ebx, xds, xcs ...
	}
	return s
}
