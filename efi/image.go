package efi

// The loaded image's PE/COFF headers (Microsoft PE Format: the DOS header's
// e_lfanew at 0x3c points at the signature "PE\0\0", which the COFF file
// header follows: NumberOfSections at +2, SizeOfOptionalHeader at +16; the
// section table follows the optional header, 40 bytes a section: the name
// at 0 (8 bytes, NUL-padded), VirtualSize at 8, VirtualAddress at 12). The
// firmware loads the headers with the image, at its ImageBase (UEFI 2.10,
// 9.1 EFI_LOADED_IMAGE_PROTOCOL).
const (
	peNewHeader    = 0x3c // e_lfanew
	peCOFF         = 4    // the COFF file header, after the signature
	peNumSections  = peCOFF + 2
	peOptionalSize = peCOFF + 16
	peOptional     = peCOFF + 20 // the optional header
	peSectionSize  = 40
	peVirtualSize  = 8
	peVirtualAddr  = 12
)

// ImageSection returns where section name (at most 8 bytes, as the section
// table spells it, e.g. ".text") of the running image was loaded and its
// size in bytes (VirtualSize), from the headers at Firmware.ImageBase; ok
// is false when the image has no such section or its headers are not
// PE/COFF's.
func ImageSection(name string) (addr, size uint64, ok bool) {
	return peSection(Firmware.ImageBase, name)
}

// peSection is ImageSection for the image loaded at base.
func peSection(base uint64, name string) (addr, size uint64, ok bool) {
	if len(name) > 8 || Read16(base) != 0x5a4d { // "MZ"
		return 0, 0, false
	}
	var want [8]byte
	copy(want[:], name)
	pe := base + uint64(Read32(base+peNewHeader))
	if Read32(pe) != 0x00004550 { // "PE\0\0"
		return 0, 0, false
	}
	n := uint64(Read16(pe + peNumSections))
	sec := pe + peOptional + uint64(Read16(pe+peOptionalSize))
	for i := uint64(0); i < n; i++ {
		h := sec + peSectionSize*i
		if [8]byte(Bytes(h, 8)) == want {
			return base + uint64(Read32(h+peVirtualAddr)), uint64(Read32(h + peVirtualSize)), true
		}
	}
	return 0, 0, false
}
