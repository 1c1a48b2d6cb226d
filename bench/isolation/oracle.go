package isolation

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/cpustate"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/pti"
)

// Oracle is the leak oracle's registry row, with its keys.
var Oracle = bench.Benchmark{Name: "oracle", Summary: "the leak oracle: per mode a calibration of cached and flushed loads timed with RDTSCP, each after a getppid (the reloads after the fault pay the mode's page walks: each mode gets its own threshold), then per mode (and by FRED where the plan runs it) ring 3 reads a kernel secret (Meltdown: the page fault recovered, a transient load of a probe line, Flush+Reload) and counts the bytes recovered, and under asi, whose user table maps that secret (nonsensitive), a sensitive one too (user data in ASI's sensitive blocks, which it does not map); \"unavailable\" where cache timing is not observable (the emulators), where the secret is still read once per byte to show each mode's fault",
	Worlds: []int{64}, Keys: []string{"modes", "entries", oracleSamples.Name(), oracleAttempts.Name()}, Run: oracle, Optional: true}

// The leak oracle (Meltdown, Lipp et al., USENIX Security 2018, with
// Flush+Reload, Yarom and Falkner, USENIX Security 2014): does ring 3 read
// a kernel secret transiently under each 64-bit mode? The secret is a
// supervisor-only page of the kernel's (pti.KernelSecret, pti.SecretPattern):
// under off the one table maps it (a ring-3 read faults with P=1), under
// isolation the user table does not (P=0), but under asi it does: it is
// nonsensitive kernel data, which asi's user table maps as off's does. So
// under asi the oracle also reads a sensitive secret (pti.SensitiveSecret:
// a frame of the sensitive blocks, user data), which no isolated mode's
// user table maps (oracleSecrets). Ring 3 reads the secret, the read
// faults, the kernel returns to the program (pti.StartRecovering), and a
// transient load of a probe line chosen by the byte leaves it in the cache
// where a timed reload finds it.
//
// First the calibration, in each mode: the oracle's reloads follow a
// fault, a kernel entry and exit, whose CR3 writes under isolation without
// PCIDs empty the TLB, so each reload also walks the tables; the
// calibration's timed loads each follow a getppid for the same reason, in
// the mode's own address spaces, and each mode gets its own threshold. If
// a cached and a flushed line cannot be told apart by time (QEMU's TCG
// has no cache model, Bochs's TSC and QEMU's icount count instructions),
// the oracle is unavailable in that mode and says so; the secret is still
// read once per byte and mode, which checks the fault recovery and shows
// each mode's fault (P=1 or P=0). No figure here is a verdict on the CPU:
// the vulnerability table's meltdown line is printed beside it.

// The oracle process's data (offsets from pti.UserData): the hit counters
// (a quadword per line), the calibration's samples (hits, then misses),
// the calibration's line, and the probe array (pti.OracleLines lines
// pti.OracleStride apart).
const (
	oracleCounters   = 0
	oracleSamplesOff = 0x1000
	oracleCalLine    = 0x6000
	oracleProbe      = 0x8000
	oracleDataPages  = (oracleProbe + pti.OracleLines*pti.OracleStride) / amd64.PageSize
	// MaxOracleSamples is the most calibration samples the data holds.
	MaxOracleSamples = (oracleCalLine - oracleSamplesOff) / 16
)

// The oracle's plan keys: its calibration samples (each a hit and a
// miss) and its attempts per secret byte where cache timing is
// observable.
var (
	oracleSamples  = bench.IntKey("oracle_samples", 1000, 10, MaxOracleSamples)
	oracleAttempts = bench.IntKey("oracle_attempts", 100, 1, 1000)
)

// The calibration's verdicts.
const (
	oracleUnavailable = "oracle unavailable: cache timing not observable"
	oracleObservable  = "cache timing observable"
)

// oracleSecret is a secret the oracle reads: its page, how the user
// tables map it (as a probe target of kind: bench.TargetKind.Mapped), the
// Subject.Target of its rows and what its page is, in the records.
type oracleSecret struct {
	secret pti.Secret
	kind   bench.TargetKind
	target string
	page   string
}

