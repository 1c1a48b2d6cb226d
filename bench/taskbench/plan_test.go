package taskbench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/benchtest"
)

func TestDefaultPlan(t *testing.T) {
	p := bench.DefaultPlan()
	assert.Equal(t, MessagingParams{Groups: 2, Loops: 10, Size: 100, R: 10, Warmup: 2, IPC: IPCSocket}, MessagingParamsOf(p), "small enough for the emulator; sockets as perf")
	assert.Equal(t, 200, PingPongN.Of(p))
}

func TestPlanKeys(t *testing.T) {
	benchtest.CheckValid(t, []benchtest.Valid{
		{Name: "tasks keys", In: "pingpong_n = 9\nmessaging_groups = 20\nmessaging_loops = 100\nmessaging_size = 13\nmessaging_ipc = pipe\n",
			Want: benchtest.PlanWith(func(p *bench.Plan) {
				PingPongN.Set(p, 9)
				MessagingGroups.Set(p, 20)
				msgLoops.Set(p, 100)
				msgSize.Set(p, 13)
				msgIPC.Set(p, IPCPipe)
			})},
		{Name: "messaging bounds", In: "messaging_groups = 25\nmessaging_size = 8", Want: benchtest.PlanWith(func(p *bench.Plan) { MessagingGroups.Set(p, 25); msgSize.Set(p, 8) })},
	})
	benchtest.CheckErrors(t, map[string]string{
		"messaging_ipc = fifo": "messaging_ipc must be socket or pipe",
	})
}
