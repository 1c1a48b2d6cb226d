package efiimage

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Layout of the synthetic ELF written by writeELF.
const (
	synthBase     = 0x400000
	synthDataOff  = 0x100 // file offset and RVA of the 0x100-byte .data section
	synthRelaOff  = 0x200 // file offset and RVA of .rela
	synthBSSBytes = 0x1000
)

// writeELF writes a minimal x86-64 ET_DYN ELF to a temp file: one PT_LOAD
// at synthBase mapping the whole file (plus synthBSSBytes of zero fill), a
// .data section whose 8-byte words are given by words, and a .rela section
// holding relas. It returns the file's path.
func writeELF(t *testing.T, typ elf.Type, words []uint64, relas []elf.Rela64) string {
	t.Helper()
	le := binary.LittleEndian
	var data [0x100]byte
	for i, w := range words {
		le.PutUint64(data[8*i:], w)
	}
	var rela bytes.Buffer
	require.NoError(t, binary.Write(&rela, le, relas))
	shstr := []byte("\x00.data\x00.rela\x00.shstrtab\x00")
	shstrOff := synthRelaOff + rela.Len()
	shOff := (shstrOff + len(shstr) + 7) &^ 7
	fileEnd := uint64(shstrOff + len(shstr))

	var buf bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(typ), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Entry: synthBase + synthDataOff, Phoff: 64, Shoff: uint64(shOff),
		Ehsize: 64, Phentsize: 56, Phnum: 1, Shentsize: 64, Shnum: 4, Shstrndx: 3,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	require.NoError(t, binary.Write(&buf, le, hdr))
	require.NoError(t, binary.Write(&buf, le, elf.Prog64{
		Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_W),
		Vaddr: synthBase, Paddr: synthBase, Filesz: fileEnd, Memsz: fileEnd + synthBSSBytes, Align: 0x1000,
	}))
	buf.Write(make([]byte, synthDataOff-buf.Len()))
	buf.Write(data[:])
	buf.Write(rela.Bytes())
	buf.Write(shstr)
	buf.Write(make([]byte, shOff-buf.Len()))
	sections := []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Flags: uint64(elf.SHF_ALLOC | elf.SHF_WRITE),
			Addr: synthBase + synthDataOff, Off: synthDataOff, Size: 0x100, Addralign: 8},
		{Name: 7, Type: uint32(elf.SHT_RELA), Flags: uint64(elf.SHF_ALLOC),
			Addr: synthBase + synthRelaOff, Off: synthRelaOff, Size: uint64(rela.Len()), Addralign: 8, Entsize: 24},
		{Name: 13, Type: uint32(elf.SHT_STRTAB), Off: uint64(shstrOff), Size: uint64(len(shstr)), Addralign: 1},
	}
	require.NoError(t, binary.Write(&buf, le, sections))

	path := filepath.Join(t.TempDir(), "synth.elf")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// relative returns an R_X86_64_RELATIVE entry patching the .data word at
// index i with addend.
func relative(i int, addend uint64) elf.Rela64 {
	return elf.Rela64{Off: synthBase + synthDataOff + 8*uint64(i), Info: uint64(elf.R_X86_64_RELATIVE), Addend: int64(addend)}
}

func TestRelocationsSynthetic(t *testing.T) {
	words := []uint64{synthBase + 0x10, 0, synthBase + 0x20, synthBase + 0x30}
	path := writeELF(t, elf.ET_DYN, words, []elf.Rela64{relative(3, words[3]), relative(0, words[0]), relative(2, words[2])})
	base, rvas, err := Relocations(path)
	require.NoError(t, err)
	assert.Equal(t, uint64(synthBase), base)
	assert.Equal(t, []uint32{synthDataOff, synthDataOff + 16, synthDataOff + 24}, rvas, "sorted RVAs")
}

func TestRelocationsRejects(t *testing.T) {
	words := []uint64{synthBase + 0x10, synthBase + 0x20}
	tests := []struct {
		name  string
		typ   elf.Type
		relas []elf.Rela64
		want  string
	}{
		{"not PIE", elf.ET_EXEC, []elf.Rela64{relative(0, words[0])}, "want ET_DYN"},
		{"other type", elf.ET_DYN, []elf.Rela64{relative(0, words[0]), {Off: synthBase + synthDataOff + 8, Info: uint64(elf.R_X86_64_64), Addend: int64(words[1])}}, "R_X86_64_64"},
		{"addend not in data", elf.ET_DYN, []elf.Rela64{relative(0, words[0]), relative(1, 0x1234)}, "holds 0x400020, want the addend 0x1234"},
		{"duplicate", elf.ET_DYN, []elf.Rela64{relative(1, words[1]), relative(1, words[1])}, "two relocations"},
		{"target in bss", elf.ET_DYN, []elf.Rela64{{Off: synthBase + 0x800, Info: uint64(elf.R_X86_64_RELATIVE)}}, "not in the file-backed part"},
		{"below base", elf.ET_DYN, []elf.Rela64{{Off: 0x1000, Info: uint64(elf.R_X86_64_RELATIVE)}}, "outside the 4 GiB image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Relocations(writeELF(t, tt.typ, words, tt.relas))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestConvertMissingObjcopy(t *testing.T) {
	path := writeELF(t, elf.ET_DYN, []uint64{synthBase}, []elf.Rela64{relative(0, synthBase)})
	out := filepath.Join(t.TempDir(), "out.efi")

	t.Setenv("OBJCOPY", "")
	t.Setenv("PATH", t.TempDir())
	err := Convert(path, out)
	require.Error(t, err)
	assert.Equal(t, "efiimage: objcopy not found in PATH: install binutils or run `make deps`", err.Error())

	t.Setenv("OBJCOPY", "/nonexistent/x86_64-objcopy")
	err = Convert(path, out)
	require.Error(t, err)
	assert.Equal(t, "efiimage: $OBJCOPY (/nonexistent/x86_64-objcopy) not found: install binutils or run `make deps`", err.Error())
	assert.NoFileExists(t, out)
}

func TestConvertNoRelocations(t *testing.T) {
	err := Convert(writeELF(t, elf.ET_DYN, nil, nil), filepath.Join(t.TempDir(), "out.efi"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no R_X86_64_RELATIVE relocations")
	assert.False(t, strings.Contains(err.Error(), "\n"))
}
