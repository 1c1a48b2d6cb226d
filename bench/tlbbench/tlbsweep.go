package tlbbench

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
	"github.com/ptilab/ptilab/goos"
	"github.com/ptilab/ptilab/linuxabi"
	"github.com/ptilab/ptilab/pti"
	"github.com/ptilab/ptilab/tlb"
)

// TLBSweep is the TLB working-set sweep's registry row, with its keys.
var TLBSweep = bench.Benchmark{Name: "tlbsweep", Summary: "the TLB working-set sweep: a null call plus ring 3's reads of N distinct pages between calls (4 KiB and 2 MiB pages, aliases of one frame), and the kernel-side variant where the call reads M kernel pages; PTI's extra cost over off against N",
	Worlds: []int{64}, Keys: []string{"modes", "global", sweepPages.Name(), sweepSizesKey.Name(), sweepKernelPages.Name(), sweepN.Name(), "r", "warmup", "loop_offset"}, Run: tlbSweep, Optional: true}

// The TLB working-set sweep (lmbench's lat_ctx -s, Gregg's sweep; issue
// 13): between consecutive null calls ring 3 reads a byte in each of N
// distinct pages, so that every call pays the refill of what the CR3
// writes dropped: without PCID the extra cost of isolation grows with N,
// with PCID (NOFLUSH) it should stay nearly flat. A kernel-side variant
// has the system call itself (ptilab's touch call, kernel text) read M
// kernel pages: the kernel's own refill after a switch without PCID. The
// pages are aliases (tlb/sweep.go): SweepMaxPages virtual pages per
// region, all mapped onto one frame, each page read at byte offset
// (k*64) mod 4096 where k is the pages left to read (N down to 1), so that
// the sweep has distinct TLB entries but reads at most 64 cache lines in
// 64 sets.

// sweepKind is a sweep region: its record name (Subject.Target), who
// touches it, its page size and first page.
type sweepKind struct {
	name     string
	side     string // "user" or "kernel"
	pageSize uint64
	base     uint64
}

// Sweep kinds; sweepSizes maps a plan's tlbsweep_sizes names to the user
// ones.
var (
	sweepUser4K   = sweepKind{"user 4k", "user", amd64.PageSize, pti.SweepUser4K}
	sweepUser2M   = sweepKind{"user 2m", "user", amd64.PageSize2M, pti.SweepUser2M}
	sweepKernel4K = sweepKind{"kernel 4k", "kernel", amd64.PageSize, tlb.SweepKernel4K}
	sweepSizes    = map[string]sweepKind{"4k": sweepUser4K, "2m": sweepUser2M}
)

// sweepSizeNames are the names tlbsweep_sizes takes, in the default
// plan's order.
var sweepSizeNames = []string{"4k", "2m"}

// The sweep's plan keys: its points, pages ring 3 touches between calls
// (0 to tlb.SweepMaxPages each), on the user page sizes of
// tlbsweep_sizes (sweepSizeNames); the kernel pages the touch call reads
// (none: no kernel sweep); calls per repeat. lmbench's lat_ctx -s and
// Gregg's sweep span a working set from nothing to beyond the STLB (1536
// entries on Skylake).
var (
	sweepPages = bench.NewKey("tlbsweep_pages", []int{0, 1, 4, 16, 64, 256, 1024, 4096}, func(v string) ([]int, error) {
		return bench.IntList(v, "tlbsweep_pages", 0, tlb.SweepMaxPages, false)
	})
	sweepKernelPages = bench.NewKey("tlbsweep_kernel_pages", []int{0, 1, 4, 16, 64, 256, 1024, 4096}, func(v string) ([]int, error) {
		return bench.IntList(v, "tlbsweep_kernel_pages", 0, tlb.SweepMaxPages, true)
	})
	sweepSizesKey = bench.NewKey("tlbsweep_sizes", sweepSizeNames, func(v string) ([]string, error) {
		return bench.ListOf(v, bench.OneOf(sweepSizeNames), sweepSizeNames, "tlbsweep_sizes")
	})
	sweepN = bench.IntKey("tlbsweep_n", 100, 1, 1_000_000)
)

