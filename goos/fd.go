package goos

import (
	"unsafe"

	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/linuxabi"
)

// File descriptors: the console (0, 1, 2), files on the boot volume
// (through the firmware's file protocol), eventfds and epoll instances, the
// last two for the runtime's network poller, which ptilab uses only as a
// timed wait.

const maxFDs = 64

// Kinds of file descriptor.
const (
	fdFree = iota
	fdConsole
	fdFile
	fdDir
	fdEventfd
	fdEpoll
)

// maxEpollItems bounds the descriptors one epoll instance watches.
const maxEpollItems = 8

type epollItem struct {
	fd     int32
	events uint32
	data   uint64
}

// fileDesc is one open file description.
type fileDesc struct {
	kind    uint8
	cloexec bool
	flags   uint32 // open flags: access mode, O_NONBLOCK, O_APPEND
	file    uint64 // EFI_FILE_PROTOCOL of a file or directory
	pos     uint64 // file position in bytes
	ino     uint64 // st_ino: a hash of the path on the boot volume
	count   uint64 // eventfd counter
	items   [maxEpollItems]epollItem
	nitems  int
}

var fds [maxFDs]fileDesc

func initFDs() {
	for i := 0; i < 3; i++ {
		fds[i] = fileDesc{kind: fdConsole, flags: linuxabi.O_RDWR}
	}
}

func getFD(fd uint64) *fileDesc {
	if fd >= maxFDs || fds[fd].kind == fdFree {
		return nil
	}
	return &fds[fd]
}

func newFD(kind uint8, flags uint32) (int, *fileDesc) {
	for i := range fds {
		if fds[i].kind == fdFree {
			fds[i] = fileDesc{kind: kind, flags: flags &^ linuxabi.O_CLOEXEC, cloexec: flags&linuxabi.O_CLOEXEC != 0}
			return i, &fds[i]
		}
	}
	return -1, nil
}

// fdOpen reports whether fd is an open descriptor (for tests and reports).
func fdOpen(fd int) bool { return fd >= 0 && fd < maxFDs && fds[fd].kind != fdFree }

// read, pread64, write and pwrite64: fd in DI, the buffer in SI, its length
// in DX, the file offset of the positioned ones in R10.
func sysRead(r *PtRegs) int64     { return transfer(r, false, false) }
func sysPread64(r *PtRegs) int64  { return transfer(r, false, true) }
func sysWrite(r *PtRegs) int64    { return transfer(r, true, false) }
func sysPwrite64(r *PtRegs) int64 { return transfer(r, true, true) }

// transfer makes the checks the four share, in Linux's order: fd must be
// open (EBADF); a zero-length transfer does nothing; the buffer must be user
// memory, writable for a read (EFAULT). Then it reads or writes; positioned
// transfers use the offset in R10 and leave the file position alone.
func transfer(r *PtRegs, write, positioned bool) int64 {
	fd, buf, n := r.DI, r.SI, r.DX
	f := getFD(fd)
	switch {
	case f == nil:
		return -linuxabi.EBADF
	case n == 0:
		return 0
	case !userRange(buf, n, !write):
		return -linuxabi.EFAULT
	}
	pos := f.pos // where a file transfer starts
	if positioned {
		pos = r.R10
	}
	if write {
		return writeAt(f, fd, buf, n, pos, positioned)
	}
	return readAt(f, buf, n, pos, positioned)
}

// readAt reads from f, starting at pos in a file.
func readAt(f *fileDesc, buf, n, pos uint64, positioned bool) int64 {
	switch f.kind {
	case fdConsole:
		return 0 // no input: end of file
	case fdDir:
		return -linuxabi.EISDIR
	case fdEventfd:
		if positioned {
			return -linuxabi.ESPIPE
		}
		if n < 8 {
			return -linuxabi.EINVAL
		}
		if f.count == 0 {
			return -linuxabi.EAGAIN // the runtime's eventfd is non-blocking
		}
		store64(buf, f.count)
		f.count = 0
		return 8
	case fdFile:
		if f.flags&linuxabi.O_ACCMODE == linuxabi.O_WRONLY {
			return -linuxabi.EBADF
		}
		// Past the end the firmware reports an error; Linux reads nothing.
		size, s := efi.FileSize(f.file)
		if s.Error() {
			return -linuxabi.EIO
		}
		if pos >= size {
			return 0
		}
		n = min(n, size-pos)
		if s := efi.SetPosition(f.file, pos); s.Error() {
			return -linuxabi.EIO
		}
		got, s := efi.ReadFile(f.file, userBytes(buf, n))
		if s.Error() {
			return -linuxabi.EIO
		}
		if !positioned {
			f.pos += uint64(got)
		}
		return int64(got)
	}
	return -linuxabi.EINVAL
}

