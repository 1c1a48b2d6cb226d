// Command ptilab-linux32 is the 32-bit half of `ptilab linux`: built with
// GOARCH=386 (make builds build/ptilab-linux386), it times getppid through
// the 64-bit kernel's compat entries, INT 0x80 and __kernel_vsyscall
// (SYSENTER on Intel), and prints the raw TSC counts as one JSON object
// (timed.Result) for the 64-bit runner (host/linuxrun), which turns them into
// records. It is not meant to be run by hand.
//
// Usage: ptilab-linux32 -entry int80|vsyscall -n CALLS -reps REPEATS
//
// Exit status: 0 with a Result on stdout (its Error set where the entry
// could not be timed), 2 on a usage error.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/ptilab/ptilab/host/linuxrun/timed"
)

func main() {
	entry := flag.String("entry", "int80", "int80 (INT 0x80) or vsyscall (CALL __kernel_vsyscall)")
	n := flag.Int("n", 1000, "calls per repeat")
	reps := flag.Int("reps", 12, "repeats, warm-up included")
	flag.Parse()
	e, ok := map[string]timed.Entry{"int80": timed.Native, "vsyscall": timed.Vsyscall}[*entry]
	if !ok || *n < 1 || *reps < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	runtime.LockOSThread()
	res := timed.Result{Arch: runtime.GOARCH, PPid: os.Getppid()}
	if err := measure(&res, e, uintptr(*n), *reps); err != nil {
		res.Error = err.Error()
	}
	b, _ := json.Marshal(res)
	fmt.Printf("%s\n", b)
}

// measure times reps repeats of n getppid calls by e, each followed by
// the empty loop.
func measure(res *timed.Result, e timed.Entry, n uintptr, reps int) error {
	var fn uintptr
	if e == timed.Vsyscall {
		var err error
		if fn, err = timed.KernelVsyscall(); err != nil {
			return err
		}
	}
	nr := uintptr(syscall.SYS_GETPPID)
	for range reps {
		c, ret, err := timed.Syscalls(e, fn, nr, 0, 0, 0, n)
		if err != nil {
			return err
		}
		empty, _, _ := timed.Syscalls(timed.Empty, 0, nr, 0, 0, 0, n)
		res.Calls, res.Empty, res.Ret = append(res.Calls, c), append(res.Empty, empty), int64(int32(ret))
	}
	return nil
}
