package qemu

import (
	"bufio"
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMonitor dials a socket that appears only after the first attempt,
// sends two commands and closes; the server's prompts are drained.
func TestMonitor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mon")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got := make(chan []string, 1)
	go func() {
		time.Sleep(3 * monitorRetry)
		l, err := net.Listen("unix", path)
		if err != nil {
			got <- []string{err.Error()}
			return
		}
		defer l.Close()
		c, err := l.Accept()
		if err != nil {
			got <- []string{err.Error()}
			return
		}
		defer c.Close()
		var lines []string
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			c.Write([]byte("(qemu) ")) // the prompt QEMU writes back
		}
		got <- lines
	}()
	m, err := DialMonitor(ctx, path)
	require.NoError(t, err)
	require.NoError(t, m.Command("nmi"))
	require.NoError(t, m.Command("info registers"))
	require.NoError(t, m.Close())
	assert.Equal(t, []string{"nmi", "info registers"}, <-got)
}

func TestMonitorGivesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*monitorRetry)
	defer cancel()
	_, err := DialMonitor(ctx, filepath.Join(t.TempDir(), "none"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
