// Package blob32 builds ptilab's 32-bit kernel (i386pae/kernel32) and cuts
// its text out of the executable, with the text of package tasks/core,
// the tasks kernel's core, which it runs: the bytes package i386pae
// embeds (kernel32.bin) and the offset of each routine in them
// (kernel32_sym.go). i386pae/mkblob writes the two files; a test of
// package i386pae checks that they match a fresh build.
package blob32

import (
	"bytes"
	"debug/elf"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Package is the 32-bit kernel's import path.
const Package = "github.com/ptilab/ptilab/i386pae/kernel32"

// Core is the import path of the tasks kernel's core, whose text the
// linker places just before package main's (it is a dependency) and the
// blob holds too.
const Core = "github.com/ptilab/ptilab/tasks/core"

// LinkAddress is where the executable is linked (-T). The text is
// position-independent, so the address shows only in the executable.
const LinkAddress = 0x01000000

// Symbol is a routine of the blob: its name in package kernel32, or
// "core." and its name in package tasks/core, its offset in the blob and
// its size in bytes (without the linker's INT3 padding to the next
// routine).
type Symbol struct {
	Name         string
	Offset, Size uint32
}

// Blob is the 32-bit kernel's text and its routines in address order,
// and the Go toolchain that built it (go env GOVERSION): the bytes of the
// tasks kernel's Go code depend on the compiler's version.
type Blob struct {
	Text      []byte
	Symbols   []Symbol
	GoVersion string
}

// last is the routine the blob runs to; it runs from the first routine
// of package tasks/core (or of package main, should core have none): the
// core's Go code, then package main's, main.main (go:nosplit, which only
// calls routines of the blob) and the tasks kernel, then the assembly.
const last = "userTextEnd"

// Build builds package kernel32 for GOOS=linux GOARCH=386 with the go
// command in the module at root, linked at LinkAddress, and returns its
// blob.
func Build(root string) (Blob, error) { return BuildAt(root, LinkAddress) }

// BuildAt is Build with the executable linked at addr: a test builds the
// blob at two addresses to show that its bytes do not depend on it.
func BuildAt(root string, addr uint64) (Blob, error) {
	dir, err := os.MkdirTemp("", "kernel32")
	if err != nil {
		return Blob{}, err
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, "kernel32")
	// -B: no bounds checks, which would call the runtime's panics; for
	// kernel32 and core, whose text the blob holds.
	cmd := exec.Command("go", "build", "-trimpath", "-gcflags="+Package+"=-B", "-gcflags="+Core+"=-B", "-o", exe, "-ldflags", fmt.Sprintf("-T %#x", addr), Package)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=386", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return Blob{}, fmt.Errorf("building %s for 386: %v\n%s", Package, err, out)
	}
	b, err := Extract(exe)
	if err != nil {
		return b, err
	}
	v := exec.Command("go", "env", "GOVERSION")
	v.Dir = root
	out, err := v.Output()
	if err != nil {
		return b, fmt.Errorf("go env GOVERSION: %v", err)
	}
	b.GoVersion = strings.TrimSpace(string(out))
	return b, nil
}

// Extract cuts the blob out of the kernel32 executable at path: the bytes
// from the first routine of package tasks/core (or main) to the end of
// routine last, which must be contiguous text of those two packages
// only.
func Extract(path string) (Blob, error) {
	f, err := elf.Open(path)
	if err != nil {
		return Blob{}, err
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS32 || f.Machine != elf.EM_386 {
		return Blob{}, fmt.Errorf("%s: not a 32-bit x86 executable", path)
	}
	syms, err := f.Symbols()
	if err != nil {
		return Blob{}, err
	}
	text := f.Section(".text")
	if text == nil {
		return Blob{}, fmt.Errorf("%s: no .text", path)
	}
	var ts []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value >= text.Addr && s.Value < text.Addr+text.Size {
			ts = append(ts, s)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Value < ts[j].Value })
	start, end := -1, -1
	for i, s := range ts {
		_, ok := blobName(s.Name)
		switch {
		case s.Name == "main."+last:
			end = i
		case start < 0 && ok:
			start = i
		}
	}
	if start < 0 || end < start {
		return Blob{}, fmt.Errorf("%s: no routines of package tasks/core or main up to %s", path, last)
	}
	base := ts[start].Value
	var b Blob
	for _, s := range ts[start : end+1] {
		name, ok := blobName(s.Name)
		if !ok {
			return Blob{}, fmt.Errorf("%s: %s lies inside the blob", path, s.Name)
		}
		b.Symbols = append(b.Symbols, Symbol{Name: name, Offset: uint32(s.Value - base), Size: uint32(s.Size)})
	}
	lastSym := ts[end]
	data, err := text.Data()
	if err != nil {
		return Blob{}, err
	}
	b.Text = data[base-text.Addr : lastSym.Value+lastSym.Size-text.Addr]
	return b, nil
}

// blobName returns the blob's name of the executable's routine sym: a
// routine of package main without the package, one of package tasks/core
// as core.Name (core.(*Kernel).Next); false for a routine of another
// package, or a closure or wrapper (a name with a dot or a middle dot
// more).
func blobName(sym string) (string, bool) {
	if name, ok := strings.CutPrefix(sym, "main."); ok {
		return name, !strings.ContainsAny(name, ".·")
	}
	if name, ok := strings.CutPrefix(sym, Core+"."); ok {
		method, _ := strings.CutPrefix(name, "(*Kernel).")
		return "core." + name, !strings.ContainsAny(method, ".·")
	}
	return "", false
}

// Source returns the Go file that records b's routines for package
// i386pae: a constant per routine of package main (off + its name with
// the first letter upper-case) and the table blobSymbols, which has
// package core's too.
func (b Blob) Source() []byte {
	var w bytes.Buffer
	fmt.Fprintf(&w, "// Code generated by i386pae/mkblob from packages kernel32 and tasks/core; DO NOT EDIT.\n\npackage i386pae\n\n")
	fmt.Fprintf(&w, "// Offsets of the 32-bit kernel's routines in kernel32.bin.\nconst (\n")
	for _, s := range b.Symbols {
		if !strings.HasPrefix(s.Name, "core.") {
			fmt.Fprintf(&w, "\toff%s = %#x\n", strings.ToUpper(s.Name[:1])+s.Name[1:], s.Offset)
		}
	}
	fmt.Fprintf(&w, ")\n\n// blobSize is the length of kernel32.bin.\nconst blobSize = %#x\n\n", len(b.Text))
	fmt.Fprintf(&w, "// blobGoVersion is the Go toolchain that built kernel32.bin.\nconst blobGoVersion = %q\n\n", b.GoVersion)
	fmt.Fprintf(&w, "// blobSymbols are the routines of kernel32.bin in address order: name, offset, size in bytes.\nvar blobSymbols = [...]blobSymbol{\n")
	for _, s := range b.Symbols {
		fmt.Fprintf(&w, "\t{%q, %#x, %d},\n", s.Name, s.Offset, s.Size)
	}
	fmt.Fprintf(&w, "}\n")
	src, err := format.Source(w.Bytes())
	if err != nil {
		panic(err) // the generator's own output
	}
	return src
}
