// Package named is a set of values by name: the part that hload's
// registries (protocols.Registry, sinks.Registry) share. A registry is
// built by its caller and passed down; there is no process-wide one.
package named

import (
	"maps"
	"slices"
)

// Set holds values by name. Its zero value is empty and ready to use.
type Set[T any] struct {
	byName map[string]T
}

// With returns a new set holding s's values plus vs, each under name(v);
// a value of vs replaces one of s's with the same name, and of two in vs
// the later wins. s is not changed, so that a set built once can be
// shared while each caller adds its own.
func (s Set[T]) With(name func(T) string, vs ...T) Set[T] {
	out := Set[T]{byName: make(map[string]T, len(s.byName)+len(vs))}
	maps.Copy(out.byName, s.byName)
	for _, v := range vs {
		out.byName[name(v)] = v
	}
	return out
}

// Lookup returns the value with the given name.
func (s Set[T]) Lookup(name string) (T, bool) {
	v, ok := s.byName[name]
	return v, ok
}

// Names returns the names in the set, sorted.
func (s Set[T]) Names() []string {
	return slices.Sorted(maps.Keys(s.byName))
}

// Len is how many values the set holds.
func (s Set[T]) Len() int { return len(s.byName) }
