// Package all registers every benchmark family's benchmarks and
// post-steps with the engine (package bench), in one list: the order of
// the default plan, of the README's table and of the post-steps. The
// image's main and the host tests that need the whole registry import
// it.
//
// The order is this list's, not Go's order of package initialization
// (which follows imports, then import paths): a new benchmark takes its
// place here, where the plan's order can be read.
package all

import (
	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/isolation"
	"github.com/ptilab/ptilab/bench/ladder"
	"github.com/ptilab/ptilab/bench/seed"
	"github.com/ptilab/ptilab/bench/syscalls"
	"github.com/ptilab/ptilab/bench/taskbench"
	"github.com/ptilab/ptilab/bench/tlbbench"
)

func init() {
	bench.Register(
		syscalls.Null, syscalls.Work, syscalls.Lseek,
		taskbench.PingPong, taskbench.Messaging,
		isolation.Probe,
		tlbbench.Retention, tlbbench.FlushCost, tlbbench.TLBSweep,
		isolation.Oracle,
		taskbench.Deadlock,
		ladder.Ladder,
	)
	bench.RegisterPostSteps(seed.Null, seed.Messaging, tlbbench.RetentionSummary)
}
