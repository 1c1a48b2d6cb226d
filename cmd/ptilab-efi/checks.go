package main

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/goos"
)

// The self-checks: does the stock Go runtime work on bare metal? Each
// exercises one part of the personality (threads and futexes, memory,
// time) through ordinary Go.

func runChecks(r *bench.Reporter) {
	checkGoroutines(r)
	checkMaps(r)
	checkFmt(r)
	checkSegments(r)
	checkSleep(r)
	checkAlloc(r)
	checkGC(r)
	checkMmap(r)
	checkPreempt(r)
}

// checkGoroutines runs 8 workers that sum disjoint ranges and send their
// sums on a channel, and a ping-pong of 1000 messages over two unbuffered
// channels.
func checkGoroutines(r *bench.Reporter) {
	const workers, per = 8, 100000
	sums := make(chan uint64)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var s uint64
			for i := w * per; i < (w+1)*per; i++ {
				s += uint64(i)
			}
			sums <- s
		}(w)
	}
	go func() { wg.Wait(); close(sums) }()
	var total uint64
	for s := range sums {
		total += s
	}
	const n = workers * per
	want := uint64(n) * (n - 1) / 2

	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(pong)
	}()
	v := 0
	for i := 0; i < 1000; i++ {
		ping <- v
		v = <-pong
	}
	close(ping)
	ok := total == want && v == 1000
	r.Check("goroutines", ok, fmt.Sprintf("8 workers summed %d (want %d); 1000 ping-pongs reached %d", total, want, v),
		map[string]any{"sum": total, "want": want, "pingpong": v, "goroutines_after": runtime.NumGoroutine()})
}

// checkMaps fills a map with 100000 keys, deletes the odd ones and checks
// what is left.
func checkMaps(r *bench.Reporter) {
	m := map[int]string{}
	for i := 0; i < 100000; i++ {
		m[i] = fmt.Sprint(i * 3)
	}
	for i := 1; i < 100000; i += 2 {
		delete(m, i)
	}
	bad := 0
	for k, v := range m {
		if k%2 != 0 || v != fmt.Sprint(k*3) {
			bad++
		}
	}
	ok := len(m) == 50000 && bad == 0
	r.Check("maps", ok, fmt.Sprintf("%d keys left of 100000 after deleting the odd ones, %d wrong", len(m), bad),
		map[string]any{"len": len(m), "wrong": bad})
}

// checkFmt formats integers, floats, strings and a struct.
func checkFmt(r *bench.Reporter) {
	type point struct{ X, Y int }
	got := fmt.Sprintf("%d|%x|%08.3f|%q|%v|%+v|%e", -42, 3054, math.Pi, "ptilab", []int{1, 2}, point{3, 4}, 6.02214076e23)
	const want = `-42|bee|0003.142|"ptilab"|[1 2]|{X:3 Y:4}|6.022141e+23`
	r.Check("fmt", got == want, fmt.Sprintf("%s", got), map[string]any{"got": got, "want": want})
}

// checkSegments checks that the Go program runs with null FS and GS
// selectors, as a Linux process does (the entry code nulls the firmware's
// before it writes the FS base): an IRETQ to ring 3 then leaves FS and its
// base alone.
func checkSegments(r *bench.Reporter) {
	fs, gs := amd64.FSGSSelectors()
	fw := efi.Entry
	r.Check("segments", fs == 0 && gs == 0,
		fmt.Sprintf("FS %#x GS %#x (the firmware's at entry: FS %#x GS %#x)", fs, gs, fw.FS, fw.GS),
		map[string]any{"fs": fs, "gs": gs, "firmware_fs": fw.FS, "firmware_gs": fw.GS})
}

// checkSleep sleeps 10 ms and measures the sleep with the TSC and, where
// there is one, with the ACPI PM timer, an independent clock: the sleep must
// last at least 10 ms by the TSC, and the two clocks must agree within 2% +
// 0.2 ms. Each end reads both clocks together (board.RefSample), so that a
// virtual CPU descheduled between two reads does not count against them.
func checkSleep(r *bench.Reporter) {
	const want = 10 * time.Millisecond
	bits := board.PMTimerBits()
	ref := func() uint64 { return 0 }
	if bits != 0 {
		ref = board.PMTimer
	}
	t0, pm0 := board.RefSample(ref)
	time.Sleep(want)
	t1, pm1 := board.RefSample(ref)
	tscNs := int64(goos.Clock().Nanoseconds(t1 - t0))
	fields := map[string]any{"requested_ns": want.Nanoseconds(), "tsc_ns": tscNs}
	detail := fmt.Sprintf("time.Sleep(10ms) took %.3f ms by the TSC", float64(tscNs)/1e6)
	ok := tscNs >= want.Nanoseconds()
	if bits != 0 {
		ticks := (pm1 - pm0) & (1<<bits - 1)
		pmNs := int64(ticks * 1e9 / board.PMTimerHz)
		fields["pmtimer_ns"] = pmNs
		diff := math.Abs(float64(tscNs - pmNs))
		ok = ok && diff <= 0.02*float64(pmNs)+2e5
		detail += fmt.Sprintf(", %.3f ms by the ACPI PM timer", float64(pmNs)/1e6)
	}
	r.Check("sleep", ok, detail, fields)
}

