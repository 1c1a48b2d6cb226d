package qemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Monitor is a connection to QEMU's human monitor on a Unix socket
// (Options.Monitor). QEMU's replies are read and dropped, so that its
// output never fills the socket.
type Monitor struct {
	conn net.Conn
}

// monitorRetry is how often DialMonitor tries again while QEMU has not
// created the socket yet.
const monitorRetry = 50 * time.Millisecond

// DialMonitor connects to the monitor socket at path, trying again until
// QEMU has created it or ctx ends.
func DialMonitor(ctx context.Context, path string) (*Monitor, error) {
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			go io.Copy(io.Discard, conn) // ends when the connection closes
			return &Monitor{conn: conn}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("qemu: monitor %s: %w", path, errors.Join(ctx.Err(), err))
		case <-time.After(monitorRetry):
		}
	}
}

// Command sends one monitor command line (e.g. "nmi": inject an NMI into
// every CPU).
func (m *Monitor) Command(cmd string) error {
	if _, err := io.WriteString(m.conn, cmd+"\n"); err != nil {
		return fmt.Errorf("qemu: monitor command %q: %w", cmd, err)
	}
	return nil
}

// Close closes the connection; QEMU keeps running.
func (m *Monitor) Close() error { return m.conn.Close() }
