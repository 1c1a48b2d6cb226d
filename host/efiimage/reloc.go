// Package efiimage turns the position-independent ELF executable produced by
// the Go toolchain (-buildmode=pie, internal linking) into a relocatable
// PE32+ UEFI application that OVMF can load at any address.
//
// The ELF's dynamic relocations (R_X86_64_RELATIVE only) are translated into
// a PE base-relocation table (.reloc, IMAGE_REL_BASED_DIR64 entries), which
// is added to the ELF as an allocated section; objcopy then writes the PE
// image and fills the base-relocation data directory from that section.
package efiimage

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// pageSize is the span covered by one PE base-relocation block, in bytes.
const pageSize = 0x1000

// PE base-relocation entry types (PE/COFF specification, "Base Relocation
// Types"). An entry is a uint16: type in the top 4 bits, offset within the
// block's page in the low 12 bits.
const (
	relBasedAbsolute = 0  // padding entry, ignored by the loader
	relBasedDir64    = 10 // add the 64-bit load delta to the quadword at the offset
)

// relocation is one R_X86_64_RELATIVE relocation of the ELF image.
type relocation struct {
	rva    uint32 // offset of the 8-byte target from the image base, in bytes
	addend uint64 // link-time value the target must hold
}

// elfImage is what the conversion needs to know about the input ELF.
type elfImage struct {
	base   uint64       // lowest PT_LOAD vaddr rounded down to pageSize
	entry  uint64       // ELF entry point, a virtual address
	top    uint64       // end of the highest allocated section, a virtual address
	relocs []relocation // sorted by rva, no duplicates
}

// Relocations reads the PIE ELF executable at elfPath and returns its image
// base (the lowest PT_LOAD virtual address rounded down to 4 KiB) and the
// RVAs (virtual address minus image base, in bytes) of the 8-byte words its
// R_X86_64_RELATIVE relocations patch, sorted ascending.
//
// It fails if the file is not a little-endian x86-64 ELF64 ET_DYN
// executable, has no PT_LOAD segment, uses a relocation type other than
// R_X86_64_RELATIVE (the error names the type), has an SHT_REL section,
// relocates the same word twice, or has a relocation whose target does not
// already hold the addend in the file (a PE DIR64 relocation only adds the
// load delta, so the link-time value must be present).
func Relocations(elfPath string) (imageBase uint64, rvas []uint32, err error) {
	img, err := readELF(elfPath)
	if err != nil {
		return 0, nil, err
	}
	return img.base, img.rvas(), nil
}

// rvas returns the relocation RVAs in ascending order.
func (img *elfImage) rvas() []uint32 {
	out := make([]uint32, len(img.relocs))
	for i, r := range img.relocs {
		out[i] = r.rva
	}
	return out
}

// readELF opens and decodes the ELF at path; see Relocations for the checks.
func readELF(path string) (*elfImage, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("efiimage: %w", err)
	}
	defer f.Close()
	img, err := decodeELF(f)
	if err != nil {
		return nil, fmt.Errorf("efiimage: %s: %w", path, err)
	}
	return img, nil
}

func decodeELF(f *elf.File) (*elfImage, error) {
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("not a little-endian x86-64 ELF64 file (class %v, data %v, machine %v)", f.Class, f.Data, f.Machine)
	}
	if f.Type != elf.ET_DYN {
		return nil, fmt.Errorf("ELF type is %v, want ET_DYN: build with -buildmode=pie", f.Type)
	}
	img := &elfImage{entry: f.Entry}
	var loads []*elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p)
		}
	}
	if len(loads) == 0 {
		return nil, errors.New("no PT_LOAD segment")
	}
	lowest := loads[0].Vaddr
	for _, p := range loads {
		lowest = min(lowest, p.Vaddr)
	}
	img.base = lowest &^ (pageSize - 1)

	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		img.top = max(img.top, s.Addr+s.Size)
		switch s.Type {
		case elf.SHT_REL:
			return nil, fmt.Errorf("section %s: SHT_REL relocations are not supported", s.Name)
		case elf.SHT_RELA:
			rs, err := readRela(s, img.base)
			if err != nil {
				return nil, err
			}
			img.relocs = append(img.relocs, rs...)
		}
	}
	slices.SortFunc(img.relocs, func(a, b relocation) int { return cmp.Compare(a.rva, b.rva) })
	for i := 1; i < len(img.relocs); i++ {
		if img.relocs[i].rva == img.relocs[i-1].rva {
			return nil, fmt.Errorf("two relocations patch virtual address %#x", img.base+uint64(img.relocs[i].rva))
		}
	}
	for _, r := range img.relocs {
		if err := checkTarget(loads, img.base+uint64(r.rva), r.addend); err != nil {
			return nil, err
		}
	}
	return img, nil
}

