// Package usbimage makes and reads ptilab's USB stick image: a raw disk
// with a GUID partition table (UEFI 2.10, 5.3) holding one EFI System
// Partition (FAT32) with the boot loader at the removable-media path
// EFI/BOOT/BOOTX64.EFI (UEFI 2.10, 3.5.1.1), the run plan ptilab.plan and
// README.txt. Written with `dd` to a stick, it boots on any x86-64 UEFI PC;
// each run writes its results file under ptilab-results/ on it.
//
// Everything is done in Go with github.com/diskfs/go-diskfs: no root, no
// loop device, no external tool.
package usbimage

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/disk"
	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/partition/gpt"
)

// The image's layout: the ESP starts at 1 MiB (the alignment partitioning
// tools use) and ends 1 MiB before the end, which holds the backup GPT.
// The disk is a whole number of cylinders of 16 heads of 63 sectors, the
// geometry Bochs assumes for a flat disk image (and requires whole).
const (
	SectorSize = 512
	cylinder   = 16 * 63 * SectorSize
	// DiskSize is the image's size in bytes: 66.4 MiB.
	DiskSize = 135 * cylinder
	ESPStart = 1 << 20
	// ESPSize is the EFI System Partition's size, 64.4 MiB: FAT32 (at
	// least 65525 clusters: with 512-byte clusters a FAT32 volume needs
	// 32 MiB and more), and room for thousands of results files.
	ESPSize = DiskSize - ESPStart - 1<<20
	// ESPIndex is the ESP's partition number (go-diskfs counts from 1).
	ESPIndex = 1
	// Label is the FAT volume label: the stick mounts as /media/$USER/PTILAB.
	Label = "PTILAB"
)

// Paths in the ESP.
const (
	BootPath   = "EFI/BOOT/BOOTX64.EFI"
	PlanPath   = "ptilab.plan"
	ReadmePath = "README.txt"
	ResultsDir = "ptilab-results"
)

// HardwarePlan is the plan the stick carries by default: every key with
// its comment, sized for real hardware (the reference threads'
// sched-messaging -g 20 and 10 repeats).
//
//go:embed hardware.plan
var HardwarePlan []byte

// Readme is README.txt on the stick.
//
//go:embed README.txt
var Readme []byte

// Write creates the image file (replacing it) holding the EFI application
// efi and the plan (HardwarePlan when nil), with README.txt.
func Write(file string, efi, plan []byte) error {
	if len(efi) == 0 {
		return errors.New("usb image: empty EFI application")
	}
	if plan == nil {
		plan = HardwarePlan
	}
	return WriteFiles(file, map[string][]byte{BootPath: efi, PlanPath: plan, ReadmePath: Readme})
}

// WriteFiles creates the image file (replacing it) with the stick's layout
// holding files, keyed by slash-separated path from the ESP's root;
// directories are created as needed. The QEMU runner boots such a disk.
func WriteFiles(file string, files map[string][]byte) error {
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("usb image: %w", err)
	}
	d, err := diskfs.Create(file, DiskSize, diskfs.SectorSize512)
	if err != nil {
		return fmt.Errorf("usb image: %w", err)
	}
	defer d.Close()
	table := &gpt.Table{
		LogicalSectorSize:  SectorSize,
		PhysicalSectorSize: SectorSize,
		ProtectiveMBR:      true,
		Partitions: []*gpt.Partition{{
			Index: ESPIndex,
			Start: ESPStart / SectorSize,
			End:   (ESPStart+ESPSize)/SectorSize - 1,
			Type:  gpt.EFISystemPartition,
			Name:  "EFI System Partition",
		}},
	}
	if err := d.Partition(table); err != nil {
		return fmt.Errorf("usb image: partition table: %w", err)
	}
	fs, err := d.CreateFilesystem(disk.FilesystemSpec{Partition: ESPIndex, FSType: filesystem.TypeFat32, VolumeLabel: Label})
	if err != nil {
		return fmt.Errorf("usb image: FAT32: %w", err)
	}
	if err := WriteTree(fs, files); err != nil {
		return fmt.Errorf("usb image: %w", err)
	}
	return nil
}

