package named

import (
	"slices"
	"testing"
)

type item struct{ name, v string }

func nameOf(i item) string { return i.name }

func TestSet(t *testing.T) {
	var empty Set[item]
	if _, ok := empty.Lookup("a"); ok || len(empty.Names()) != 0 || empty.Len() != 0 {
		t.Fatalf("the zero set is not empty: %v", empty.Names())
	}
	base := empty.With(nameOf, item{"b", "1"}, item{"a", "1"}, item{"b", "2"})
	if got := base.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("names %v, want [a b], sorted, once each", got)
	}
	if v, _ := base.Lookup("b"); v.v != "2" {
		t.Errorf("b = %q, want the later of two with one name", v.v)
	}
	more := base.With(nameOf, item{"a", "3"}, item{"c", "1"})
	if v, _ := more.Lookup("a"); v.v != "3" || more.Len() != 3 {
		t.Errorf("a = %q in %v, want the added value to replace the base's", v.v, more.Names())
	}
	if v, _ := base.Lookup("a"); v.v != "1" || base.Len() != 2 {
		t.Errorf("base changed by With: a = %q, names %v", v.v, base.Names())
	}
}
