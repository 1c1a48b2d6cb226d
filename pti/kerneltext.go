package pti

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/goos"
)

// kernelTextPages returns the pages of the image's .text section, which
// global pages make global (Linux leaves kernel text global for !PCID),
// from the section table the firmware loaded with the image; none when it
// has none.
func kernelTextPages() (start, end uint64) {
	addr, size, ok := efi.ImageSection(".text")
	if !ok {
		return 0, 0
	}
	return addr &^ (amd64.PageSize - 1), (addr + size + amd64.PageSize - 1) &^ (amd64.PageSize - 1)
}

// setKernelTextGlobal sets or clears the global bit of the kernel text's
// pages in the kernel's table (which every process's kernel side shares),
// splitting the 2 MiB pages that hold it.
func setKernelTextGlobal(on bool) error {
	kpt := goos.KernelTable()
	for va := env.ktext.start; va < env.ktext.end; va += amd64.PageSize {
		if !kpt.Split(va) {
			return errors.New("pti: out of memory splitting the kernel text's pages")
		}
		pte := kpt.PTE(va, false)
		if pte == nil {
			return fmt.Errorf("pti: kernel text page %#x is not mapped", va)
		}
		if on {
			*pte |= amd64.PTE_G
		} else {
			*pte &^= amd64.PTE_G
		}
	}
	return nil
}
