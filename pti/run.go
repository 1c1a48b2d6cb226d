package pti

import (
	"errors"
	"fmt"

	"github.com/ptilab/ptilab/amd64"
	"github.com/ptilab/ptilab/experiment"
)

// Exec runs program p in ring 3 under s with arguments args (RDI, RSI,
// RDX, R10, R8, R9) and returns how it ended. Setup must have run.
func Exec(s Switch, p Program, args [6]uint64) (Result, error) {
	return Start(s, env.main, p, UserStackTop, args)
}

// Start runs a task of process proc in ring 3 under s (from Plan, which
// validated it: Start checks nothing again): program p with its
// stack at rsp and arguments args (RDI, RSI, RDX, R10, R8, R9), and
// returns when the run ends: the task (or, with the tasks kernel, the
// last task) exited, or a CPU exception ended it. Other tasks of a run are
// the tasks kernel's business (package tasks, whose run builder calls
// Start for task 0): it switches to them in system calls.
func Start(s Switch, proc *Process, p Program, rsp uint64, args [6]uint64) (Result, error) {
	if !env.ready {
		return Result{}, errors.New("pti: Setup has not run")
	}
	c := s.c
	if c.World != experiment.W64 {
		return Result{}, errors.New("pti: a run needs a Switch from Plan")
	}
	sp, err := proc.space(c.Mode, c.Global)
	if err != nil {
		return Result{}, err
	}
	d := data()
	d.UserCR4 = 0
	if c.Mode.Row().LASS {
		restore, err := lassTable(d)
		if err != nil {
			return Result{}, fmt.Errorf("%v: %w", c, err)
		}
		defer restore()
	}
	if amd64.Features.PGE {
		if err := env.ktext.SetGlobal(c.Global); err != nil {
			return Result{}, err
		}
	}
	writeDescriptors()

	d.KernelRoot = sp.KernelRoot
	if bugPCIDBeforePCIDE && c.Mode.PCID() {
		d.KernelRoot = KernelCR3(sp, false) // the test-only bug: see bug_pcide.go
	}
	d.KernelCR3 = KernelCR3(sp, true)
	d.UserCR3 = UserCR3(sp, true)
	d.RunCR4 = s.runCR4(amd64.CR4())
	if c.Mode.Row().LASS {
		d.UserCR4 = d.RunCR4 | amd64.CR4_LASS
	}
	d.NMIRestore = 0
	if c.Mode.PCID() {
		d.NMIRestore = CR3_NOFLUSH
	}
	d.Trampoline = s.tramp.at()
	d.ToUser, d.FREDConfig = env.text.ToUser, 0
	if usesFRED(c) {
		// IA32_FRED_CONFIG: the trampoline's page as the entry point;
		// external interrupts' stack level and the red zone 0 (ptilab's
		// runs take no interrupts; a ring-0 event pushes its frame right
		// below the interrupted RSP).
		d.ToUser, d.FREDConfig = env.text.ToUserFRED, d.Trampoline
		d.FREDEvent = d.Trampoline + amd64.FREDRing0Entry
		d.FREDExit = fredExit(c.Mode)
	}
	d.Dispatch = dispatcher(c.Mode)
	if err := setASI(d, c.Mode); err != nil {
		return Result{}, fmt.Errorf("%v: %w", c, err)
	}
	d.UserRIP = ProgramEntry(p)
	d.UserRSP0 = rsp
	d.Args = args
	d.Reason, d.Status = 0, 0
	d.RecoverRIP, d.RecoverMax = env.recoverRIP, env.recoverMax
	d.Recovered, d.RecoverCR2, d.RecoverError = 0, 0, 0
	resetSamples(d)
	d.Sites = s.mit.Sites
	d.ASIActions, d.ASIActionsAt = s.asiActions, 0
	if s.asiActions != 0 {
		d.ASIActionsAt = env.text.AsiActions
	}
	prior, restore := setSpecCtrl(d, s.mit)

	enterUser()

	if restore {
		amd64.WRMSR(amd64.MSR_IA32_SPEC_CTRL, prior)
	}

	return Result{
		Reason: d.Reason, Status: d.Status,
		Vector: d.Vector, ErrorCode: d.ErrorCode, RIP: d.FaultRIP, CS: d.FaultCS, CR2: d.FaultCR2,
		Recovered: d.Recovered, RecoverCR2: d.RecoverCR2, RecoverError: d.RecoverError,
		ASITransitions: d.ASITransitions,
	}, nil
}
