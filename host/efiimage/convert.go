package efiimage

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ptilab/ptilab/host/hosttool"
)

// relocWarning is the objcopy warning printed when .reloc is added as an
// allocated section outside every ELF segment. It is expected and harmless:
// the ELF is only an intermediate, and the PE writer places sections by
// address, not by segment.
const relocWarning = "warning: allocated section `.reloc' not in segment"

// Convert writes to efiPath a PE32+ EFI application (subsystem 10) built
// from the PIE ELF executable at elfPath, with a base-relocation table so
// the firmware can load it at any address. The PE image base is the ELF's
// lowest PT_LOAD address rounded down to 4 KiB, and every PE RVA equals the
// ELF virtual address minus that base.
//
// objcopy is taken from $OBJCOPY when set (a path or a name looked up in
// PATH), otherwise from PATH. Convert fails if objcopy is missing (the
// error says to install binutils or run `make deps`), if the ELF is rejected
// by Relocations or has no relocations at all, if objcopy fails or prints
// anything besides the expected "allocated section `.reloc' not in segment"
// warning, or if the produced image does not pass the checks of verifyPE.
// efiPath is only written once the image has been verified.
func Convert(elfPath, efiPath string) error {
	img, err := readELF(elfPath)
	if err != nil {
		return err
	}
	if len(img.relocs) == 0 {
		return fmt.Errorf("efiimage: %s has no R_X86_64_RELATIVE relocations: the PE base-relocation directory would be empty", elfPath)
	}
	objcopy, err := findObjcopy()
	if err != nil {
		return err
	}
	blob := BaseRelocBlocks(img.rvas())

	dir, err := os.MkdirTemp("", "efiimage-")
	if err != nil {
		return fmt.Errorf("efiimage: %w", err)
	}
	defer os.RemoveAll(dir)
	blobPath := filepath.Join(dir, "reloc.bin")
	withReloc := filepath.Join(dir, "with-reloc.elf")
	tmpEFI := filepath.Join(dir, "out.efi")
	if err := os.WriteFile(blobPath, blob, 0o644); err != nil {
		return fmt.Errorf("efiimage: %w", err)
	}
	relocAddr := (img.top + pageSize - 1) &^ (pageSize - 1)
	if err := runObjcopy(objcopy,
		"--add-section", ".reloc="+blobPath,
		"--set-section-flags", ".reloc=alloc,load,readonly,data",
		"--change-section-address", fmt.Sprintf(".reloc=%#x", relocAddr),
		elfPath, withReloc); err != nil {
		return err
	}
	if err := runObjcopy(objcopy,
		"-O", "efi-app-x86_64",
		"--subsystem=efi-app",
		"--image-base", fmt.Sprintf("%#x", img.base),
		"-R", ".tbss", "-R", ".interp", "-R", ".note*",
		"--strip-debug",
		withReloc, tmpEFI); err != nil {
		return err
	}
	if err := verifyPE(tmpEFI, img, blob); err != nil {
		return fmt.Errorf("efiimage: objcopy output for %s: %w", elfPath, err)
	}
	out, err := os.ReadFile(tmpEFI)
	if err != nil {
		return fmt.Errorf("efiimage: %w", err)
	}
	if err := os.WriteFile(efiPath, out, 0o644); err != nil {
		return fmt.Errorf("efiimage: %w", err)
	}
	return nil
}

// findObjcopy returns the objcopy to run: $OBJCOPY if set, else objcopy
// from PATH.
func findObjcopy() (string, error) {
	path, err := hosttool.Find("OBJCOPY", "objcopy")
	if err != nil {
		return "", fmt.Errorf("efiimage: %v: install binutils or run `make deps`", err)
	}
	return path, nil
}

