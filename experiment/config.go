package experiment

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Config is one configuration of a world's kernel that ring-3 tasks run
// under: the world, the isolation mode, the way in, the trampoline's
// flavour and its options. The same type serves both worlds, the records,
// the report and the path-length bounds.
type Config struct {
	World   Width
	Mode    Mode
	Entry   Entry
	Flavour Flavour
	// Copy is the linux trampoline's pt_regs copy, where the entry has a
	// choice (EntryRow.Copies).
	Copy Copy
	// Stamps selects the instrumented trampoline, which sums the cycles of
	// each phase (the 32-bit linux SYSENTER trampolines).
	Stamps bool
	// Global makes the entry area and the kernel text global pages
	// (PTE.G with CR4.PGE): their TLB entries survive CR3 writes.
	Global bool
	// Knobs are the mitigated flavour's mitigations (none for the other
	// flavours): knobs of EntryMitigations.
	Knobs Knobs
	// ASIActions are the actions of an asi mode's transition back to the
	// nonsensitive table, before the return to ring 3 after the kernel
	// touched sensitive data (knobs of ASIActions: verw, l1d, rsb); none
	// in the other modes.
	ASIActions Knobs
}

// Errors of configurations no CPU can run in a world.
var (
	// ErrNotInPAE: PAE paging (the 32-bit world) cannot have it.
	ErrNotInPAE = errors.New("not in PAE")
	// ErrNotIn32BitEntry: a knob Linux's 32-bit entry does not have.
	ErrNotIn32BitEntry = errors.New("not in 32-bit Linux's entry")
	// ErrNoTrampoline: no world has a trampoline of this shape.
	ErrNoTrampoline = errors.New("no such trampoline")
)

// HasCopy reports whether c's Copy is one of its key's fields: the entry
// has a choice of copy and the flavour builds pt_regs.
func (c Config) HasCopy() bool { return c.Entry.Row().Copies && c.Flavour.PtRegs() }

// HasKnobs reports whether c's Knobs are one of its key's fields (the
// mitigated flavour's).
func (c Config) HasKnobs() bool { return c.Flavour.Row().Knobs }

