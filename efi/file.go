package efi

import "unicode/utf8"

// Files on the boot volume (UEFI 2.10, 13.4 Simple File System Protocol and
// 13.5 File Protocol).

// Offsets in EFI_SIMPLE_FILE_SYSTEM_PROTOCOL and EFI_FILE_PROTOCOL.
const (
	fsOpenVolume    = 8
	fileOpen        = 8
	fileClose       = 16
	fileDelete      = 24
	fileRead        = 32
	fileWrite       = 40
	fileSetPosition = 56
	fileGetInfo     = 64
	fileFlush       = 80
)

// Open modes (UEFI 2.10, 13.5.2).
const (
	modeRead   = 1
	modeWrite  = 2
	modeCreate = 1 << 63
)

// File attribute: directory (UEFI 2.10, 13.5.2).
const attrDirectory = 0x10

var volumeRoot uint64 // EFI_FILE_PROTOCOL of the boot volume's root, 0 until opened

// openRoot opens the root directory of the volume ptilab was loaded from.
func openRoot() Status {
	if volumeRoot != 0 {
		return Success
	}
	fs, s := HandleProtocol(Firmware.DeviceHandle, &SimpleFileSystemProtocolGUID)
	if s.Error() {
		return s
	}
	var root uint64
	if s := Protocol(fs, fsOpenVolume, addrOf(&root)); s.Error() {
		return s
	}
	volumeRoot = root
	return Success
}

// ucs2Path writes path (UTF-8, '/' separated, relative to the volume root)
// into the bounce buffer as a NUL-terminated UCS-2 path with '\' separators
// and returns its address, or false when it does not fit.
func ucs2Path(path []byte) (uint64, bool) {
	base, buf := Bounce()
	n := 0
	for len(path) > 0 {
		if n+4 > len(buf) {
			return 0, false
		}
		r, size := utf8.DecodeRune(path)
		path = path[size:]
		if r == '/' {
			r = '\\'
		}
		if r > 0xffff {
			r = '?'
		}
		buf[n], buf[n+1] = byte(r), byte(r>>8)
		n += 2
	}
	buf[n], buf[n+1] = 0, 0
	return base, true
}

// OpenFile opens the file at path on the boot volume (path as for
// ucs2Path). With create it is created if missing; with truncate an
// existing file is emptied (deleted and created again). It returns the
// file's EFI_FILE_PROTOCOL and whether it is a directory.
func OpenFile(path []byte, write, create, truncate bool) (file uint64, dir bool, s Status) {
	if s := openRoot(); s.Error() {
		return 0, false, s
	}
	mode := uint64(modeRead)
	if write {
		mode |= modeWrite
	}
	if create {
		mode |= modeCreate | modeWrite
	}
	name, ok := ucs2Path(path)
	if !ok {
		return 0, false, InvalidParameter
	}
	var h uint64
	if s := Protocol(volumeRoot, fileOpen, addrOf(&h), name, mode, 0); s.Error() {
		return 0, false, s
	}
	size, attr, s := fileInfo(h)
	if s.Error() {
		Protocol(h, fileClose)
		return 0, false, s
	}
	if truncate && size > 0 && attr&attrDirectory == 0 {
		Protocol(h, fileDelete) // closes h
		if name, ok = ucs2Path(path); !ok {
			return 0, false, InvalidParameter
		}
		if s := Protocol(volumeRoot, fileOpen, addrOf(&h), name, modeRead|modeWrite|modeCreate, 0); s.Error() {
			return 0, false, s
		}
	}
	return h, attr&attrDirectory != 0, Success
}

// fileInfo returns the size in bytes and the attributes of an open file
// (EFI_FILE_INFO, UEFI 2.10, 13.5.16).
func fileInfo(h uint64) (size, attr uint64, s Status) {
	base, buf := Bounce()
	n := uint64(len(buf))
	if s := Protocol(h, fileGetInfo, addr(&FileInfoGUID), addrOf(&n), base); s.Error() {
		return 0, 0, s
	}
	return Read64(base + 8), Read64(base + 72), Success
}

// FileSize returns the size of an open file in bytes.
func FileSize(h uint64) (uint64, Status) {
	size, _, s := fileInfo(h)
	return size, s
}

// SetPosition moves an open file's position to pos bytes from its start.
func SetPosition(h, pos uint64) Status {
	return Protocol(h, fileSetPosition, pos)
}

// ReadFile reads from an open file at its position into dst, through the
// bounce buffer, and returns the bytes read: 0 at the end of the file.
func ReadFile(h uint64, dst []byte) (int, Status) {
	base, buf := Bounce()
	total := 0
	for len(dst) > 0 {
		n := uint64(min(len(dst), len(buf)))
		if s := Protocol(h, fileRead, addrOf(&n), base); s.Error() {
			return total, s
		}
		if n == 0 {
			break
		}
		copy(dst, buf[:n])
		dst = dst[n:]
		total += int(n)
	}
	return total, Success
}

// WriteFile writes src at an open file's position, through the bounce
// buffer, and returns the bytes written.
func WriteFile(h uint64, src []byte) (int, Status) {
	base, buf := Bounce()
	total := 0
	for len(src) > 0 {
		k := copy(buf, src)
		n := uint64(k)
		if s := Protocol(h, fileWrite, addrOf(&n), base); s.Error() {
			return total, s
		}
		src = src[n:]
		total += int(n)
	}
	return total, Success
}

// FlushFile writes an open file's data and its directory entry (size,
// times) to the device (UEFI 2.10, 13.5.11 EFI_FILE_PROTOCOL.Flush): what
// a power cut after it leaves on the medium. Errors: WriteProtected,
// VolumeFull, DeviceError, AccessDenied (opened read-only).
func FlushFile(h uint64) Status { return Protocol(h, fileFlush) }

// CloseFile flushes and closes an open file.
func CloseFile(h uint64) Status {
	FlushFile(h)
	return Protocol(h, fileClose)
}

// MakeDir creates the directory at path on the boot volume (path as for
// ucs2Path; its parent must exist), or opens it if it exists: EFI_FILE_
// PROTOCOL.Open with EFI_FILE_MODE_CREATE and the EFI_FILE_DIRECTORY
// attribute (UEFI 2.10, 13.5.2). Its errors are Open's (WriteProtected on a read-only medium, VolumeFull), and
// AccessDenied when a file, not a directory, has that name.
func MakeDir(path []byte) Status {
	if s := openRoot(); s.Error() {
		return s
	}
	name, ok := ucs2Path(path)
	if !ok {
		return InvalidParameter
	}
	var h uint64
	if s := Protocol(volumeRoot, fileOpen, addrOf(&h), name, modeRead|modeWrite|modeCreate, attrDirectory); s.Error() {
		return s
	}
	_, attr, s := fileInfo(h)
	Protocol(h, fileClose)
	switch {
	case s.Error():
		return s
	case attr&attrDirectory == 0:
		return AccessDenied
	}
	return Success
}
