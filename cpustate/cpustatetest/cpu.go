// Package cpustatetest provides a fake processor for host tests of the
// code that reads CPUID and MSRs through cpustate.CPU (packages cpustate,
// pmu and bench), as net/http/httptest does for HTTP: CPUID leaves, a
// bank of MSRs whose absent members raise #GP, a log of the writes, and a
// TSC that advances as it is read.
package cpustatetest

import "github.com/ptilab/ptilab/amd64"

// CPU implements cpustate.CPU. CPUID answers Leaves[{leaf, subleaf}]
// (zeros for a pair not there); ReadMSR and WriteMSR report #GP (false)
// for an MSR not in MSRs, and WriteMSR logs every write it takes in
// Writes. Each TSC read advances TSCNow by TSCStep. With Clock set, the
// APERF and MPERF of the bank read as Clock(TSCNow).
type CPU struct {
	Leaves  map[[2]uint32][4]uint32
	MSRs    map[uint32]uint64
	Writes  []Write
	TSCNow  uint64
	TSCStep uint64
	Clock   func(tsc uint64) (aperf, mperf uint64)
}

// Write is one MSR write the fake took.
type Write struct {
	MSR uint32
	Val uint64
}

// ByLeaf keys leaves by (leaf, subleaf 0), for CPUs whose tests read no
// other subleaf.
func ByLeaf(leaves map[uint32][4]uint32) map[[2]uint32][4]uint32 {
	m := make(map[[2]uint32][4]uint32, len(leaves))
	for l, v := range leaves {
		m[[2]uint32{l, 0}] = v
	}
	return m
}

func (c *CPU) CPUID(leaf, subleaf uint32) (uint32, uint32, uint32, uint32) {
	r := c.Leaves[[2]uint32{leaf, subleaf}]
	return r[0], r[1], r[2], r[3]
}

func (c *CPU) ReadMSR(m uint32) (uint64, bool) {
	v, ok := c.MSRs[m]
	if ok && c.Clock != nil && (m == amd64.MSR_IA32_APERF || m == amd64.MSR_IA32_MPERF) {
		a, mp := c.Clock(c.TSCNow)
		if m == amd64.MSR_IA32_APERF {
			return a, true
		}
		return mp, true
	}
	return v, ok
}

func (c *CPU) WriteMSR(m uint32, v uint64) bool {
	if _, ok := c.MSRs[m]; !ok {
		return false
	}
	c.MSRs[m] = v
	c.Writes = append(c.Writes, Write{m, v})
	return true
}

func (c *CPU) TSC() uint64 {
	c.TSCNow += c.TSCStep
	return c.TSCNow
}

// Written returns the MSRs written, in order.
func (c *CPU) Written() []uint32 {
	var m []uint32
	for _, w := range c.Writes {
		m = append(m, w.MSR)
	}
	return m
}
