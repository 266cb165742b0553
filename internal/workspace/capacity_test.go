package workspace

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapacityOf counts what other pods leave free: placeable replicas per node are free GPUs /
// GPUs per replica, and the message names free/allocatable per node.
func TestCapacityOfFree(t *testing.T) {
	sel := map[string]string{"nvidia.com/gpu.product": "H100"}
	node := func(name string, alloc, used int64) Node {
		return Node{Name: name, Labels: map[string]string{"nvidia.com/gpu.product": "H100"}, Ready: true, AllocatableGPU: alloc, UsedGPU: used}
	}
	for _, c := range []struct {
		name        string
		nodes       []Node
		perReplica  int32
		total, free int64
		placeable   int32
		message     string
	}{
		{"empty nodes", []Node{node("a", 8, 0), node("b", 8, 0)}, 4, 16, 16, 4, ""},
		{"one node mostly used", []Node{node("a", 8, 6), node("b", 8, 0)}, 4, 16, 10, 2, "10 of 16 GPUs free"},
		{"over-committed node counts 0", []Node{node("a", 8, 9)}, 1, 8, 0, 0, "a 0/8"},
		{"free GPUs split across nodes do not make a replica", []Node{node("a", 8, 6), node("b", 8, 6)}, 4, 16, 4, 0, "a 2/8, b 2/8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CapacityOf(c.nodes, sel, nil, nil, c.perReplica)
			if got.TotalGPUs != c.total || got.FreeGPUs != c.free || got.PlaceableReplicas != c.placeable {
				t.Fatalf("total %d free %d placeable %d, want %d %d %d", got.TotalGPUs, got.FreeGPUs, got.PlaceableReplicas, c.total, c.free, c.placeable)
			}
			msg := got.insufficientMessage(c.placeable + 1)
			if c.message != "" && !strings.Contains(msg, c.message) {
				t.Errorf("message %q lacks %q", msg, c.message)
			}
			if !strings.Contains(msg, fmt.Sprintf("room for %d replica(s)", c.placeable)) {
				t.Errorf("message %q", msg)
			}
		})
	}
}

// spec.resource.labelSelectorExpressions: only the nodes that meet them count, and the
// message's selector names them as kubectl writes a selector.
func TestCapacityOfExpressions(t *testing.T) {
	node := func(name, zone string, spot bool) Node {
		l := map[string]string{"gpu": "true", "zone": zone}
		if spot {
			l["spot"] = "true"
		}
		return Node{Name: name, Labels: l, Ready: true, AllocatableGPU: 4}
	}
	nodes := []Node{node("a", "z1", false), node("b", "z2", false), node("c", "z2", true), node("d", "z3", false)}
	in := func(k string, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: v}
	}
	for _, c := range []struct {
		name     string
		exprs    []metav1.LabelSelectorRequirement
		matching int
		selector string
	}{
		{"none", nil, 4, "gpu=true"},
		{"in", []metav1.LabelSelectorRequirement{in("zone", "z1", "z2")}, 3, "gpu=true,zone in (z1,z2)"},
		{"not in", []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"z2"}}}, 2, "gpu=true,zone notin (z2)"},
		{"does not exist", []metav1.LabelSelectorRequirement{{Key: "spot", Operator: metav1.LabelSelectorOpDoesNotExist}}, 3, "gpu=true,!spot"},
		{"exists", []metav1.LabelSelectorRequirement{{Key: "spot", Operator: metav1.LabelSelectorOpExists}}, 1, "gpu=true,spot"},
		{"all of them", []metav1.LabelSelectorRequirement{in("zone", "z2"), {Key: "spot", Operator: metav1.LabelSelectorOpDoesNotExist}}, 1, "gpu=true,zone in (z2),!spot"},
		{"invalid matches nothing", []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn}}, 0, "invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CapacityOf(nodes, map[string]string{"gpu": "true"}, c.exprs, []corev1.Toleration(nil), 1)
			if got.MatchingNodes != c.matching || !strings.Contains(got.Selector, c.selector) {
				t.Errorf("matching %d selector %q, want %d %q", got.MatchingNodes, got.Selector, c.matching, c.selector)
			}
			if c.matching == 0 && !strings.Contains(got.noMatchMessage(), "node selector "+got.Selector) {
				t.Errorf("message %q", got.noMatchMessage())
			}
		})
	}
}
