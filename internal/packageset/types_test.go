package packageset

import (
	"strings"
	"testing"
)

func TestOrder(t *testing.T) {
	got, err := Order([]Want{{Name: "c", DependsOn: []string{"b"}}, {Name: "a"}, {Name: "b", DependsOn: []string{"a"}}})
	if err != nil || got[0].Name != "a" || got[1].Name != "b" || got[2].Name != "c" {
		t.Errorf("Order = %v, %v", got, err)
	}
	if _, err := Order([]Want{{Name: "a", DependsOn: []string{"c"}}, {Name: "b", DependsOn: []string{"a"}}, {Name: "c", DependsOn: []string{"b"}}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("3-cycle: %v", err)
	}
}
