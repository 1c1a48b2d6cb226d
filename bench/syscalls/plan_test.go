package syscalls

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/benchtest"
)

func TestPlanKeys(t *testing.T) {
	p := bench.DefaultPlan()
	assert.Equal(t, 200, workN.Of(p))
	assert.Equal(t, []int64{0, 100, 500, 2000, 5000}, workNs.Of(p))
	benchtest.CheckValid(t, []benchtest.Valid{
		{Name: "work keys", In: "work_n = 7\nwork_ns = 0, 1000\n", Want: benchtest.PlanWith(func(p *bench.Plan) {
			workN.Set(p, 7)
			workNs.Set(p, []int64{0, 1000})
		})},
	})
	benchtest.CheckErrors(t, map[string]string{
		"work_ns = 0,-5": "work_ns must be a comma-separated list of integers from 0 to 1000000",
		"work_n = 0":     "work_n must be an integer from 1 to 1000000",
	})
}