// Check reports whether any CPU could run c in its world, from the rows:
// the entry must be the world's, the mode one the world has trampolines
// for (else ErrNotInPAE: a PCID mode whose base mode the world has says
// "PCID"), the flavour one the mode has trampolines for
// (ErrNoTrampoline), and one the entry has (its row's Flavours, and
// Deferred for a deferred mode), knobs only with the mitigated flavour and, in
// the 32-bit world, only those Linux's 32-bit entry has
// (ErrNotIn32BitEntry); copy methods and stamps are the linux SYSENTER
// trampoline's, and the 32-bit mitigated trampoline is SYSENTER's with
// the direct copy and no stamps. What this CPU has is the worlds' to
// check.
func (c Config) Check() error {
	if c.World == W32 {
		for _, m := range c.Knobs.List() {
			if !m.Row().In32 {
				return fmt.Errorf("%v: %v: %w", c, m, ErrNotIn32BitEntry)
			}
		}
	}
	switch {
	case c.World != W64 && c.World != W32:
		return fmt.Errorf("%v: no world of width %d", c, c.World)
	case int(c.Mode) >= len(modeRows), int(c.Flavour) >= len(flavourRows),
		int(c.Entry) >= len(entryRows), int(c.Copy) >= len(copyRows):
		return fmt.Errorf("%v: %w", c, ErrNoTrampoline)
	case c.Entry.Row().World != c.World:
		return fmt.Errorf("%v: entry %v is the %d-bit world's: %w", c, c.Entry, c.Entry.Row().World, ErrNoTrampoline)
	case !c.Mode.In(c.World) && c.World == W32 && c.Mode.PCID() && c.Mode.Row().Base.In(c.World):
		return fmt.Errorf("%v: PCID: %w (PCIDs exist only in IA-32e mode)", c, ErrNotInPAE)
	case !c.Mode.In(c.World) && c.World == W32:
		return fmt.Errorf("%v: isolation mode %v: %w (the 32-bit kernel has trampolines for %s)", c, c.Mode, ErrNotInPAE, modesIn(W32))
	case !c.Mode.In(c.World):
		return fmt.Errorf("%v: isolation mode %v: %w", c, c.Mode, ErrNoTrampoline)
	case !c.Mode.Has(c.Flavour):
		return fmt.Errorf("%v: the %v flavour in isolation mode %v: %w", c, c.Flavour, c.Mode, ErrNoTrampoline)
	case !c.Entry.HasSwitch(c.Mode.Row().Switch):
		return fmt.Errorf("%v: entry %v in the %s mode %v: %w", c, c.Entry, c.Mode.Row().Switch.kind(), c.Mode, ErrNoTrampoline)
	case c.Entry.Row().Flavours != nil && !slices.Contains(c.Entry.Row().Flavours, c.Flavour):
		return fmt.Errorf("%v: the %v flavour of entry %v: %w", c, c.Flavour, c.Entry, ErrNoTrampoline)
	case c.Knobs != 0 && !c.HasKnobs():
		return fmt.Errorf("%v: mitigations %v need the mitigated flavour", c, c.Knobs)
	case !c.Knobs.ActAt(onEntryPath):
		return fmt.Errorf("%v: mitigations %v: not all act on the system call's path or in the context switch (%s do)", c, c.Knobs, KnobsOf(EntryMitigations()...).names())
	case c.ASIActions != 0 && !c.Mode.ASI():
		return fmt.Errorf("%v: asi actions %v need an asi mode", c, c.ASIActions)
	case !c.ASIActions.ActAt(AtASIExit):
		return fmt.Errorf("%v: asi actions %v: not all are actions of the switch back (%s are)", c, c.ASIActions, KnobsOf(ASIActions()...).names())
	case c.World == W32 && c.Flavour == Mitigated && (c.Entry != Sysenter || c.Copy != Direct || c.Stamps):
		return fmt.Errorf("%v: the mitigated trampoline is SYSENTER's with the direct copy method, without stamps", c)
	case !c.HasCopy() && c.Copy != Movsl, c.Stamps && !(c.HasCopy() && c.Flavour == Linux):
		return fmt.Errorf("%v: copy methods and stamps are the linux SYSENTER trampoline's", c)
	}
	return nil
}

// modesIn names the modes of world w, joined by "and".
func modesIn(w Width) string {
	var names []string
	for _, m := range Modes() {
		if m.In(w) {
			names = append(names, m.String())
		}
	}
	return strings.Join(names, " and ")
}

// Pairs are c's fields as name=value pairs, in the key's order: width,
// mode, entry, flavour, copy (HasCopy), stamps (when set), global (on or
// off), knobs (HasKnobs), asi_actions (in an asi mode).
func (c Config) Pairs() [][2]string {
	p := [][2]string{
		{"width", strconv.Itoa(int(c.World))},
		{"mode", c.Mode.String()},
		{"entry", c.Entry.String()},
		{"flavour", c.Flavour.String()},
	}
	if c.HasCopy() {
		p = append(p, [2]string{"copy", c.Copy.String()})
	}
	if c.Stamps {
		p = append(p, [2]string{"stamps", "on"})
	}
	p = append(p, [2]string{"global", OnOff(c.Global)})
	if c.HasKnobs() {
		p = append(p, [2]string{"knobs", c.Knobs.String()})
	}
	if c.Mode.ASI() {
		p = append(p, [2]string{"asi_actions", c.ASIActions.String()})
	}
	return p
}

// ModeName names c's mode with its asi actions, as the tables' mode
// column does: the mode's name, and in an asi mode with actions the
// actions in brackets ("asi+pcid[verw+l1d]").
func (c Config) ModeName() string {
	if c.ASIActions == 0 {
		return c.Mode.String()
	}
	return c.Mode.String() + "[" + c.ASIActions.String() + "]"
}

// ParseModeName parses a ModeName: a mode's name, with asi actions in
// brackets after it or without.
func ParseModeName(s string) (Mode, Knobs, error) {
	name, actions, bracketed := strings.Cut(s, "[")
	m, err := ParseMode(name)
	if err != nil || !bracketed {
		return m, 0, err
	}
	inner, ok := strings.CutSuffix(actions, "]")
	if !ok {
		return m, 0, fmt.Errorf("%q: no ] after the asi actions", s)
	}
	k, err := ParseKnobs(inner)
	return m, k, err
}

