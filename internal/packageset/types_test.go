package packageset

import (
	"fmt"
	"strings"
	"testing"
)

// Order: each package after the ones it depends on, ties in the user's order; a cycle (named)
// or an unknown dependency is an error.
func TestOrder(t *testing.T) {
	w := func(name string, deps ...string) Want { return Want{Name: name, DependsOn: deps} }
	for _, tc := range []struct {
		name string
		in   []Want
		want string // the names in order, or the error's text
	}{
		{"none", nil, "[]"},
		{"no dependencies: the user's order", []Want{w("c"), w("a"), w("b")}, "[c a b]"},
		{"chain", []Want{w("c", "b"), w("a"), w("b", "a")}, "[a b c]"},
		{"diamond: a package's dependencies first, in the order it lists them", []Want{w("top", "right", "left"), w("right", "base"), w("left", "base"), w("base")}, "[base right left top]"},
		{"a dependency listed later moves up", []Want{w("x"), w("y", "z"), w("z")}, "[x z y]"},
		{"unknown dependency", []Want{w("a", "ghost")}, "package a depends on unknown package ghost"},
		{"self cycle", []Want{w("a", "a")}, "spec.packages[].dependsOn form a cycle, a → a: each package would wait for the next for ever; remove one of the dependencies"},
		{"2-cycle", []Want{w("a", "b"), w("b", "a")}, "spec.packages[].dependsOn form a cycle, a → b → a: each package would wait for the next for ever; remove one of the dependencies"},
		{"3-cycle", []Want{w("a", "c"), w("b", "a"), w("c", "b")}, "spec.packages[].dependsOn form a cycle, a → c → b → a: each package would wait for the next for ever; remove one of the dependencies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Order(tc.in)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				names := []string{}
				for _, o := range out {
					names = append(names, o.Name)
				}
				got = fmt.Sprint(names)
			}
			if got != tc.want {
				t.Errorf("Order = %s, want %s", got, tc.want)
			}
			if err != nil && strings.Contains(tc.name, "cycle") && !strings.Contains(err.Error(), "cycle") {
				t.Errorf("a cycle not reported as one: %v", err)
			}
		})
	}
}
