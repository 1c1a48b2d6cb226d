package tables

import (
	"strings"

	"github.com/ptilab/ptilab/contract"
	"github.com/ptilab/ptilab/experiment"
)

// config is what the tables read of a record's configuration. Every
// table reads it through configOf, the one function that looks at a
// subject's fields; what a mode, flavour or entry is comes from the
// experiment's model (cfg, Subject.Config), and a configuration's name is
// the record's key. The name strings are the cells the tables print.
type config struct {
	bench   string // the benchmark's plan name, without the world's suffix ("null" for "null32")
	width   int
	mode    string // the mode with its asi actions (experiment.Config.ModeName)
	entry   string
	flavour string
	copy    string
	tasks   string
	target  string
	mitig   string
	global  bool
	stamps  bool
	work    *int64
	pages   *int
	kernel  string // a Linux run's compat rows: "64-compat"
	// cfg is the subject's configuration in the experiment's model, if ok:
	// ok is false for a subject without one (flushcost's records) or one
	// that does not parse (an old log's).
	cfg experiment.Config
	ok  bool
	// key names the configuration: the record's canonical key
	// (contract.Subject.Key).
	key string
}

// isMode reports whether c's configuration has isolation mode m.
func (c config) isMode(m experiment.Mode) bool { return c.ok && c.cfg.Mode == m }

// isFlavour reports whether c's configuration has trampoline flavour f.
func (c config) isFlavour(f experiment.Flavour) bool { return c.ok && c.cfg.Flavour == f }

// configOf is s as the tables read it.
func configOf(s contract.Subject) config {
	c := config{
		bench: strings.TrimSuffix(s.Bench, "32"), width: s.Width, mode: s.Mode, entry: s.Entry, flavour: s.Flavour,
		copy: s.Copy, tasks: s.Tasks, target: s.Target, mitig: s.Mitigations, global: s.Global, stamps: s.Stamps, kernel: s.Kernel,
		work: s.WorkNs, pages: s.SweepPages,
	}
	if mc, err := s.Config(); err == nil {
		c.cfg, c.ok, c.mode = mc, true, mc.ModeName() // as s.ModeName, from the Config parsed once
	}
	c.key = s.Key()
	return c
}

// subjectOf is the subject of a record about a configuration.
func subjectOf(rec contract.Record) (contract.Subject, bool) {
	switch v := rec.(type) {
	case contract.Error:
		if v.Subject == nil {
			return contract.Subject{}, false
		}
		return *v.Subject, true
	case interface{ About() contract.Subject }:
		return v.About(), true
	}
	return contract.Subject{}, false
}

// measuredKey is the configuration key of a measured figure (a syscall,
// pingpong, messaging or TLB sweep record), for baselines.
func measuredKey(rec contract.Record) (string, bool) {
	switch v := rec.(type) {
	case contract.TLBSweep:
		return configOf(v.Subject).key, true
	case contract.Syscall:
		return configOf(v.Subject).key, true
	case contract.PingPong:
		return configOf(v.Subject).key, true
	case contract.Messaging:
		return configOf(v.Subject).key, true
	}
	return "", false
}

// statsOf is a measured record's statistics.
func statsOf(rec contract.Record) *contract.Stats {
	switch v := rec.(type) {
	case contract.Syscall:
		return &v.Stats
	case contract.PingPong:
		return &v.Stats
	case contract.Messaging:
		return &v.Stats
	case contract.TLBSweep:
		return &v.Stats
	case contract.Seed:
		return &v.Stats
	}
	return nil
}

// coreOf is a measured record's core-clock state.
func coreOf(rec contract.Record) *contract.Core {
	if s := statsOf(rec); s != nil {
		return &s.Core
	}
	if p, ok := rec.(contract.Phases); ok && p.Core != nil {
		return p.Core
	}
	return nil
}