// sweepOffset says where a touch reads in its page, for records.
var sweepOffset = fmt.Sprintf("byte (k*64) mod %d, k the pages left to read (N for the first page, 1 for the last)", amd64.PageSize)

// sweepBlockOff is where the sweep process's data holds its
// tlb.SweepBlock: after the counts (the 64-bit world's MaxRepeats of
// them).
var sweepBlockOff = uint64(bench.World64.User().MaxRepeats) * 8

// sweepState is the sweep's process and frames, made on first use.
var sweepState struct {
	proc   *pti.Process
	frames map[string]uint64   // by sweep kind
	mapped map[sweepSpace]bool // the spaces mapped
}

// sweepSetup makes the sweep's process and frames (a 4 KiB frame for each
// 4 KiB region, a 2 MiB one for the 2 MiB region) once, and maps every
// region into the process's address space of c.
func sweepSetup(c experiment.Config) (*pti.Process, error) {
	st := &sweepState
	if st.proc == nil {
		p, err := pti.NewProcessData(pti.UserDataPages)
		if err != nil {
			return nil, err
		}
		st.frames = map[string]uint64{}
		for _, k := range []sweepKind{sweepUser4K, sweepUser2M, sweepKernel4K} {
			f, ok := goos.AllocFrames(k.pageSize/amd64.PageSize, k.pageSize)
			if !ok {
				return nil, fmt.Errorf("out of memory for the %s sweep's frame (%d KiB)", k.name, k.pageSize>>10)
			}
			st.frames[k.name] = f
		}
		st.proc, st.mapped = p, map[sweepSpace]bool{}
	}
	key := sweepSpace{c.Mode.TableClass(), c.Global}
	if !st.mapped[key] {
		for _, k := range []sweepKind{sweepUser4K, sweepUser2M, sweepKernel4K} {
			r := tlb.SweepRegion{Base: k.base, PageSize: k.pageSize, Frame: st.frames[k.name], User: k.side == "user"}
			if err := st.proc.MapSweep(c, r); err != nil {
				return nil, err
			}
		}
		st.mapped[key] = true
	}
	return st.proc, nil
}

// sweepSpace names one of the sweep process's address spaces, as
// pti.Process keeps them: a mode's table class (on+pcid shares on's
// tables; the deferred modes and lass have their own) and the global
// setting.
type sweepSpace struct {
	class  experiment.Mode
	global bool
}

// sweepWorld is the 64-bit world whose timing loop is the sweep's: the
// Sweep program in the sweep's process, each call followed by block's
// touches (its empty loop: the Empty program there).
type sweepWorld struct {
	bench.World // World64
	nr          uint64
	block       tlb.SweepBlock
}

func (w sweepWorld) Loop(sw bench.Switch, _ bench.Call, n, r int, empty bool) (bench.Loop, error) {
	s, ok := sw.(pti.Switch)
	if !ok {
		return bench.Loop{}, fmt.Errorf("%T is not a switch of the 64-bit world", sw)
	}
	proc, err := sweepSetup(s.Config())
	if err != nil {
		return bench.Loop{}, err
	}
	*(*tlb.SweepBlock)(unsafe.Pointer(&proc.DataPages()[sweepBlockOff])) = w.block
	prog := pti.Sweep
	if empty {
		prog = pti.Empty
	}
	args := [6]uint64{uint64(n), uint64(r), pti.UserData, w.nr, pti.UserData + sweepBlockOff, bench.RDTSCPFlag()}
	res, err := pti.Start(s, proc, prog, pti.UserStackTop, args)
	if err != nil {
		return bench.Loop{}, err
	}
	if res.Reason != pti.ReasonExit || res.Status != 0 {
		return bench.Loop{}, fmt.Errorf("the ring-3 sweep ended with %v", res)
	}
	return bench.Loop{Cycles: bench.ReadCounts(w, proc, r), Samples: slices.Clone(pti.Samples())}, nil
}

// sweepWorldOf is the sweep's world for kind k at pages pages.
func sweepWorldOf(k sweepKind, pages int) sweepWorld {
	if k.side == "kernel" {
		return sweepWorld{World: bench.World64, nr: linuxabi.SYS_ptilab_touch, block: tlb.SweepBlock{Arg0: uint64(pages), Arg1: k.base, Arg2: k.pageSize}}
	}
	return sweepWorld{World: bench.World64, nr: linuxabi.SYS_getppid, block: tlb.SweepBlock{Pages: uint64(pages), Base: k.base, Stride: k.pageSize}}
}