// writeAt writes to f, open as descriptor fd (an eventfd's pollers are
// woken by its number), starting at pos in a file unless it is open with
// O_APPEND and the write is not positioned.
func writeAt(f *fileDesc, fd, buf, n, pos uint64, positioned bool) int64 {
	switch f.kind {
	case fdConsole:
		consoleWrite(userBytes(buf, n))
		return int64(n)
	case fdDir:
		return -linuxabi.EISDIR
	case fdEventfd:
		if n < 8 {
			return -linuxabi.EINVAL
		}
		f.count += load64(buf)
		wakePollers(fd)
		return 8
	case fdFile:
		if f.flags&linuxabi.O_ACCMODE == linuxabi.O_RDONLY {
			return -linuxabi.EBADF
		}
		if !positioned && f.flags&linuxabi.O_APPEND != 0 {
			size, s := efi.FileSize(f.file)
			if s.Error() {
				return -linuxabi.EIO
			}
			pos = size
		}
		if s := efi.SetPosition(f.file, pos); s.Error() {
			return -linuxabi.EIO
		}
		put, s := efi.WriteFile(f.file, userBytes(buf, n))
		if s.Error() && put == 0 {
			if s == efi.VolumeFull {
				return -linuxabi.ENOSPC
			}
			if s == efi.WriteProtected {
				return -linuxabi.EROFS
			}
			return -linuxabi.EIO
		}
		if !positioned {
			f.pos = pos + uint64(put)
		}
		return int64(put)
	}
	return -linuxabi.EINVAL
}

func sysClose(r *PtRegs) int64 {
	f := getFD(r.DI)
	if f == nil {
		return -linuxabi.EBADF
	}
	if f.kind == fdFile || f.kind == fdDir {
		efi.CloseFile(f.file)
	}
	unwatch(int32(r.DI))
	if f.kind != fdConsole {
		*f = fileDesc{}
	}
	return 0
}

func sysLseek(r *PtRegs) int64 {
	f := getFD(r.DI)
	if f == nil {
		return -linuxabi.EBADF
	}
	if f.kind != fdFile {
		return -linuxabi.ESPIPE
	}
	off := int64(r.SI)
	var base int64
	switch r.DX {
	case linuxabi.SEEK_SET:
	case linuxabi.SEEK_CUR:
		base = int64(f.pos)
	case linuxabi.SEEK_END:
		size, s := efi.FileSize(f.file)
		if s.Error() {
			return -linuxabi.EIO
		}
		base = int64(size)
	default:
		return -linuxabi.EINVAL
	}
	if base+off < 0 {
		return -linuxabi.EINVAL
	}
	f.pos = uint64(base + off)
	return int64(f.pos)
}

func sysFcntl(r *PtRegs) int64 {
	f := getFD(r.DI)
	if f == nil {
		return -linuxabi.EBADF
	}
	switch r.SI {
	case linuxabi.F_GETFD:
		if f.cloexec {
			return linuxabi.FD_CLOEXEC
		}
		return 0
	case linuxabi.F_SETFD:
		f.cloexec = r.DX&linuxabi.FD_CLOEXEC != 0
		return 0
	case linuxabi.F_GETFL:
		return int64(f.flags)
	case linuxabi.F_SETFL:
		f.flags = f.flags&^linuxabi.O_NONBLOCK | uint32(r.DX)&linuxabi.O_NONBLOCK
		return 0
	}
	return -linuxabi.EINVAL
}

// The directory file descriptor meaning "the current directory".
const AT_FDCWD = -100