// checkAlloc allocates 64 MiB, writes every page and reads it back, and
// checks that the kernel backed the pages on first touch.
func checkAlloc(r *bench.Reporter) {
	const size = 64 << 20
	before := goos.Memory()
	b := make([]byte, size)
	for i := 0; i < size; i += 4096 {
		b[i] = byte(i >> 12)
	}
	bad := 0
	for i := 0; i < size; i += 4096 {
		if b[i] != byte(i>>12) {
			bad++
		}
	}
	after := goos.Memory()
	backed := after.PagesBacked - before.PagesBacked
	ok := bad == 0 && backed >= size/4096
	r.Check("alloc", ok, fmt.Sprintf("64 MiB written and read back (%d bad pages); %d pages backed on first touch; pool in use %d MiB",
		bad, backed, after.UsedBytes>>20),
		map[string]any{"bytes": size, "bad_pages": bad, "pages_backed": backed, "pool_used_bytes": after.UsedBytes})
	runtime.KeepAlive(b)
}

// checkGC runs the collector with the 64 MiB block unreachable, then returns
// free memory to the kernel, which must take frames back.
func checkGC(r *bench.Reporter) {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	before := goos.Memory()
	runtime.GC()
	debug.FreeOSMemory()
	runtime.ReadMemStats(&ms1)
	after := goos.Memory()
	released := after.PagesReleased - before.PagesReleased
	ok := ms1.NumGC > ms0.NumGC && ms1.HeapAlloc < ms0.HeapAlloc && ms1.HeapAlloc < 32<<20 && released > 0
	r.Check("gc", ok, fmt.Sprintf("%d collections; heap %d KiB -> %d KiB; %d pages returned to the kernel; pool in use %d MiB",
		ms1.NumGC-ms0.NumGC, ms0.HeapAlloc>>10, ms1.HeapAlloc>>10, released, after.UsedBytes>>20),
		map[string]any{"num_gc": ms1.NumGC - ms0.NumGC, "heap_before": ms0.HeapAlloc, "heap_after": ms1.HeapAlloc,
			"pages_released": released, "pool_used_bytes": after.UsedBytes})
}

// checkMmap maps 1 MiB with mmap, writes it, makes it inaccessible and
// accessible again with mprotect (Linux keeps the contents), reads it back,
// and unmaps it: the system calls themselves, as a program would use them.
func checkMmap(r *bench.Reporter) {
	const size = 1 << 20
	detail, ok := func() (string, bool) {
		b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return fmt.Sprintf("mmap: %v", err), false
		}
		for i := 0; i < size; i += 4096 {
			b[i] = byte(i>>12) | 1
		}
		if err := syscall.Mprotect(b, syscall.PROT_NONE); err != nil {
			return fmt.Sprintf("mprotect(PROT_NONE): %v", err), false
		}
		if err := syscall.Mprotect(b, syscall.PROT_READ); err != nil {
			return fmt.Sprintf("mprotect(PROT_READ): %v", err), false
		}
		bad := 0
		for i := 0; i < size; i += 4096 {
			if b[i] != byte(i>>12)|1 {
				bad++
			}
		}
		if err := syscall.Munmap(b); err != nil {
			return fmt.Sprintf("munmap: %v", err), false
		}
		return fmt.Sprintf("1 MiB mapped, written, protected none then read, %d pages lost their contents, unmapped", bad), bad == 0
	}()
	r.Check("mmap", ok, detail, nil)
}

// spinStep is a call the compiler cannot inline, so that the busy loop of
// checkPreempt has the function prologues where the runtime preempts.
//
//go:noinline
func spinStep(i int) int { return i*7 + 1 }

// checkPreempt spins in one goroutine until another has run. With one P
// the other runs only if the runtime preempts the spinning goroutine, which
// its sysmon thread does after 10 ms, and sysmon runs only if the kernel
// gives it the CPU while the spinning thread keeps it: the time slice.
func checkPreempt(r *bench.Reporter) {
	var ran atomic.Bool
	t0 := time.Now()
	go ran.Store(true)
	x := 0
	for !ran.Load() && time.Since(t0) < 2*time.Second {
		x = spinStep(x)
	}
	waited := time.Since(t0)
	r.Check("preempt", ran.Load(), fmt.Sprintf("a busy goroutine was preempted after %.1f ms", float64(waited.Microseconds())/1e3),
		map[string]any{"waited_ns": waited.Nanoseconds()})
}
