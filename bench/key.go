package bench

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A benchmark family's plan keys are registered with the engine, each
// with its default and its parser, beside the benchmarks that read it
// (Key, NewKey); the engine's own keys (the run's: fault, end, screen,
// benchmarks, pstate, pmu, pmu_events; the matrix every benchmark runs
// over: modes, flavours, global, n, r, warmup) are Plan's fields
// (planKeys). ParsePlan looks a line's key up in both.

// Key is a family's plan key whose values are T: the handle its
// benchmarks read it by (Of).
type Key[T any] struct{ name string }

// familyKey is a registered plan key: its default and its parser, which
// returns the value or the plan error's text.
type familyKey struct {
	def   any
	parse func(v string) (any, error)
}

// familyKeys are the families' plan keys by name (NewKey).
var familyKeys = map[string]familyKey{}

// NewKey registers plan key name, whose value is def without a plan line
// and otherwise what parse makes of the line's value (its error is the
// plan error's text, as "name must be ..."), and returns its handle. It
// panics when name is an engine key or registered already: keys are
// registered by the families' package initialization, and a clash is a
// programming error.
func NewKey[T any](name string, def T, parse func(v string) (T, error)) Key[T] {
	if _, ok := planKeys[name]; ok {
		panic("bench: plan key " + name + " is the engine's")
	}
	if _, ok := familyKeys[name]; ok {
		panic("bench: plan key " + name + " registered twice")
	}
	familyKeys[name] = familyKey{def: def, parse: func(v string) (any, error) { return parse(v) }}
	return Key[T]{name}
}

// IntKey registers plan key name, an integer from lo to hi, default def
// (NewKey).
func IntKey(name string, def, lo, hi int) Key[int] {
	return NewKey(name, def, func(v string) (int, error) { return IntIn(v, name, lo, hi) })
}

// Name is the key's name in plans.
func (k Key[T]) Name() string { return k.name }

// Of is the key's value in p: its plan line's, or its default.
func (k Key[T]) Of(p Plan) T {
	if v, ok := p.values[k.name]; ok {
		return v.(T)
	}
	return familyKeys[k.name].def.(T)
}

// Set sets the key's value in p (as a plan line would; for plans made in
// code), leaving copies of p made before unchanged.
func (k Key[T]) Set(p *Plan, v T) { p.set(k.name, v) }

// set sets family key name's value in p, on a copy of p's values.
func (p *Plan) set(name string, v any) {
	p.values = maps.Clone(p.values)
	if p.values == nil {
		p.values = map[string]any{}
	}
	p.values[name] = v
}

// defaultValues are every family key's default, by name.
func defaultValues() map[string]any {
	out := make(map[string]any, len(familyKeys))
	for n, k := range familyKeys {
		out[n] = k.def
	}
	return out
}

// ListOf parses a comma-separated list of values, each by parse (the
// model's Parse functions: experiment.ParseMode, ParseFlavour, ...), in
// the order given, without repeats; a value parse refuses makes an error
// that lists the valid names (names, sorted): "what must be a
// comma-separated list of ...", or "what lists x twice".
func ListOf[T comparable](v string, parse func(string) (T, error), names []string, what string) ([]T, error) {
	var out []T
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		x, err := parse(f)
		if err != nil {
			sorted := slices.Sorted(slices.Values(names))
			return nil, fmt.Errorf("%s must be a comma-separated list of %s", what, strings.Join(sorted, ", "))
		}
		if slices.Contains(out, x) {
			return nil, fmt.Errorf("%s lists %s twice", what, f)
		}
		out = append(out, x)
	}
	return out, nil
}

// namesOf are the names of xs (the model's rows).
func namesOf[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

// OneOf parses a name that must be one of names (for ListOf).
func OneOf(names []string) func(string) (string, error) {
	return func(n string) (string, error) {
		if !slices.Contains(names, n) {
			return "", fmt.Errorf("%q is not one of %s", n, strings.Join(names, ", "))
		}
		return n, nil
	}
}

// IntIn parses an integer between lo and hi; the error says "what must
// be an integer from lo to hi".
func IntIn(v, what string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s must be an integer from %d to %d", what, lo, hi)
	}
	return n, nil
}

// IntList parses a comma-separated list of integers from lo to hi,
// without repeats; with none, "none" is the empty list.
func IntList(v, what string, lo, hi int, none bool) ([]int, error) {
	if none && v == "none" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := IntIn(strings.TrimSpace(f), what, lo, hi)
		if err != nil {
			msg := fmt.Sprintf("%s must be a comma-separated list of integers from %d to %d", what, lo, hi)
			if none {
				msg += ", or none"
			}
			return nil, errors.New(msg)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("%s lists %d twice", what, n)
		}
		out = append(out, n)
	}
	return out, nil
}
