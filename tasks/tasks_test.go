package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLseek(t *testing.T) {
	CloseFiles()
	t.Cleanup(CloseFiles)
	fd := OpenFile(1000)
	require.Equal(t, firstFD, fd)
	lseek := func(off int64, whence uint64) int64 {
		return Syscall(SysLseek, uint64(fd), uint64(off), whence, 0, 0, 0)
	}
	assert.Equal(t, int64(100), lseek(100, SEEK_SET))
	assert.Equal(t, int64(150), lseek(50, SEEK_CUR))
	assert.Equal(t, int64(140), lseek(-10, SEEK_CUR))
	assert.Equal(t, int64(1000), lseek(0, SEEK_END))
	assert.Equal(t, int64(1200), lseek(200, SEEK_END), "past the end is allowed")
	assert.Equal(t, int64(0), lseek(0, SEEK_SET))
	assert.Equal(t, int64(-EINVAL), lseek(-1, SEEK_SET), "a negative position")
	assert.Equal(t, int64(-EINVAL), lseek(0, 3), "an unknown whence")
	assert.Equal(t, int64(0), lseek(0, SEEK_CUR), "a failed call leaves the position")
	assert.Equal(t, int64(1<<62), lseek(1<<62, SEEK_SET))
	assert.Equal(t, int64(-EINVAL), lseek(1<<62, SEEK_CUR), "the position would overflow")
	assert.Equal(t, int64(1<<62), lseek(0, SEEK_CUR))
	assert.Equal(t, int64(-EBADF), Syscall(SysLseek, 2, 0, 0, 0, 0, 0), "stderr is no file here")
	assert.Equal(t, int64(-EBADF), Syscall(SysLseek, uint64(fd+1), 0, 0, 0, 0, 0), "not open")
	assert.Equal(t, int64(-ENOSYS), Syscall(999, 0, 0, 0, 0, 0, 0))
}

func TestOpenFileExhausted(t *testing.T) {
	CloseFiles()
	t.Cleanup(CloseFiles)
	for i := 0; i < maxFiles; i++ {
		assert.Equal(t, firstFD+i, OpenFile(0))
	}
	assert.Equal(t, -1, OpenFile(0))
}
