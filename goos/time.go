package goos

import (
	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/board"
	"github.com/ptilab/ptilab/efi"
	"github.com/ptilab/ptilab/linuxabi"
)

// Time: the TSC is the clock. Its frequency comes from CPUID where the CPU
// enumerates it (leaf 15H, with the SDM's crystal clock of the model where
// the leaf leaves it out), always cross-checked against the ACPI PM timer
// and the HPET, measured together over half a second (against the PIT
// where neither gives a figure); the measurement is taken when there is no
// CPUID figure or the two disagree. CLOCK_MONOTONIC counts from boot;
// CLOCK_REALTIME adds the firmware's real-time clock read at boot.

var clock struct {
	tsc          amd64.TSCClock
	choice       board.TSCChoice
	leaves       amd64.TSCLeaves
	entryTSC     uint64 // TSC at the image's entry point (boot's first step)
	runtimeTSC   uint64 // TSC when boot handed over to the runtime
	bootTSC      uint64 // TSC when the clock started
	realtimeBase int64  // Unix time at bootTSC, in ns
	rtcOK        bool
}

// pitCalibrationMs is the PIT's one-shot: 50 ms, as Linux's
// pit_calibrate_tsc (the count is 16 bits: at most 54 ms).
const pitCalibrationMs = 50

// initClock determines the TSC frequency and reads the real-time clock.
// It returns false when no method gave a frequency; every wait in it is
// bounded by board.CalBound TSC cycles.
func initClock() bool {
	clock.leaves = amd64.ReadTSCLeaves()
	cpuid := board.CPUIDTSC(clock.leaves)
	cal := board.Calibrator{TSC: amd64.TSCEndL, Bound: board.CalBound}
	var pm, hpet board.RefCounter
	if board.FindPMTimer() != 0 {
		pm = board.PMCounter()
	}
	h := board.FindHPET()
	if h.Why == board.HPETOK {
		hpet = board.HPETCounter(h.PeriodFs)
	}
	m := cal.Measure(pm, hpet, board.PIT(), pitCalibrationMs)
	h.Restored = board.StopHPET()
	clock.choice = board.ChooseTSC(cpuid, m)
	clock.choice.HPET = h
	if clock.choice.Hz == 0 {
		return false
	}
	hz := clock.choice.Hz
	clock.tsc = amd64.NewTSCClock(hz)
	sliceCycles = clock.tsc.Cycles(timeSlice)
	clock.bootTSC = amd64.RDTSC()
	if t, s := efi.GetTime(); !s.Error() {
		clock.realtimeBase = unixNano(t)
		clock.rtcOK = true
	}
	return true
}

// clockFailed prints why no TSC frequency was found.
func clockFailed() {
	var l kline
	l.s("ptilab: boot failed: no TSC frequency: CPUID leaf 15H gives none")
	if clock.choice.CPUID.Rejected {
		l.s(" (its figure lies outside CPUID.16H's base frequency by more than 2%)")
	}
	r := clock.choice.Refs
	l.s("; ACPI PM timer: ").s(r.PM.Err.String()).s("; HPET: ")
	if clock.choice.HPET.Why != board.HPETOK {
		l.s(clock.choice.HPET.Why.String())
	} else {
		l.s(r.HPET.Err.String())
	}
	l.s("; PIT: ").s(r.PIT.Err.String()).s(" (").udec(uint64(r.PITRetries)).s(" retries)").flush()
}

// unixNano converts an EFI_TIME to nanoseconds since the Unix epoch. A
// time with a time zone is local time = UTC - TimeZone minutes (UEFI 2.10,
// 8.3.1); an unspecified zone (2047) is taken as UTC.
func unixNano(t efi.Time) int64 {
	days := daysFromCivil(int64(t.Year), int64(t.Month), int64(t.Day))
	s := days*86400 + int64(t.Hour)*3600 + int64(t.Minute)*60 + int64(t.Second)
	if t.TimeZone != 2047 {
		s += int64(t.TimeZone) * 60
	}
	return s*1e9 + int64(t.Nanosecond)
}

// daysFromCivil returns the days from 1970-01-01 to the given proleptic
// Gregorian date (H. Hinnant's days_from_civil algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// Monotonic returns nanoseconds since the clock started.
func Monotonic() int64 {
	return int64(clock.tsc.Nanoseconds(amd64.RDTSC() - clock.bootTSC))
}

// SinceEntry returns the nanoseconds since the image's entry point and how
// long boot took, from the entry point to the runtime's first instruction.
func SinceEntry() (since, boot int64) {
	return int64(clock.tsc.Nanoseconds(amd64.RDTSC() - clock.entryTSC)),
		int64(clock.tsc.Nanoseconds(clock.runtimeTSC - clock.entryTSC))
}

// deadlineAfter returns the TSC value ns nanoseconds from now (ns > 0); a
// time too far away for 64 bits of TSC saturates to the largest deadline.
func deadlineAfter(ns int64) uint64 {
	now := amd64.RDTSC()
	c, ok := clock.tsc.CyclesSat(uint64(ns))
	if !ok || now+c < now {
		return ^uint64(0)
	}
	return now + max(c, 1)
}

func sysClockGettime(r *PtRegs) int64 {
	ts := r.SI
	var ns int64
	switch r.DI {
	case linuxabi.CLOCK_REALTIME, linuxabi.CLOCK_REALTIME_COARSE, linuxabi.CLOCK_TAI:
		ns = clock.realtimeBase + Monotonic()
	case linuxabi.CLOCK_MONOTONIC, linuxabi.CLOCK_MONOTONIC_RAW, linuxabi.CLOCK_MONOTONIC_COARSE, linuxabi.CLOCK_BOOTTIME,
		linuxabi.CLOCK_PROCESS_CPUTIME_ID, linuxabi.CLOCK_THREAD_CPUTIME_ID:
		ns = Monotonic()
	default:
		return -linuxabi.EINVAL
	}
	if !userRange(ts, 16, true) {
		return -linuxabi.EFAULT
	}
	store64(ts, uint64(ns/1e9))
	store64(ts+8, uint64(ns%1e9))
	return 0
}

func sysClockGetres(r *PtRegs) int64 {
	if r.DI > linuxabi.CLOCK_TAI {
		return -linuxabi.EINVAL
	}
	if ts := r.SI; ts != 0 {
		if !userRange(ts, 16, true) {
			return -linuxabi.EFAULT
		}
		store64(ts, 0)
		store64(ts+8, 1)
	}
	return 0
}
