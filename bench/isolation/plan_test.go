package isolation

import (
	"testing"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/benchtest"
)

func TestPlanKeys(t *testing.T) {
	benchtest.CheckValid(t, []benchtest.Valid{
		{Name: "oracle_samples", In: "oracle_samples = 1280", Want: benchtest.PlanWith(func(p *bench.Plan) { oracleSamples.Set(p, 1280) })},
		{Name: "oracle_attempts", In: "oracle_attempts = 1", Want: benchtest.PlanWith(func(p *bench.Plan) { oracleAttempts.Set(p, 1) })},
	})
	benchtest.CheckErrors(t, map[string]string{
		"oracle_samples = 9":    "oracle_samples must be an integer from 10 to 1280",
		"oracle_samples = 1281": "oracle_samples must be an integer from 10 to 1280",
		"oracle_attempts = 0":   "oracle_attempts must be an integer from 1 to 1000",
	})
}
