package tlbbench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ptilab/ptilab/bench"
	"github.com/ptilab/ptilab/bench/benchtest"
	"github.com/ptilab/ptilab/tlb"
)

func TestDefaultPlan(t *testing.T) {
	p := bench.DefaultPlan()
	assert.Equal(t, []int{0, 1, 4, 16, 64, 256, 1024, 4096}, sweepPages.Of(p), "lat_ctx -s's span: nothing to beyond the STLB")
	assert.Equal(t, sweepPages.Of(p), sweepKernelPages.Of(p))
	assert.Equal(t, []string{"4k", "2m"}, sweepSizesKey.Of(p))
	assert.Equal(t, 100, sweepN.Of(p))
	assert.Equal(t, tlb.SweepMaxPages, sweepPages.Of(p)[len(sweepPages.Of(p))-1], "the default sweep spans its region")
}

// TestSweepPlanErrorLine: a bad sweep key is reported with its line
// number among good lines, and the sweep keeps its default there.
func TestSweepPlanErrorLine(t *testing.T) {
	p, errs := bench.ParsePlan([]byte("r = 3\n# sweep\ntlbsweep_pages = 1,8192\ntlbsweep_n = 5\n"))
	require.Len(t, errs, 1)
	assert.Equal(t, 3, errs[0].Line)
	assert.Equal(t, "tlbsweep_pages = 1,8192", errs[0].Text)
	assert.Equal(t, sweepPages.Of(bench.DefaultPlan()), sweepPages.Of(p))
	assert.Equal(t, 5, sweepN.Of(p))
	assert.Equal(t, 3, p.R)
}

func TestPlanKeys(t *testing.T) {
	benchtest.CheckValid(t, []benchtest.Valid{
		{Name: "tlbsweep keys", In: "tlbsweep_pages = 4096, 0, 16\ntlbsweep_kernel_pages = 1\ntlbsweep_sizes = 2m\ntlbsweep_n = 7\n", Want: benchtest.PlanWith(func(p *bench.Plan) {
			sweepPages.Set(p, []int{4096, 0, 16})
			sweepKernelPages.Set(p, []int{1})
			sweepSizesKey.Set(p, []string{"2m"})
			sweepN.Set(p, 7)
		})},
		{Name: "no kernel sweep", In: "tlbsweep_kernel_pages = none", Want: benchtest.PlanWith(func(p *bench.Plan) { sweepKernelPages.Set(p, nil) })},
	})
	benchtest.CheckErrors(t, map[string]string{
		"tlbsweep_pages = 0,4097":      "tlbsweep_pages must be a comma-separated list of integers from 0 to 4096",
		"tlbsweep_pages = -1":          "tlbsweep_pages must be a comma-separated list of integers from 0 to 4096",
		"tlbsweep_pages = none":        "tlbsweep_pages must be",
		"tlbsweep_pages = 16,1,16":     "tlbsweep_pages lists 16 twice",
		"tlbsweep_kernel_pages = 5000": "tlbsweep_kernel_pages must be a comma-separated list of integers from 0 to 4096, or none",
		"tlbsweep_sizes = 4k,1g":       "tlbsweep_sizes must be a comma-separated list of 2m, 4k",
		"tlbsweep_n = 0":               "tlbsweep_n must be an integer from 1 to 1000000",
	})
}
