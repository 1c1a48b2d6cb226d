package contract

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ptilab/ptilab/experiment"
)

// ErrNoConfig is the error of a subject that names no configuration of a
// world: no mode (the flush-cost operations, which run on the Go
// kernel's table).
var ErrNoConfig = errors.New("no configuration")

// Config is the configuration s ran under, parsed from its fields (which
// the records keep as strings, as they always were). A field the record
// leaves out takes what the image ran:
//   - no entry: the world's default, experiment.Entries(width)[0]
//     (syscall, sysenter): records written before the entry field (and
//     probe records written before they carried the world's probe entry),
//     the oracle's and the retention proof's, and the seed tables'
//     sched-messaging cells;
//   - no flavour: linux where Tasks is set (the tasks kernel runs the
//     linux trampolines, whose pt_regs its context switch needs: the seed
//     tables' sched-messaging cells), minimal otherwise (the probe, the
//     oracle, the retention proof);
//   - no copy: direct where Tasks is set (the tasks kernel's SYSENTER is
//     Linux 4.19's entry; its ping-pong records leave the copy out) and
//     for the mitigated flavour (its only copy method), movsl otherwise;
//     a copy the configuration has no choice of (INT 0x80's "movsl") is
//     parsed but left out of the key (experiment.Config.HasCopy);
//   - no mitigations and no asi actions: none.
//
// An unknown name or a width other than 64 and 32 is an error, and so is
// a subject without a mode (ErrNoConfig). Config does not Check: an
// unsupported record's configuration is one its world refuses.
func (s Subject) Config() (experiment.Config, error) {
	var c experiment.Config
	if s.Mode == "" {
		return c, fmt.Errorf("%s: %w", s.Bench, ErrNoConfig)
	}
	c.World = experiment.Width(s.Width)
	if c.World != experiment.W64 && c.World != experiment.W32 {
		return c, fmt.Errorf("%s: no world of width %d", s.Bench, s.Width)
	}
	var err error
	if c.Mode, err = experiment.ParseMode(s.Mode); err != nil {
		return c, err
	}
	c.Entry = experiment.Entries(c.World)[0]
	if s.Entry != "" {
		if c.Entry, err = experiment.ParseEntry(s.Entry); err != nil {
			return c, err
		}
	}
	switch {
	case s.Flavour != "":
		if c.Flavour, err = experiment.ParseFlavour(s.Flavour); err != nil {
			return c, err
		}
	case s.Tasks != "":
		c.Flavour = experiment.Linux
	default:
		c.Flavour = experiment.Minimal
	}
	switch {
	case s.Copy != "":
		if c.Copy, err = experiment.ParseCopy(s.Copy); err != nil {
			return c, err
		}
	case s.Tasks != "" || c.Flavour == experiment.Mitigated:
		if c.HasCopy() {
			c.Copy = experiment.Direct
		}
	}
	if c.Knobs, err = experiment.ParseKnobs(s.Mitigations); err != nil {
		return c, err
	}
	if c.ASIActions, err = experiment.ParseKnobs(s.ASIActions); err != nil {
		return c, err
	}
	c.Stamps, c.Global = s.Stamps, s.Global
	return c, nil
}

// ModeName is s's mode as the tables and plots name it: with its asi
// actions in brackets where it has some (experiment.Config.ModeName),
// else Mode.
func (s Subject) ModeName() string {
	if c, err := s.Config(); err == nil {
		return c.ModeName()
	}
	return s.Mode
}

// Key is the record's canonical key: its benchmark, its Config's pairs
// (experiment.Config.Pairs) and its own fields where set (tasks, target,
// kernel, work_ns, sweep_pages, and loop_offset where not 0, so that a record at
// the programs' default places keeps the key it always had), as
// name=value pairs joined by
// experiment.JoinPairs: "bench=pingpong width=64 mode=on entry=syscall
// flavour=linux global=off tasks=processes", "bench=tlbsweep width=64
// mode=off entry=syscall flavour=minimal global=off target="user 4k"
// sweep_pages=16". It names a record's configuration in the report, in
// comparisons, in the path-length bounds (package pathlength) and in the
// tests. A subject without a Config keeps the fields it has as they are
// ("bench=flushcost width=64 target="mov cr3""). Whether the figure was
// emulated or counted instructions is not part of it: that is what the
// figure is, not what ran. The records of sched-messaging add their IPC
// (Messaging.Key).
func (s Subject) Key() string { return s.keyWith("") }

// keyWith is s's key with sched-messaging's IPC ipc (none when empty).
func (s Subject) keyWith(ipc string) string {
	p := [][2]string{{"bench", s.Bench}}
	if c, err := s.Config(); err == nil {
		p = append(p, c.Pairs()...)
	} else {
		p = append(p, [2]string{"width", strconv.Itoa(s.Width)})
		for _, f := range [][2]string{{"mode", s.Mode}, {"entry", s.Entry}, {"flavour", s.Flavour}, {"copy", s.Copy}, {"knobs", s.Mitigations}, {"asi_actions", s.ASIActions}} {
			if f[1] != "" {
				p = append(p, f)
			}
		}
		if s.Stamps {
			p = append(p, [2]string{"stamps", "on"})
		}
		if s.Global {
			p = append(p, [2]string{"global", "on"})
		}
	}
	for _, f := range [][2]string{{"tasks", s.Tasks}, {"ipc", ipc}, {"target", s.Target}, {"kernel", s.Kernel}} {
		if f[1] != "" {
			p = append(p, f)
		}
	}
	if s.WorkNs != nil {
		p = append(p, [2]string{"work_ns", strconv.FormatInt(*s.WorkNs, 10)})
	}
	if s.SweepPages != nil {
		p = append(p, [2]string{"sweep_pages", strconv.Itoa(*s.SweepPages)})
	}
	if s.LoopOffset != 0 {
		p = append(p, [2]string{"loop_offset", strconv.Itoa(s.LoopOffset)})
	}
	return experiment.JoinPairs(p)
}

// Key is the subject's key with the IPC (ipc=socket, ipc=pipe; none in
// records written before the field).
func (m Messaging) Key() string { return m.Subject.keyWith(m.IPC) }

// Key is the subject's key with the IPC, as Messaging's.
func (p Phases) Key() string { return p.Subject.keyWith(p.IPC) }

// Key is the subject's key, with the IPC of a sched-messaging
// configuration (as Messaging's).
func (u Unsupported) Key() string {
	if u.Workload != nil {
		return u.Subject.keyWith(u.IPC)
	}
	return u.Subject.Key()
}
