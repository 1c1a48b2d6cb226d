package tasks

import "github.com/ptilab/ptilab/linuxabi"

// Files: kernel objects with a size and a position, for lseek.

// maxFiles bounds the open files.
const maxFiles = 16

// file is an open file description.
type file struct {
	refs int16 // descriptors that name it
	pos  int64 // bytes from the start
	size int64 // bytes
}

var files [maxFiles]file

func resetFiles() { files = [maxFiles]file{} }

// firstFD is the first descriptor OpenFile gives: 0-2 are the standard
// streams of a Linux process.
const firstFD = 3

// OpenFile opens a file of size bytes as the lowest free descriptor from 3
// up of process proc and returns the descriptor, or -1 when no file or
// descriptor is free. Go code calls it to set a run up.
func OpenFile(proc int, size int64) int {
	for fd := firstFD; proc >= 0 && proc < maxProcs && fd < int(procs[proc].nfds); fd++ {
		if fdFree(proc, fd) {
			if newFile(proc, fd, size) < 0 {
				return -1
			}
			return fd
		}
	}
	return -1
}

// newFile opens a file of size bytes as descriptor fd of process proc and
// returns the file's number, or -1 when no file is free or fd is not.
func newFile(proc, fd int, size int64) int {
	if !fdFree(proc, fd) {
		return -1
	}
	for i := range files {
		if files[i].refs == 0 {
			files[i] = file{refs: 1, size: size}
			procs[proc].fds()[fd] = int16(fileObjBase+i) + 1
			return i
		}
	}
	return -1
}

// lseek moves descriptor fd's position (man 2 lseek): EBADF for a
// descriptor that is not open, ESPIPE for a pipe, EINVAL for a bad whence
// or a position that would be negative or overflow.
func lseek(fd uint64, off int64, whence uint64) int64 {
	obj := object(fd)
	if obj < 0 {
		return -linuxabi.EBADF
	}
	if obj < fileObjBase || obj >= sockObjBase {
		return -linuxabi.ESPIPE // a pipe or a socket
	}
	f := &files[obj-fileObjBase]
	var base int64
	switch whence {
	case linuxabi.SEEK_SET:
	case linuxabi.SEEK_CUR:
		base = f.pos
	case linuxabi.SEEK_END:
		base = f.size
	default:
		return -linuxabi.EINVAL
	}
	if base+off < 0 || (off > 0 && base+off < base) {
		return -linuxabi.EINVAL
	}
	f.pos = base + off
	return f.pos
}