// oracleSecrets are the oracle's secrets: the kernel's, whose rows name
// no target, and the sensitive one (oracleSecret.readIn says where each
// is read).
var oracleSecrets = []oracleSecret{
	{secret: pti.KernelSecret, kind: bench.KernelOnly,
		page: "a page of the kernel image's data (pti.SecretAddr), mapped supervisor-only by the Go kernel's table, on the kernel side of every mode; nonsensitive: the asi modes' user table maps it too"},
	{secret: pti.SensitiveSecret, kind: bench.Sensitive, target: "sensitive",
		page: "a frame of the sensitive blocks (goos.AllocSensitiveFrames: user data, as the processes' pages), mapped supervisor-only by the kernel's direct map; the asi modes' nonsensitive table leaves it out"},
}

// readIn reports whether the oracle reads s under mode: the kernel
// secret in every mode, another where mode's user table maps it otherwise
// than the kernel secret (the asi modes' maps the kernel's only: in the
// other modes both would give the same row).
func (s oracleSecret) readIn(mode experiment.Mode) bool {
	return s.kind == bench.KernelOnly || s.kind.Mapped(mode) != bench.KernelOnly.Mapped(mode)
}

// oracleProc is the oracle's process, made on first use.
var oracleProc *pti.Process

// percentiles returns the 10th, 50th and 90th percentiles (nearest rank),
// minimum and maximum of xs (not empty), which it sorts.
func percentiles(xs []uint64) contract.OraclePercentiles {
	slices.Sort(xs)
	at := func(p int) uint64 { return xs[(len(xs)-1)*p/100] }
	return contract.OraclePercentiles{P10: at(10), P50: at(50), P90: at(90), Min: xs[0], Max: xs[len(xs)-1]}
}

// Calibrate decides from timed loads of a cached line (hits) and a flushed
// one (misses), both not empty, whether cache timing is observable: the
// hits' 90th percentile must be below the misses' 10th, so that a
// threshold halfway between them calls at most about a tenth of either
// kind wrongly; a slower hit now and then (an interrupt, a TLB miss) or a
// faster miss does not decide it, as a mean would let it. Equal
// distributions (an emulator's TSC) fail the rule. It returns the
// percentiles, whether observable and the threshold (a load of at most
// that many units is a hit; 0 when not observable). It sorts hits and
// misses.
func Calibrate(hits, misses []uint64) (hit, miss contract.OraclePercentiles, observable bool, threshold uint64) {
	hit, miss = percentiles(hits), percentiles(misses)
	if hit.P90 < miss.P10 {
		return hit, miss, true, hit.P90 + (miss.P10-hit.P90)/2
	}
	return hit, miss, false, 0
}

// leakedByte returns the byte value with the most hits among counters
// (one per value), leaving out 0 (what a suppressed transient read gives;
// the secret has none), and whether any value had a hit. A tie goes to
// the lower value.
func leakedByte(counters []uint64) (byte, bool) {
	best, most := 0, uint64(0)
	for v := 1; v < len(counters); v++ {
		if counters[v] > most {
			best, most = v, counters[v]
		}
	}
	return byte(best), most > 0
}

// oracleFaultExpected reports whether a recovering run of attempts reads
// of the secret byte at addr recovered what it must: one page fault per
// attempt, the last at addr, a user-mode read (U=1, W=0) with P=1 where
// the mode's user side maps the secret (mapped: off, and asi for the
// kernel secret) and P=0 where it does not (isolation).
func oracleFaultExpected(mapped bool, res pti.Result, attempts int, addr uint64) bool {
	want := uint64(amd64.PF_U)
	if mapped {
		want |= amd64.PF_P
	}
	return res.Reason == pti.ReasonExit && res.Status == 0 && res.Recovered == uint64(attempts) &&
		res.RecoverCR2 == addr && res.RecoverError&(amd64.PF_P|amd64.PF_W|amd64.PF_U) == want
}

// timedBy names how the oracle's programs time a load.
func timedBy(rdtscp bool) string {
	if rdtscp {
		return "RDTSCP; LFENCE"
	}
	return "LFENCE; RDTSC; LFENCE (no RDTSCP)"
}