// AT_EMPTY_PATH makes newfstatat act on dirfd itself.
const AT_EMPTY_PATH = 0x1000

// userPath copies the NUL-terminated path at va into buf and returns it,
// or false when it is invalid or too long.
func userPath(va uint64, buf []byte) ([]byte, bool) {
	for i := range buf {
		if !userRange(va+uint64(i), 1, false) {
			return nil, false
		}
		c := *(*byte)(efi.Pointer(va + uint64(i)))
		if c == 0 {
			return buf[:i], true
		}
		buf[i] = c
	}
	return nil, false
}

// volumePath turns an absolute path, or one relative to "/" (the only
// working directory), into a path on the boot volume. Paths under /proc,
// /sys and /dev, which the runtime and the os package probe, do not exist.
func volumePath(p []byte) ([]byte, bool) {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	for _, prefix := range [...]string{"proc", "sys", "dev", "etc"} {
		if len(p) >= len(prefix) && string(p[:len(prefix)]) == prefix && (len(p) == len(prefix) || p[len(prefix)] == '/') {
			return nil, false
		}
	}
	return p, true
}

func sysOpenat(r *PtRegs) int64 {
	var buf [256]byte
	path, errno := atPath(int64(r.DI), r.SI, buf[:])
	if errno != 0 {
		return errno
	}
	return openPath(path, uint32(r.DX))
}

// atPath copies the path of an *at call (dirfd, the path's user address)
// into buf: -EFAULT when it cannot be read, -ENOENT when it is empty or
// relative to a directory other than the current one (there is one
// directory tree, the boot volume's, and no descriptor names another).
func atPath(dirfd int64, addr uint64, buf []byte) ([]byte, int64) {
	path, ok := userPath(addr, buf)
	if !ok {
		return nil, -linuxabi.EFAULT
	}
	if len(path) == 0 || path[0] != '/' && dirfd != AT_FDCWD {
		return nil, -linuxabi.ENOENT
	}
	return path, 0
}

func openPath(path []byte, flags uint32) int64 {
	p, ok := volumePath(path)
	if !ok {
		return -linuxabi.ENOENT
	}
	acc := flags & linuxabi.O_ACCMODE
	if flags&(linuxabi.O_CREAT|linuxabi.O_EXCL) == linuxabi.O_CREAT|linuxabi.O_EXCL {
		if file, _, s := efi.OpenFile(p, false, false, false); !s.Error() {
			efi.CloseFile(file)
			return -linuxabi.EEXIST
		}
	}
	file, dir, s := efi.OpenFile(p, acc != linuxabi.O_RDONLY, flags&linuxabi.O_CREAT != 0, flags&linuxabi.O_TRUNC != 0)
	if s.Error() {
		return errnoOf(s)
	}
	if flags&linuxabi.O_DIRECTORY != 0 && !dir {
		efi.CloseFile(file)
		return -linuxabi.ENOTDIR
	}
	kind := uint8(fdFile)
	if dir {
		kind = fdDir
	}
	fd, f := newFD(kind, flags)
	if f == nil {
		efi.CloseFile(file)
		return -linuxabi.EMFILE
	}
	f.file = file
	f.ino = pathIno(p)
	return int64(fd)
}

// mkdirat: dirfd in DI, the path in SI, the mode in DX (ignored: FAT has
// no permissions). The parent must exist (ENOENT); an existing name is
// EEXIST; a read-only medium EROFS; a full volume ENOSPC.
func sysMkdirat(r *PtRegs) int64 {
	var buf [256]byte
	path, errno := atPath(int64(r.DI), r.SI, buf[:])
	if errno != 0 {
		return errno
	}
	p, ok := volumePath(path)
	if !ok || len(p) == 0 {
		return -linuxabi.EEXIST // "/", or a directory that does not exist here
	}
	if file, _, s := efi.OpenFile(p, false, false, false); !s.Error() {
		efi.CloseFile(file)
		return -linuxabi.EEXIST
	}
	return errnoOf(efi.MakeDir(p))
}