// WriteTree writes files, keyed by slash-separated path from the root,
// into fs in path order, creating their directories.
func WriteTree(fs filesystem.FileSystem, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeFile(fs, n, files[n]); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes data to name (slash-separated, from the root) in fs,
// creating its directories.
func writeFile(fs filesystem.FileSystem, name string, data []byte) error {
	p := path.Clean("/" + name)
	if dir := path.Dir(p); dir != "/" {
		if err := fs.Mkdir(dir); err != nil {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
	}
	f, err := fs.OpenFile(p, os.O_CREATE|os.O_RDWR|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// open opens the image's ESP; the caller closes the disk.
func open(file string, mode diskfs.OpenModeOption) (*disk.Disk, filesystem.FileSystem, error) {
	return OpenESP(file, mode)
}

// OpenESP opens the EFI System Partition of the GPT disk image file: the
// partition of the EFI System type (UEFI 2.10, 5.3.3), wherever it is, so
// that any stick's image reads, not only one this package wrote; its file
// system is FAT32 or FAT16. The caller closes the disk. The errors say
// what is missing: a partition table, a GPT, an ESP, a FAT file system.
func OpenESP(file string, mode diskfs.OpenModeOption) (*disk.Disk, filesystem.FileSystem, error) {
	d, err := diskfs.Open(file, diskfs.WithOpenMode(mode))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: disk image: %w", file, err)
	}
	fail := func(err error) (*disk.Disk, filesystem.FileSystem, error) {
		d.Close()
		return nil, nil, err
	}
	table, err := d.GetPartitionTable()
	if err != nil {
		return fail(fmt.Errorf("%s: disk image without a partition table: %w", file, err))
	}
	t, ok := table.(*gpt.Table)
	if !ok {
		return fail(fmt.Errorf("%s: disk image with a %s partition table, not GPT: no EFI System Partition", file, table.Type()))
	}
	esp := -1
	for _, p := range t.Partitions {
		if p != nil && p.Type == gpt.EFISystemPartition {
			esp = p.Index
			break
		}
	}
	if esp < 0 {
		return fail(fmt.Errorf("%s: disk image without an EFI System Partition", file))
	}
	fs, err := d.GetFilesystem(esp)
	if err != nil {
		return fail(fmt.Errorf("%s: EFI System Partition %d: no FAT file system: %w", file, esp, err))
	}
	return d, fs, nil
}

// ReadFile returns the file name (slash-separated, from the ESP's root)
// of the image file.
func ReadFile(file, name string) ([]byte, error) {
	d, fs, err := open(file, diskfs.ReadOnly)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	data, err := ReadFS(fs, strings.TrimPrefix(path.Clean("/"+name), "/"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return data, nil
}

// ReadFS reads the file name of fsys with one read of its size:
// go-diskfs v1.9.4's FAT Read returns bytes past the end of the file when
// a read starts inside a cluster, so io/fs's ReadFile, which reads again
// at the end to see EOF, can append them.
func ReadFS(fsys iofs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return data, nil
}

// ReplaceFile writes data to name in the image's ESP, replacing the file.
func ReplaceFile(file, name string, data []byte) error {
	d, fs, err := open(file, diskfs.ReadWriteExclusive)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := writeFile(fs, name, data); err != nil {
		return fmt.Errorf("usb image: %w", err)
	}
	return nil
}

// Results returns the names of the results files in the image's
// ptilab-results directory, sorted (oldest first: the names start with
// the date and time); none when the directory does not exist.
func Results(file string) ([]string, error) {
	d, fs, err := open(file, diskfs.ReadOnly)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	root, err := fs.ReadDir(".") // io/fs paths: no leading slash
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if !slices.ContainsFunc(root, func(e iofs.DirEntry) bool { return e.IsDir() && strings.EqualFold(e.Name(), ResultsDir) }) {
		return nil, nil
	}
	entries, err := fs.ReadDir(ResultsDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", file, ResultsDir, err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(strings.ToLower(e.Name()), ".log") {
			names = append(names, ResultsDir+"/"+e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}