// runObjcopy runs objcopy with args; any failure, and any diagnostic other
// than relocWarning, is an error carrying objcopy's output.
func runObjcopy(objcopy string, args ...string) error {
	var output bytes.Buffer
	cmd := exec.Command(objcopy, args...)
	cmd.Stdout = &output
	cmd.Stderr = &output
	runErr := cmd.Run()
	var rest []string
	for line := range strings.Lines(output.String()) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasSuffix(line, relocWarning) {
			rest = append(rest, line)
		}
	}
	switch {
	case runErr != nil && len(rest) > 0:
		return fmt.Errorf("efiimage: objcopy %s: %w: %s", strings.Join(args, " "), runErr, strings.Join(rest, "; "))
	case runErr != nil:
		return fmt.Errorf("efiimage: objcopy %s: %w", strings.Join(args, " "), runErr)
	case len(rest) > 0:
		return fmt.Errorf("efiimage: objcopy %s: unexpected diagnostics: %s", strings.Join(args, " "), strings.Join(rest, "; "))
	}
	return nil
}

// verifyPE checks the PE image at path against the ELF it was made from:
// x86-64 machine, PE32+ optional header, EFI application subsystem, image
// base, IMAGE_FILE_RELOCS_STRIPPED clear, a base-relocation directory whose
// contents are exactly blob, an entry point RVA equal to the ELF entry minus
// the image base, and every relocated quadword holding its addend.
func verifyPE(path string, img *elfImage, blob []byte) error {
	f, err := pe.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
		return fmt.Errorf("machine is %#x, want IMAGE_FILE_MACHINE_AMD64", f.Machine)
	}
	if f.Characteristics&pe.IMAGE_FILE_RELOCS_STRIPPED != 0 {
		return errors.New("IMAGE_FILE_RELOCS_STRIPPED is set")
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok {
		return errors.New("optional header is not PE32+")
	}
	if oh.Subsystem != pe.IMAGE_SUBSYSTEM_EFI_APPLICATION {
		return fmt.Errorf("subsystem is %d, want %d (EFI application)", oh.Subsystem, pe.IMAGE_SUBSYSTEM_EFI_APPLICATION)
	}
	if oh.ImageBase != img.base {
		return fmt.Errorf("image base is %#x, want %#x", oh.ImageBase, img.base)
	}
	if want := img.entry - img.base; uint64(oh.AddressOfEntryPoint) != want {
		return fmt.Errorf("entry point RVA is %#x, want %#x", oh.AddressOfEntryPoint, want)
	}
	if oh.NumberOfRvaAndSizes <= pe.IMAGE_DIRECTORY_ENTRY_BASERELOC {
		return fmt.Errorf("only %d data directories, no base-relocation directory", oh.NumberOfRvaAndSizes)
	}
	dd := oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_BASERELOC]
	if dd.VirtualAddress == 0 || int(dd.Size) != len(blob) {
		return fmt.Errorf("base-relocation directory is RVA %#x size %d, want size %d", dd.VirtualAddress, dd.Size, len(blob))
	}
	got, err := readRVA(f, dd.VirtualAddress, len(blob))
	if err != nil {
		return fmt.Errorf("base-relocation directory: %w", err)
	}
	if !bytes.Equal(got, blob) {
		return errors.New("base-relocation directory contents differ from the generated blocks")
	}
	for _, r := range img.relocs {
		b, err := readRVA(f, r.rva, 8)
		if err != nil {
			return fmt.Errorf("relocation target: %w", err)
		}
		if v := binary.LittleEndian.Uint64(b); v != r.addend {
			return fmt.Errorf("relocation target RVA %#x holds %#x, want %#x", r.rva, v, r.addend)
		}
	}
	return nil
}

// readRVA returns n bytes at rva from the raw data of the section holding
// them.
func readRVA(f *pe.File, rva uint32, n int) ([]byte, error) {
	for _, s := range f.Sections {
		if rva < s.VirtualAddress || uint64(rva)+uint64(n) > uint64(s.VirtualAddress)+uint64(min(s.VirtualSize, s.Size)) {
			continue
		}
		b := make([]byte, n)
		if _, err := s.ReadAt(b, int64(rva-s.VirtualAddress)); err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("RVA %#x (+%d bytes) is not in the file data of any section", rva, n)
}