// sweepPoint is a point of the sweep: its kind's name, the pages touched
// per call, and the measurement.
type sweepPoint struct {
	Kind  string
	Pages int
	M     bench.Measurement
}

// sweepExtra is a point's units per call over off's at the same point,
// and whether both measured.
func sweepExtra(m, off *bench.Measurement) (float64, bool) {
	if m == nil || off == nil || !m.OK() || !off.OK() {
		return 0, false
	}
	return m.Stats.Mean - off.Stats.Mean, true
}

// tlbSweep runs the sweep: for each of the plan's user page sizes
// (tlbsweep_sizes) and then the kernel side (tlbsweep_kernel_pages,
// unless none), a record per global setting, point and mode: units per
// call plus its touches, PTI's extra cost over off at the same point
// (units and ratio), the core clock and PMU counts. It returns the
// points.
func tlbSweep(x *bench.Ctx) any {
	var out []sweepPoint
	if x.World.Width() != 64 {
		x.Fail(contract.Error{Name: x.Name, Error: "the TLB sweep runs in the 64-bit world only"})
		return out
	}
	p := x.Plan
	var kinds []sweepKind
	for _, s := range sweepSizesKey.Of(p) {
		kinds = append(kinds, sweepSizes[s])
	}
	if len(sweepKernelPages.Of(p)) > 0 {
		kinds = append(kinds, sweepKernel4K)
	}
	for _, k := range kinds {
		out = append(out, sweepTable(x, k)...)
	}
	return out
}

// sweepTable measures the sweep of kind k and writes a record per point
// and mode, which package tables renders as a table.
func sweepTable(x *bench.Ctx, k sweepKind) []sweepPoint {
	p := x.Plan
	points := sweepPages.Of(p)
	if k.side == "kernel" {
		points = sweepKernelPages.Of(p)
	}
	var out []sweepPoint
	for _, g := range p.Globals {
		for _, n := range points {
			var off *bench.Measurement
			for _, mode := range p.Modes {
				c := bench.ConfigOf(mode, experiment.Syscall, experiment.Minimal)
				c.Global = g
				m := bench.Measure(sweepWorldOf(k, n), c, bench.Call{Op: bench.Getppid}, sweepN.Of(p), p.R, p.Warmup)
				m.Bench = x.Name
				if mode == experiment.Off {
					off = &m
				}
				extra, hasExtra := sweepExtra(&m, off)
				if mode == experiment.Off {
					hasExtra = false
				}
				sweepRecord(x, k, n, m, bench.Ratio(&m, off), extra, hasExtra)
				out = append(out, sweepPoint{Kind: k.name, Pages: n, M: m})
			}
		}
	}
	return out
}

// sweepRecord writes the record of kind k's point at pages pages.
func sweepRecord(x *bench.Ctx, k sweepKind, pages int, m bench.Measurement, ratio, extra float64, hasExtra bool) {
	s := x.Subject(m.Bench, m.Config)
	s.Target, s.SweepPages = k.name, &pages
	if x.NotMeasured(m.Bench+" "+k.name+" "+fmt.Sprint(pages)+" "+m.Config.String(), s, m.N, m.R, m.Unsup, m.Failure) {
		return
	}
	rec := contract.TLBSweep{
		Subject: s, N: m.N, R: m.R, Warmup: x.Plan.Warmup, Stats: x.StatsOf(m.Stats, m.Disturb, ratio),
		NsPerCall: bench.Round(x.Clock.Ns(m.Stats.Mean)), EmptyLoopCycles: bench.Round(m.Empty),
		Side: k.side, Region: fmt.Sprintf("%#x", k.base), PageBytes: k.pageSize, Stride: k.pageSize,
		VirtualPages: tlb.SweepMaxPages, Frames: 1, FrameBytes: k.pageSize, BytesPerTouch: 1, Offset: sweepOffset,
	}
	if hasExtra {
		e := bench.Round(extra)
		rec.ExtraVsOff = &e
	}
	x.Record(rec)
}
