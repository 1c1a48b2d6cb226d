package pti

import (
	"errors"

	"github.com/ptilab/ptilab/amd64"
)

// Exec runs program p in ring 3 under configuration c with arguments args
// (RDI, RSI, RDX, R10, R8, R9) and returns how it ended. Setup must have
// run.
func Exec(c Config, p Program, args [6]uint64) (Result, error) {
	return Start(c, env.main, p, UserStackTop, args)
}

// Start runs a task of process proc in ring 3 under c: program p with its
// stack at rsp and arguments args (RDI, RSI, RDX, R10, R8, R9), and
// returns when the run ends: the task (or, with the tasks kernel, the
// last task) exited, or a CPU exception ended it. Other tasks of a run are
// the tasks kernel's business (package tasks, whose run builder calls
// Start for task 0): it switches to them in system calls.
func Start(c Config, proc *Process, p Program, rsp uint64, args [6]uint64) (Result, error) {
	if !env.ready {
		return Result{}, errors.New("pti: Setup has not run")
	}
	if err := Supported(c); err != nil {
		return Result{}, err
	}
	tramp, _ := trampolineAt(trampolineKey{c.Flavour, c.Mode})
	sp, err := proc.space(c.Mode, c.Global)
	if err != nil {
		return Result{}, err
	}
	if amd64.Features.PGE {
		if err := env.ktext.SetGlobal(c.Global); err != nil {
			return Result{}, err
		}
	}
	writeDescriptors()

	d := data()
	d.KernelRoot = sp.KernelRoot
	if bugPCIDBeforePCIDE && c.Mode.PCID() {
		d.KernelRoot = KernelCR3(sp, false) // the test-only bug: see bug_pcide.go
	}
	d.KernelCR3 = KernelCR3(sp, true)
	d.UserCR3 = UserCR3(sp, true)
	// CR4.TSD off: ring 3 reads the TSC. SMAP off: the tasks kernel
	// copies user memory without STAC.
	cr4 := amd64.CR4() &^ (amd64.CR4_PGE | amd64.CR4_PCIDE | amd64.CR4_TSD | amd64.CR4_SMAP)
	if amd64.Features.PGE {
		cr4 |= amd64.CR4_PGE
	}
	if c.Mode.PCID() {
		cr4 |= amd64.CR4_PCIDE
	}
	d.RunCR4 = cr4
	d.NMIRestore = 0
	if c.Mode.PCID() {
		d.NMIRestore = CR3_NOFLUSH
	}
	d.Trampoline = tramp
	d.Dispatch = dispatcher(c.Mode)
	d.UserRIP = ProgramEntry(p)
	d.UserRSP0 = rsp
	d.Args = args
	d.Reason, d.Status = 0, 0
	d.RecoverRIP, d.RecoverMax = env.recoverRIP, env.recoverMax
	d.Recovered, d.RecoverCR2, d.RecoverError = 0, 0, 0
	resetSamples(d)
	mit, err := PlanMitigations(c.Knobs, specCaps)
	if err != nil {
		return Result{}, err
	}
	d.Sites = mit.Sites
	prior, restore := setSpecCtrl(d, mit)

	enterUser()

	if restore {
		amd64.WRMSR(amd64.MSR_IA32_SPEC_CTRL, prior)
	}

	return Result{
		Reason: d.Reason, Status: d.Status,
		Vector: d.Vector, ErrorCode: d.ErrorCode, RIP: d.FaultRIP, CS: d.FaultCS, CR2: d.FaultCR2,
		Recovered: d.Recovered, RecoverCR2: d.RecoverCR2, RecoverError: d.RecoverError,
	}, nil
}
