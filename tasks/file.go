package tasks

// Files: kernel objects with a size and a position, for lseek. A task's
// descriptors 3 and up name them.

// maxFiles bounds the open files.
const maxFiles = 16

// file is an open file description.
type file struct {
	open bool
	pos  int64 // bytes from the start
	size int64 // bytes
}

var files [maxFiles]file

// firstFD is the first descriptor of a file: 0-2 are the standard streams
// a Linux process starts with.
const firstFD = 3

// OpenFile makes an open file of size bytes and returns its descriptor,
// or -1 when none is free. Go code calls it to set a task up.
func OpenFile(size int64) int {
	for i := range files {
		if !files[i].open {
			files[i] = file{open: true, size: size}
			return i + firstFD
		}
	}
	return -1
}

// CloseFiles closes every file.
func CloseFiles() { files = [maxFiles]file{} }

// lseek whence values (include/uapi/linux/fs.h).
const (
	SEEK_SET = 0
	SEEK_CUR = 1
	SEEK_END = 2
)

// lseek moves descriptor fd's position (man 2 lseek).
func lseek(fd uint64, off int64, whence uint64) int64 {
	if fd < firstFD || fd >= firstFD+maxFiles || !files[fd-firstFD].open {
		return -EBADF
	}
	f := &files[fd-firstFD]
	var base int64
	switch whence {
	case SEEK_SET:
	case SEEK_CUR:
		base = f.pos
	case SEEK_END:
		base = f.size
	default:
		return -EINVAL
	}
	if base+off < 0 || (off > 0 && base+off < base) {
		return -EINVAL
	}
	f.pos = base + off
	return f.pos
}
