package bochs

import (
	"fmt"
	"os"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/disk"
	"github.com/diskfs/go-diskfs/filesystem"

	"github.com/ptilab/ptilab/host/usbimage"
)

// Bochs guesses a flat disk image's geometry from its size, as 16 heads of
// 63 sectors of 512 bytes per cylinder (Bochs 2.7, iodev/harddrv.cc), and
// refuses a size that is not a whole number of cylinders.
const (
	sectorSize    = 512
	cylinderBytes = 16 * 63 * sectorSize
)

// diskSlack is the free space the boot disk keeps beyond its files, for
// what the image writes back to its boot volume.
const diskSlack = 8 << 20

// checkDisk checks that the disk image file exists and is a whole number
// of cylinders, as Bochs requires.
func checkDisk(file string) error {
	st, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("bochs: %w", err)
	}
	if st.Size() == 0 || st.Size()%cylinderBytes != 0 {
		return fmt.Errorf("bochs: disk image %s: %d bytes, not a whole number of cylinders of %d bytes", file, st.Size(), cylinderBytes)
	}
	return nil
}

// WriteDisk writes a boot disk image to file: a partitionless FAT16 volume
// (a "superfloppy", which OVMF's FAT driver mounts as the whole disk) whose
// size is a whole number of Bochs cylinders, holding files keyed by
// slash-separated path from its root. Directories are created as needed.
// OVMF boots it through the removable-media path EFI/BOOT/BOOTX64.EFI
// (UEFI 2.10, 3.5.1.1) when that file is among files.
func WriteDisk(file string, files map[string][]byte) error {
	size := int64(diskSlack)
	for name, data := range files {
		size += int64(len(data)) + int64(len(name)) + 4096
	}
	size = (size + cylinderBytes - 1) / cylinderBytes * cylinderBytes
	if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("bochs: boot disk: %w", err)
	}
	d, err := diskfs.Create(file, size, diskfs.SectorSize512)
	if err != nil {
		return fmt.Errorf("bochs: boot disk: %w", err)
	}
	defer d.Close()
	fs, err := d.CreateFilesystem(disk.FilesystemSpec{Partition: 0, FSType: filesystem.TypeFat16, VolumeLabel: "PTILAB", Reproducible: true})
	if err != nil {
		return fmt.Errorf("bochs: boot disk: FAT16: %w", err)
	}
	if err := usbimage.WriteTree(fs, files); err != nil {
		return fmt.Errorf("bochs: boot disk: %w", err)
	}
	return nil
}