// oracle calibrates, then runs the oracle under the plan's modes and on
// (as the probe: modes the world cannot have are left out, those the CPU
// lacks say so), by SYSCALL and by the plan's entries that deliver the
// faults themselves (FRED, whose fredEvent recovers them), records the
// calibration and a row per secret, mode and entry where it reads that
// secret (package tables renders the tables); it returns the bytes
// recovered by row ("off", "off fred", "asi sensitive"; -1 where not
// tried).
func oracle(x *bench.Ctx) any {
	out := map[string]int{}
	w := x.World
	if w.Width() != 64 {
		x.Fail(contract.Error{Name: x.Name, Error: "the leak oracle runs in the 64-bit world only"})
		return out
	}
	var modes []experiment.Mode
	for _, m := range append([]experiment.Mode{experiment.Off}, append(slices.Clone(x.Plan.Modes), experiment.On)...) {
		if !slices.Contains(modes, m) && !bench.NotInWorld(bench.ConfigOf(m, experiment.Syscall, experiment.Minimal)) {
			modes = append(modes, m)
		}
	}
	meltdown := cpustate.Vulns(cpustate.Hardware{}).Table["meltdown"]

	s := x.Subject("oracle", bench.ConfigOf(experiment.Off, experiment.Syscall, experiment.Minimal))
	s.Entry, s.Flavour = "", ""
	var noRDTSCP uint64
	if !amd64.Features.RDTSCP {
		noRDTSCP = pti.OracleNoRDTSCP
	}
	if oracleProc == nil {
		p, err := pti.NewProcessData(oracleDataPages)
		if err != nil {
			x.Fail(contract.Error{Name: x.Name, Error: err.Error(), Subject: &s})
			return out
		}
		oracleProc = p
	}
	data := oracleProc.DataPages()

	// The calibration, in each mode (the rows of a mode the CPU lacks say
	// so below).
	thresholds := map[experiment.Mode]uint64{}
	for _, mode := range modes {
		c := bench.ConfigOf(mode, experiment.Syscall, experiment.Minimal)
		sw, err := pti.Plan(c)
		if err != nil {
			continue
		}
		cal, ok := oracleCalibrate(x, sw, data, noRDTSCP)
		s := x.Subject("oracle", c)
		s.Entry, s.Flavour = "", ""
		if !ok {
			x.Fail(contract.Error{Name: x.Name + " calibration " + mode.String(), Error: cal.Verdict, Subject: &s})
			return out
		}
		cal.Subject = s
		x.Record(cal)
		if cal.Observable {
			thresholds[mode] = cal.Threshold
		}
	}

	secretCall := uint64(pti.SysSecret) | noRDTSCP
	for _, sec := range oracleSecrets {
		for _, entry := range faultEntries(x, experiment.Syscall) {
			for _, mode := range modes {
				if !sec.readIn(mode) {
					continue
				}
				threshold, observable := thresholds[mode]
				attempts := 1
				if observable {
					attempts = oracleAttempts.Of(x.Plan)
				}
				c := bench.ConfigOf(mode, entry, experiment.Minimal)
				s := x.Subject("oracle", c)
				s.Flavour, s.Target = "", sec.target
				name := mode.String()
				if entry != experiment.Syscall {
					name += " " + entry.String() // a row by an entry that delivers the faults itself
				} else {
					s.Entry = ""
				}
				if sec.target != "" {
					name += " " + sec.target
				}
				out[name] = -1
				sw, err := pti.Plan(c)
				if err != nil {
					x.Record(contract.Unsupported{Subject: s, Reason: name + ": " + bench.ReasonOf(err)})
					continue
				}
				rec := contract.Oracle{Subject: s, Secret: fmt.Sprintf("%#x", sec.secret.Addr()), Pattern: pti.SecretPattern, Bytes: len(pti.SecretPattern),
					Attempts: attempts, Tried: observable, Meltdown: meltdown, SecretPage: sec.page}
				if err := oracleRead(sw, sec, mode, data, &rec, threshold, secretCall); err != nil {
					x.Fail(contract.Error{Name: x.Name + " " + name, Error: err.Error(), Subject: &s})
					continue
				}
				if observable {
					out[name] = *rec.Recovered
				}
				x.Record(rec)
			}
		}
	}
	oracleLimit(x, secretCall)
	return out
}

