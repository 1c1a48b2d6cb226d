//go:build ptilab_global_probe

package board

import (
	"unsafe"

	"github.com/ptilab/ptilab/efi"
)

// globalProbe is the page goos's plantGlobalProbe left a stale global TLB
// entry for (test image ptilab_global_probe): its address, the word the
// stale entry reads, and whether it was still used after a CR3 load.
var globalProbe struct {
	va, old     uint64
	staleBefore bool
}

// SetGlobalProbe records the probe's page at va, whose stale global TLB
// entry reads old, and whether that entry outlived a CR3 load; End checks
// it after dropping the global pages (checkGlobalProbe).
func SetGlobalProbe(va, old uint64, staleBefore bool) {
	globalProbe.va, globalProbe.old, globalProbe.staleBefore = va, old, staleBefore
}

// checkGlobalProbe reads the probe's page after dropGlobalPages, before
// the return to the firmware, and prints whether the stale global entry
// was used before and after: after the drop it must not be.
func checkGlobalProbe() {
	if globalProbe.va == 0 {
		return
	}
	after := *(*uint64)(efi.Pointer(globalProbe.va)) == globalProbe.old
	writeSerialString("ptilab: global-page probe (test image, ptilab_global_probe): stale global entry used after a CR3 load: ")
	writeSerialString(yesNo(globalProbe.staleBefore))
	writeSerialString("; after the global pages were dropped: ")
	writeSerialString(yesNo(after))
	writeSerialString("\n")
	DrainSerial()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// writeSerialString is WriteSerial for a string, without the copy a
// conversion to []byte may allocate (End also runs in kernel mode).
func writeSerialString(s string) {
	WriteSerial(unsafe.Slice(unsafe.StringData(s), len(s)))
}
