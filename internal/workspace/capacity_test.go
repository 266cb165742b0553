package workspace

import (
	"fmt"
	"strings"
	"testing"
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
			got := CapacityOf(c.nodes, sel, nil, c.perReplica)
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