// oracleRead reads each byte of sec under sw (mode's switch),
// rec.Attempts times, and fills rec: the faults recovered, the last one's
// error code and P bit, whether each run's faults were as expected
// (oracleFaultExpected); where the calibration found cache timing
// observable (rec.Tried, threshold), the bytes recovered and what the
// probe lines' hits read ("??" for a byte without any), else why not.
func oracleRead(sw pti.Switch, sec oracleSecret, mode experiment.Mode, data []byte, rec *contract.Oracle, threshold, secretCall uint64) error {
	good, recovered := true, 0
	var leaked strings.Builder
	for i := range len(pti.SecretPattern) {
		clear(data[oracleCounters : oracleCounters+8*pti.OracleLines])
		addr := sec.secret.Addr() + uint64(i)
		res, err := pti.StartRecovering(sw, oracleProc, pti.Oracle, pti.UserStackTop,
			[6]uint64{addr, pti.UserData + oracleProbe, uint64(rec.Attempts), pti.UserData + oracleCounters, threshold, secretCall}, uint64(rec.Attempts), sec.secret)
		if err == nil && (res.Reason != pti.ReasonExit || res.Status != 0) {
			err = fmt.Errorf("byte %d: the run ended with %v after %d recovered faults", i, res, res.Recovered)
		}
		if err != nil {
			return err
		}
		rec.Faults += res.Recovered
		rec.ErrorCode = res.RecoverError
		good = good && oracleFaultExpected(sec.kind.Mapped(mode), res, rec.Attempts, addr)
		if !rec.Tried {
			continue
		}
		counters := make([]uint64, pti.OracleLines)
		for v := range counters {
			counters[v] = binary.LittleEndian.Uint64(data[oracleCounters+8*v:])
		}
		b, ok := leakedByte(counters)
		if !ok {
			leaked.WriteString("??")
			continue
		}
		fmt.Fprintf(&leaked, "%02x", b)
		if b == pti.SecretPattern[i] {
			recovered++
		}
	}
	rec.Present = rec.ErrorCode&amd64.PF_P != 0
	rec.AsExpected = &good
	if rec.Tried {
		rec.Recovered, rec.Leaked = &recovered, leaked.String()
	} else {
		rec.Reason = oracleUnavailable
	}
	return nil
}

// calCall is the system call before each of the calibration's timed
// loads.
const calCall = "getppid"

// oracleCalibrate runs the calibration under sw, its samples in the
// oracle process's data, and returns its record (no subject), or why it
// failed in Verdict and false.
func oracleCalibrate(x *bench.Ctx, sw pti.Switch, data []byte, noRDTSCP uint64) (contract.OracleCalibration, bool) {
	n := oracleSamples.Of(x.Plan)
	res, err := pti.Start(sw, oracleProc, pti.OracleCal, pti.UserStackTop,
		[6]uint64{pti.UserData + oracleCalLine, uint64(n), pti.UserData + oracleSamplesOff, noRDTSCP, linuxabi.SYS_getppid})
	if err == nil && (res.Reason != pti.ReasonExit || res.Status != 0) {
		err = fmt.Errorf("the calibration ended with %v", res)
	}
	if err != nil {
		return contract.OracleCalibration{Verdict: err.Error()}, false
	}
	samples := make([]uint64, 2*n)
	for i := range samples {
		samples[i] = binary.LittleEndian.Uint64(data[oracleSamplesOff+8*i:])
	}
	hit, miss, observable, threshold := Calibrate(samples[:n], samples[n:])
	verdict := oracleUnavailable
	if observable {
		verdict = oracleObservable
	}
	return contract.OracleCalibration{Samples: n, Unit: x.Clock.Unit(), TimedBy: timedBy(noRDTSCP == 0), After: calCall,
		Hit: hit, Miss: miss, Observable: observable, Threshold: threshold, Verdict: verdict}, true
}

// oracleLimit checks the recovery's limit, under off: a recovering run of
// two attempts at the kernel secret's first byte allowed one fault must
// recover the first and end at the second, a ring-3 #PF at the secret, as
// a run without recovery ends.
func oracleLimit(x *bench.Ctx, secretCall uint64) {
	var res pti.Result
	secret := pti.KernelSecret.Addr()
	off, err := pti.Plan(bench.ConfigOf(experiment.Off, experiment.Syscall, experiment.Minimal))
	if err == nil {
		res, err = pti.StartRecovering(off, oracleProc, pti.Oracle, pti.UserStackTop,
			[6]uint64{secret, pti.UserData + oracleProbe, 2, pti.UserData + oracleCounters, 0, secretCall}, 1, pti.KernelSecret)
	}
	ok := err == nil && res.Reason == pti.ReasonFault && res.Vector == amd64.VectorPF && res.FromUser() &&
		res.CR2 == secret && res.Recovered == 1
	detail := fmt.Sprintf("2 faulting reads, 1 to recover: %d recovered, then the run ended: %v", res.Recovered, res)
	if err != nil {
		detail = err.Error()
	}
	x.Check("oracle limit", ok, detail, map[string]any{"recovered": res.Recovered})
}
