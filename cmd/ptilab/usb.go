package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ptilab/ptilab/host/usbimage"
)

// cmdUSB writes the USB stick image: `ptilab usb [-o FILE] [-plan FILE]
// IMAGE.efi`.
func cmdUSB(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("usb", "[-o FILE] [-plan FILE] IMAGE.efi", stderr)
	out := fs.String("o", "build/ptilab.img", "output disk image `file`")
	planPath := fs.String("plan", "", "plan `file` for the stick (default: the hardware-sized plan, every key with its comment)")
	if code := parse(fs, args, 1); code >= 0 {
		return code
	}
	efi, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "ptilab: %v\n", err)
		return exitFail
	}
	var plan []byte
	if *planPath != "" {
		if plan, err = os.ReadFile(*planPath); err != nil {
			fmt.Fprintf(stderr, "ptilab: %v\n", err)
			return exitFail
		}
		// A line the image would ignore is found here, not on the box.
		if errs := checkPlan(*planPath, plan, stderr); len(errs) > 0 {
			fmt.Fprintf(stderr, "ptilab: %s: %d lines the image would ignore: no stick written\n", *planPath, len(errs))
			return exitFail
		}
	}
	if err := usbimage.Write(*out, efi, plan); err != nil {
		fmt.Fprintf(stderr, "ptilab: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "ptilab: %s: %d MiB GPT disk, FAT32 EFI System Partition %q of %d MiB (EFI/BOOT/BOOTX64.EFI, ptilab.plan, README.txt); write it with dd (README.md, \"Running on a real machine\")\n",
		*out, usbimage.DiskSize>>20, usbimage.Label, usbimage.ESPSize>>20)
	return exitOK
}
