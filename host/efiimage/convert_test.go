package efiimage

import (
	"bytes"
	"debug/elf"
	"debug/pe"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeBlocks parses PE base-relocation blocks, independently of
// BaseRelocBlocks, and returns the RVAs of their DIR64 entries in order. It
// fails the test on a malformed block, a non-DIR64 entry other than the one
// trailing ABSOLUTE pad, or a block size that is not a multiple of 4.
func decodeBlocks(t *testing.T, b []byte) []uint32 {
	t.Helper()
	var rvas []uint32
	r := bytes.NewReader(b)
	for r.Len() > 0 {
		var hdr struct{ Page, Size uint32 }
		require.NoError(t, binary.Read(r, binary.LittleEndian, &hdr))
		require.Zero(t, hdr.Page%4096, "page RVA %#x not page aligned", hdr.Page)
		require.Zero(t, hdr.Size%4, "block size %d not a multiple of 4", hdr.Size)
		require.GreaterOrEqual(t, hdr.Size, uint32(12))
		entries := make([]uint16, (hdr.Size-8)/2)
		require.NoError(t, binary.Read(r, binary.LittleEndian, entries))
		for i, e := range entries {
			if e>>12 == 0 {
				require.Equal(t, len(entries)-1, i, "ABSOLUTE entry only as trailing pad")
				require.Zero(t, e&0xfff)
				continue
			}
			require.Equal(t, uint16(10), e>>12, "entry %#04x is not DIR64", e)
			rvas = append(rvas, hdr.Page+uint32(e&0xfff))
		}
	}
	return rvas
}

// buildPIE builds a small Go program as a Linux x86-64 PIE with internal
// linking and returns the ELF's path.
func buildPIE(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module pie\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main

import "fmt"

var table = []*string{&a, &b}

var a, b = "a", "b"

func main() { fmt.Println(*table[0], *table[1]) }
`), 0o644))
	out := filepath.Join(dir, "pie.elf")
	cmd := exec.Command("go", "build", "-buildmode=pie", "-ldflags=-linkmode=internal", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOWORK=off", "GOFLAGS=-buildvcs=false")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", msg)
	return out
}

// elfRelocs returns the offsets and addends of the ELF's dynamic
// relocations, read with debug/elf's own Rela64 layout.
func elfRelocs(t *testing.T, path string) (offsets []uint64, addends map[uint64]uint64) {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	addends = map[uint64]uint64{}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA {
			continue
		}
		data, err := s.Data()
		require.NoError(t, err)
		relas := make([]elf.Rela64, len(data)/24)
		require.NoError(t, binary.Read(bytes.NewReader(data), binary.LittleEndian, relas))
		for _, r := range relas {
			require.Equal(t, elf.R_X86_64_RELATIVE, elf.R_X86_64(elf.R_TYPE64(r.Info)))
			offsets = append(offsets, r.Off)
			addends[r.Off] = uint64(r.Addend)
		}
	}
	return offsets, addends
}

func TestConvertRoundTrip(t *testing.T) {
	elfPath := buildPIE(t)
	efiPath := filepath.Join(t.TempDir(), "out.efi")
	require.NoError(t, Convert(elfPath, efiPath))

	offsets, addends := elfRelocs(t, elfPath)
	require.NotEmpty(t, offsets)
	base, rvas, err := Relocations(elfPath)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x400000), base)
	assert.Len(t, rvas, len(offsets))

	ef, err := elf.Open(elfPath)
	require.NoError(t, err)
	defer ef.Close()
	pf, err := pe.Open(efiPath)
	require.NoError(t, err)
	defer pf.Close()

	assert.Equal(t, uint16(pe.IMAGE_FILE_MACHINE_AMD64), pf.Machine)
	assert.Zero(t, pf.Characteristics&pe.IMAGE_FILE_RELOCS_STRIPPED, "RELOCS_STRIPPED must be clear")
	oh, ok := pf.OptionalHeader.(*pe.OptionalHeader64)
	require.True(t, ok, "PE32+ optional header")
	assert.Equal(t, uint16(0x20b), oh.Magic)
	assert.Equal(t, uint16(pe.IMAGE_SUBSYSTEM_EFI_APPLICATION), oh.Subsystem)
	assert.Equal(t, base, oh.ImageBase)
	assert.Equal(t, ef.Entry-base, uint64(oh.AddressOfEntryPoint))

	reloc := pf.Section(".reloc")
	require.NotNil(t, reloc)
	dd := oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_BASERELOC]
	assert.Equal(t, reloc.VirtualAddress, dd.VirtualAddress)
	assert.Equal(t, len(BaseRelocBlocks(rvas)), int(dd.Size))
	assert.Zero(t, reloc.VirtualAddress%4096)
	raw, err := reloc.Data()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(raw), int(dd.Size))
	decoded := decodeBlocks(t, raw[:dd.Size])

	var want []uint32
	for _, off := range offsets {
		want = append(want, uint32(off-base))
	}
	assert.ElementsMatch(t, want, decoded, "decoded .reloc must give back the ELF relocation offsets")

	// Every relocated quadword in the PE holds the link-time value, so
	// adding the load delta yields the run-time address.
	for _, rva := range decoded {
		b, err := readRVA(pf, rva, 8)
		require.NoError(t, err)
		assert.Equal(t, addends[base+uint64(rva)], binary.LittleEndian.Uint64(b), "RVA %#x", rva)
	}
	// .tbss, .interp and the notes are gone, debug info is stripped.
	for _, s := range pf.Sections {
		assert.NotContains(t, []string{".tbss", ".interp", ".note.go.buildid", ".debug_info"}, s.Name)
	}
}

func TestConvertRejectsNonPIE(t *testing.T) {
	path := writeELF(t, elf.ET_EXEC, []uint64{synthBase}, []elf.Rela64{relative(0, synthBase)})
	out := filepath.Join(t.TempDir(), "out.efi")
	err := Convert(path, out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-buildmode=pie")
	assert.NoFileExists(t, out)
}