// readRela decodes an SHT_RELA section of R_X86_64_RELATIVE entries.
func readRela(s *elf.Section, base uint64) ([]relocation, error) {
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("section %s: %w", s.Name, err)
	}
	const entSize = 24 // sizeof(Elf64_Rela)
	if len(data)%entSize != 0 {
		return nil, fmt.Errorf("section %s: size %d is not a multiple of %d", s.Name, len(data), entSize)
	}
	out := make([]relocation, 0, len(data)/entSize)
	for off := 0; off < len(data); off += entSize {
		vaddr := binary.LittleEndian.Uint64(data[off:])
		info := binary.LittleEndian.Uint64(data[off+8:])
		addend := binary.LittleEndian.Uint64(data[off+16:])
		if typ := elf.R_X86_64(elf.R_TYPE64(info)); typ != elf.R_X86_64_RELATIVE {
			return nil, fmt.Errorf("section %s: relocation at %#x has type %v, only R_X86_64_RELATIVE is supported", s.Name, vaddr, typ)
		}
		if vaddr < base || vaddr-base > 1<<32-8 {
			return nil, fmt.Errorf("section %s: relocation at %#x lies outside the 4 GiB image starting at %#x", s.Name, vaddr, base)
		}
		out = append(out, relocation{rva: uint32(vaddr - base), addend: addend})
	}
	return out, nil
}

// checkTarget verifies that the 8 bytes at vaddr are file-backed by a
// PT_LOAD segment and hold addend.
func checkTarget(loads []*elf.Prog, vaddr, addend uint64) error {
	for _, p := range loads {
		if vaddr < p.Vaddr || vaddr+8 > p.Vaddr+p.Filesz {
			continue
		}
		var b [8]byte
		if _, err := p.ReadAt(b[:], int64(vaddr-p.Vaddr)); err != nil {
			return fmt.Errorf("reading relocation target %#x: %w", vaddr, err)
		}
		if got := binary.LittleEndian.Uint64(b[:]); got != addend {
			return fmt.Errorf("relocation target %#x holds %#x, want the addend %#x", vaddr, got, addend)
		}
		return nil
	}
	return fmt.Errorf("relocation target %#x is not in the file-backed part of a PT_LOAD segment", vaddr)
}

// BaseRelocBlocks encodes rvas (byte offsets from the image base, each
// naming a 64-bit word to patch) as PE base-relocation blocks: one block per
// 4 KiB page, in ascending page order, each
//
//	PageRVA   uint32 (little endian)
//	BlockSize uint32 (bytes, header included)
//	entries   uint16 each: IMAGE_REL_BASED_DIR64<<12 | offset within the page
//
// padded with one IMAGE_REL_BASED_ABSOLUTE (zero) entry when the entry count
// is odd, so every block size is a multiple of 4 bytes. rvas need not be
// sorted (the input slice is not modified); a duplicate RVA yields a
// duplicate entry. Empty input gives an empty (nil) result.
func BaseRelocBlocks(rvas []uint32) []byte {
	sorted := slices.Sorted(slices.Values(rvas))
	var out []byte
	for len(sorted) > 0 {
		page := sorted[0] &^ (pageSize - 1)
		n := 0
		for n < len(sorted) && sorted[n]&^(pageSize-1) == page {
			n++
		}
		size := 8 + 2*(n+n%2)
		out = binary.LittleEndian.AppendUint32(out, page)
		out = binary.LittleEndian.AppendUint32(out, uint32(size))
		for _, rva := range sorted[:n] {
			out = binary.LittleEndian.AppendUint16(out, relBasedDir64<<12|uint16(rva&(pageSize-1)))
		}
		if n%2 == 1 {
			out = binary.LittleEndian.AppendUint16(out, relBasedAbsolute)
		}
		sorted = sorted[n:]
	}
	return out
}