// fsync: fd in DI. A file on the boot volume is flushed to the device
// (efi.FlushFile); the console and the other kinds have nothing to flush.
func sysFsync(r *PtRegs) int64 {
	f := getFD(r.DI)
	if f == nil {
		return -linuxabi.EBADF
	}
	if f.kind != fdFile {
		return 0
	}
	return errnoOf(efi.FlushFile(f.file))
}

// errnoOf turns a firmware file status into a system call's result: 0 or
// the Linux errno Linux gives for the same condition.
func errnoOf(s efi.Status) int64 {
	switch {
	case !s.Error():
		return 0
	case s == efi.NotFound:
		return -linuxabi.ENOENT
	case s == efi.WriteProtected:
		return -linuxabi.EROFS
	case s == efi.VolumeFull:
		return -linuxabi.ENOSPC
	case s == efi.AccessDenied:
		return -linuxabi.EPERM
	case s == efi.Unsupported:
		return -linuxabi.ENODEV // no file system on the device ptilab was loaded from
	}
	return -linuxabi.EIO
}

// pathIno makes an inode number for a path on the boot volume: FNV-1a of
// the path folded to lower case (FAT names are case-insensitive), so that
// os.SameFile tells files apart. Never 0.
func pathIno(p []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range p {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h | 1
}

// struct stat for x86-64 (arch/x86/include/uapi/asm/stat.h): 144 bytes.
const (
	statSize    = 144
	statDev     = 0
	statIno     = 8
	statMode    = 24
	statNlink   = 16
	statSizeOff = 48
	statBlksize = 56
	statBlocks  = 64
)

func fillStat(f *fileDesc, st uint64) int64 {
	if !userRange(st, statSize, true) {
		return -linuxabi.EFAULT
	}
	b := userBytes(st, statSize)
	clear(b)
	var mode, size uint64
	switch f.kind {
	case fdConsole:
		mode = linuxabi.S_IFCHR | 0o620
	case fdDir:
		mode = linuxabi.S_IFDIR | 0o755
	case fdFile:
		mode = linuxabi.S_IFREG | 0o644
		n, s := efi.FileSize(f.file)
		if s.Error() {
			return -linuxabi.EIO
		}
		size = n
	default:
		mode = 0o600 // anonymous inode
	}
	ino := f.ino
	if ino == 0 {
		ino = uint64(addr(f)-addr(&fds[0]))/uint64(unsafe.Sizeof(fds[0])) + 1 // console, eventfd, epoll: one per descriptor
	}
	store64(st+statDev, 1)
	store64(st+statIno, ino)
	store64(st+statNlink, 1)
	store32(st+statMode, uint32(mode))
	store64(st+statSizeOff, size)
	store64(st+statBlksize, 4096)
	store64(st+statBlocks, (size+511)/512)
	return 0
}

func sysFstat(r *PtRegs) int64 {
	f := getFD(r.DI)
	if f == nil {
		return -linuxabi.EBADF
	}
	return fillStat(f, r.SI)
}

func sysNewfstatat(r *PtRegs) int64 {
	dirfd, st, flags := int64(r.DI), r.DX, r.R10
	var buf [256]byte
	path, ok := userPath(r.SI, buf[:])
	if !ok {
		return -linuxabi.EFAULT
	}
	if len(path) == 0 {
		if flags&AT_EMPTY_PATH == 0 || dirfd < 0 {
			return -linuxabi.ENOENT
		}
		f := getFD(uint64(dirfd))
		if f == nil {
			return -linuxabi.EBADF
		}
		return fillStat(f, st)
	}
	if path[0] != '/' && dirfd != AT_FDCWD {
		return -linuxabi.ENOENT
	}
	fd := openPath(path, linuxabi.O_RDONLY)
	if fd < 0 {
		return fd
	}
	ret := fillStat(&fds[fd], st)
	efi.CloseFile(fds[fd].file)
	fds[fd] = fileDesc{}
	return ret
}

// eventfd and epoll (include/uapi/linux/eventpoll.h).
const (
	epollEvSize = 12 // struct epoll_event is packed on x86-64
)

func sysEventfd2(r *PtRegs) int64 {
	fd, f := newFD(fdEventfd, uint32(r.SI)|linuxabi.O_RDWR)
	if f == nil {
		return -linuxabi.EMFILE
	}
	f.count = r.DI
	return int64(fd)
}

func sysEpollCreate1(r *PtRegs) int64 {
	fd, f := newFD(fdEpoll, uint32(r.DI)|linuxabi.O_RDWR)
	if f == nil {
		return -linuxabi.EMFILE
	}
	return int64(fd)
}

func sysEpollCtl(r *PtRegs) int64 {
	ep, op, fd, ev := getFD(r.DI), r.SI, int32(r.DX), r.R10
	if ep == nil || ep.kind != fdEpoll {
		return -linuxabi.EBADF
	}
	target := getFD(uint64(fd))
	if target == nil {
		return -linuxabi.EBADF
	}
	if target.kind != fdEventfd {
		return -linuxabi.EPERM // as Linux answers for regular files: not pollable
	}
	idx := -1
	for i := 0; i < ep.nitems; i++ {
		if ep.items[i].fd == fd {
			idx = i
		}
	}
	switch op {
	case linuxabi.EPOLL_CTL_ADD, linuxabi.EPOLL_CTL_MOD:
		if op == linuxabi.EPOLL_CTL_ADD && idx >= 0 {
			return -linuxabi.EEXIST
		}
		if op == linuxabi.EPOLL_CTL_MOD && idx < 0 {
			return -linuxabi.ENOENT
		}
		if !userRange(ev, epollEvSize, false) {
			return -linuxabi.EFAULT
		}
		if idx < 0 {
			if ep.nitems == maxEpollItems {
				return -linuxabi.ENOSPC
			}
			idx = ep.nitems
			ep.nitems++
		}
		ep.items[idx] = epollItem{fd: fd, events: load32(ev), data: load64(ev + 4)}
	case linuxabi.EPOLL_CTL_DEL:
		if idx < 0 {
			return -linuxabi.ENOENT
		}
		ep.nitems--
		ep.items[idx] = ep.items[ep.nitems]
	default:
		return -linuxabi.EINVAL
	}
	return 0
}

// sysEpollPwait reports the watched eventfds that are readable; with none
// it waits for one, or for the timeout in milliseconds (-1: none).
func sysEpollPwait(r *PtRegs) int64 {
	ep, events, maxevents, timeout := getFD(r.DI), r.SI, int64(r.DX), int64(int32(r.R10))
	if ep == nil || ep.kind != fdEpoll {
		return -linuxabi.EBADF
	}
	if maxevents <= 0 {
		return -linuxabi.EINVAL
	}
	if !userRange(events, uint64(maxevents)*epollEvSize, true) {
		return -linuxabi.EFAULT
	}
	n := int64(0)
	for i := 0; i < ep.nitems && n < maxevents; i++ {
		it := &ep.items[i]
		if it.events&linuxabi.EPOLLIN != 0 && fds[it.fd].count > 0 {
			store32(events+uint64(n)*epollEvSize, linuxabi.EPOLLIN)
			store64(events+uint64(n)*epollEvSize+4, it.data)
			n++
		}
	}
	if n > 0 || timeout == 0 {
		return n
	}
	var deadline uint64
	if timeout > 0 {
		deadline = deadlineAfter(timeout * 1e6)
	}
	sched.block(waitPoll, r.DI, deadline, 0)
	return 0
}

// unwatch removes fd from every epoll instance, as closing its last
// descriptor does on Linux.
func unwatch(fd int32) {
	for i := range fds {
		ep := &fds[i]
		for j := 0; ep.kind == fdEpoll && j < ep.nitems; j++ {
			if ep.items[j].fd == fd {
				ep.nitems--
				ep.items[j] = ep.items[ep.nitems]
				j--
			}
		}
	}
}

// wakePollers wakes the threads waiting in epoll_pwait on an instance that
// watches fd; they re-execute the call and collect the event.
func wakePollers(fd uint64) {
	for i := range fds {
		ep := &fds[i]
		if ep.kind != fdEpoll {
			continue
		}
		for j := 0; j < ep.nitems; j++ {
			if uint64(ep.items[j].fd) == fd {
				sched.wake(waitPoll, uint64(i), maxThreads)
			}
		}
	}
}
