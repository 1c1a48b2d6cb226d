package linuxrun

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The environment by which the runner starts itself as a worker process
// of the ping-pong or sched-messaging (a fork and exec of its own
// program, the only fork Go has): the role, its numbers, and the CPU to
// pin to ("" for none). The worker's descriptors start at 3 (exec.Cmd's
// ExtraFiles), in the order each role's function takes them.
const (
	envRole = "PTILAB_LINUX_WORKER"
	envArgs = "PTILAB_LINUX_WORKER_ARGS"
	envCPU  = "PTILAB_LINUX_WORKER_CPU"
)

// MaybeWorker runs the worker the environment names and exits, or
// returns at once when it names none. A program that runs `ptilab
// linux` (cmd/ptilab, and the tests' binaries, in TestMain) calls it
// first thing.
func MaybeWorker() {
	role := os.Getenv(envRole)
	if role == "" {
		return
	}
	runtime.LockOSThread()
	err := runWorker(role, os.Getenv(envArgs), os.Getenv(envCPU))
	if err != nil {
		fmt.Fprintf(os.Stderr, "ptilab linux worker %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runWorker runs role with its numbers args ("a,b,c"), pinned to cpu.
func runWorker(role, args, cpu string) error {
	if cpu != "" {
		n, err := strconv.Atoi(cpu)
		if err != nil {
			return err
		}
		if err := pinTo(n); err != nil {
			return err
		}
	}
	var nums []int
	for _, f := range strings.FieldsFunc(args, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("argument %q: %w", f, err)
		}
		nums = append(nums, n)
	}
	need := map[string]int{"pingpong": 0, "send": 3, "recv": 2}
	if n, ok := need[role]; !ok || len(nums) != n {
		return fmt.Errorf("unknown role or wrong arguments %q", args)
	}
	switch role {
	case "pingpong":
		_, err := ponger(3, 4)
		return err
	case "send":
		outs := make([]int, MsgPerGroup)
		for i := range outs {
			outs[i] = 5 + i
		}
		return sender(3, 4, outs, nums[0], nums[1], nums[2])
	default:
		return receiver(3, 4, 5, 6, nums[0], nums[1])
	}
}

// checkCPU checks that the process may run on CPU n (the plan's cpu; -1:
// none), before any worker needs it.
func checkCPU(n int) error {
	var set unix.CPUSet
	if n < 0 {
		return nil
	}
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return err
	}
	if !set.IsSet(n) {
		var cpus []string
		for i := range 8 * int(unsafe.Sizeof(set)) {
			if set.IsSet(i) {
				cpus = append(cpus, strconv.Itoa(i))
			}
		}
		return fmt.Errorf("cpu: CPU %d is not one this process may run on (%s)", n, strings.Join(cpus, ", "))
	}
	return nil
}

// pinTo pins the calling thread to CPU n.
func pinTo(n int) error {
	var set unix.CPUSet
	set.Set(n)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning to CPU %d: %w", n, err)
	}
	return nil
}

// ponger answers the ping-pong: a byte read from in is written back to
// out, until in ends; it returns the thread's context switches
// (getrusage RUSAGE_THREAD, voluntary and involuntary).
func ponger(in, out int) (uint64, error) {
	var b [1]byte
	for {
		n, err := unix.Read(in, b[:])
		if n == 0 && err == nil {
			return threadSwitches(), nil
		}
		if err != nil {
			return 0, err
		}
		if err := writeAll(out, b[:]); err != nil {
			return 0, err
		}
	}
}

// threadSwitches returns the calling thread's context switches.
func threadSwitches() uint64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return uint64(ru.Nvcsw + ru.Nivcsw)
}

// processSwitches returns the process's context switches, its threads'
// together.
func processSwitches() uint64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return uint64(ru.Nvcsw + ru.Nivcsw)
}

// writeAll writes b to fd, resuming short writes (stream sockets).
func writeAll(fd int, b []byte) error { return transfer(fd, b, unix.Write) }

// readFull reads len(b) bytes from fd, resuming short reads.
func readFull(fd int, b []byte) error { return transfer(fd, b, unix.Read) }

// transfer moves all of b through op (unix.Read or unix.Write), resuming
// short transfers and EINTR; a transfer of nothing (a read at the end of
// the file) is io.ErrUnexpectedEOF.
func transfer(fd int, b []byte, op func(int, []byte) (int, error)) error {
	for len(b) > 0 {
		n, err := op(fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n == 0:
			return io.ErrUnexpectedEOF
		}
		b = b[n:]
	}
	return nil
}

// ready says a worker is ready (a byte on ready, as perf's
// sched-messaging) and waits for the start signal: wakeup readable
// (perf: poll on the wakeup pipe; tools/perf/bench/sched-messaging.c).
func ready(readyFd, wakeup int) error {
	if err := writeAll(readyFd, []byte{0}); err != nil {
		return err
	}
	fds := []unix.PollFd{{Fd: int32(wakeup), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err != unix.EINTR {
			return err
		}
	}
}

// message fills m with sender id's message of loop l: its first 8 bytes
// the word id<<32 | l, which receivers sum (the checksum), the rest the
// byte id.
func message(m []byte, id, l int) {
	binary.LittleEndian.PutUint64(m, uint64(id)<<32|uint64(l))
	for i := 8; i < len(m); i++ {
		m[i] = byte(id)
	}
}

// sender is a sched-messaging sender (perf's sender): when started, it
// writes loops messages of size bytes to each receiver of its group
// (outs), loop by loop.
func sender(readyFd, wakeup int, outs []int, loops, size, id int) error {
	if err := ready(readyFd, wakeup); err != nil {
		return err
	}
	m := make([]byte, size)
	for l := range loops {
		message(m, id, l)
		for _, fd := range outs {
			if err := writeAll(fd, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// receiver is a sched-messaging receiver (perf's receiver): when started,
// it reads want messages of size bytes from in, and writes its count and
// the sum of their first words (16 bytes) to result.
func receiver(readyFd, wakeup, in, result, want, size int) error {
	if err := ready(readyFd, wakeup); err != nil {
		return err
	}
	m := make([]byte, size)
	var count, sum uint64
	for range want {
		if err := readFull(in, m); err != nil {
			return fmt.Errorf("after %d messages: %w", count, err)
		}
		count++
		sum += binary.LittleEndian.Uint64(m)
	}
	var r [16]byte
	binary.LittleEndian.PutUint64(r[:], count)
	binary.LittleEndian.PutUint64(r[8:], sum)
	return writeAll(result, r[:])
}