// Key is c's canonical key: Pairs as "name=value" joined by spaces
// ("width=64 mode=on entry=syscall flavour=linux global=off"), the one
// name of a configuration in records, tables, comparisons, bounds and
// tests. ParseKey reverses it.
func (c Config) Key() string { return JoinPairs(c.Pairs()) }

func (c Config) String() string { return c.Key() }

// JoinPairs joins name=value pairs with spaces, a value that holds a
// space, a quote or nothing quoted as Go quotes it (target="kernel text").
// SplitPairs reverses it.
func JoinPairs(pairs [][2]string) string {
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		if p[1] == "" || strings.ContainsAny(p[1], " \t\"") {
			b.WriteString(strconv.Quote(p[1]))
		} else {
			b.WriteString(p[1])
		}
	}
	return b.String()
}

// SplitPairs splits a JoinPairs string into its name=value pairs, or
// says where it is not one.
func SplitPairs(s string) ([][2]string, error) {
	var out [][2]string
	for rest := strings.TrimLeft(s, " "); rest != ""; rest = strings.TrimLeft(rest, " ") {
		name, v, ok := strings.Cut(rest, "=")
		if !ok || name == "" || strings.Contains(name, " ") {
			return nil, fmt.Errorf("%q: %q is no name=value pair", s, rest)
		}
		if strings.HasPrefix(v, `"`) {
			q, err := strconv.QuotedPrefix(v)
			if err != nil {
				return nil, fmt.Errorf("%q: %s: %w", s, name, err)
			}
			rest = v[len(q):]
			v, _ = strconv.Unquote(q)
			if rest != "" && rest[0] != ' ' {
				return nil, fmt.Errorf("%q: %s: text after the quoted value", s, name)
			}
		} else {
			v, rest, _ = strings.Cut(v, " ")
		}
		out = append(out, [2]string{name, v})
	}
	return out, nil
}

// OnOff names a setting: "on" or "off".
func OnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// keyFields parse a key's values into a Config, by name.
var keyFields = map[string]func(c *Config, v string) error{
	"width": func(c *Config, v string) error {
		w, err := strconv.ParseUint(v, 10, 8)
		c.World = Width(w)
		return err
	},
	"mode":    func(c *Config, v string) (err error) { c.Mode, err = ParseMode(v); return },
	"entry":   func(c *Config, v string) (err error) { c.Entry, err = ParseEntry(v); return },
	"flavour": func(c *Config, v string) (err error) { c.Flavour, err = ParseFlavour(v); return },
	"copy":    func(c *Config, v string) (err error) { c.Copy, err = ParseCopy(v); return },
	"stamps":  func(c *Config, v string) (err error) { c.Stamps, err = parseOnOff(v); return },
	"global":  func(c *Config, v string) (err error) { c.Global, err = parseOnOff(v); return },
	"knobs":   func(c *Config, v string) (err error) { c.Knobs, err = ParseKnobs(v); return },
	"asi_actions": func(c *Config, v string) (err error) {
		c.ASIActions, err = ParseKnobs(v)
		return
	},
}

// ParseKey parses a Config.Key (the pairs in any order; absent copy,
// stamps, knobs and asi_actions are movsl, off, none and none).
func ParseKey(key string) (Config, error) {
	c := Config{}
	seen := map[string]bool{}
	for _, f := range strings.Fields(key) {
		name, v, ok := strings.Cut(f, "=")
		field := keyFields[name]
		switch {
		case !ok || seen[name]:
			return c, fmt.Errorf("key %q: bad or repeated pair %q", key, f)
		case field == nil:
			return c, fmt.Errorf("key %q: unknown field %q", key, name)
		}
		seen[name] = true
		if err := field(&c, v); err != nil {
			return c, fmt.Errorf("key %q: %w", key, err)
		}
	}
	for _, need := range []string{"width", "mode", "entry", "flavour", "global"} {
		if !seen[need] {
			return c, fmt.Errorf("key %q: no %s", key, need)
		}
	}
	return c, nil
}

func parseOnOff(v string) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither on nor off", v)
}
