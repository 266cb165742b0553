package packageset

// Rule: node edges (NixFleet's edges[] {after, before, reason} between hosts): the after node
// does not start the set's new version until the before node is done for the set; the reason
// is shown where the after node waits.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// NodeEdgeCycle returns a cycle of node edges as the node names from a node back to it
// (["a", "b", "a"]), or nil when the edges form none: every node of a cycle would wait for the
// next for ever (an invalid spec; NixFleet's edges form a DAG). The search starts from the
// nodes in the order the edges first name them and follows each node's edges in their order,
// so the cycle reported is stable.
func NodeEdgeCycle(edges []v1alpha1.NodeEdge) []string {
	next := map[string][]string{} // before → afters
	var order []string
	seenNode := map[string]bool{}
	for _, e := range edges {
		next[e.Before] = append(next[e.Before], e.After)
		for _, n := range []string{e.Before, e.After} {
			if !seenNode[n] {
				seenNode[n] = true
				order = append(order, n)
			}
		}
	}
	state := map[string]int{} // 0 new, 1 on the path, 2 done
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = 1
		path = append(path, n)
		for _, m := range next[n] {
			switch state[m] {
			case 1:
				i := len(path) - 1
				for path[i] != m {
					i--
				}
				return append(append([]string(nil), path[i:]...), m)
			case 0:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = 2
		return nil
	}
	for _, n := range order {
		if state[n] == 0 {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

// NodeEdgeCycleMessage is the invalid-spec message of a cycle NodeEdgeCycle found.
func NodeEdgeCycleMessage(cycle []string) string {
	return fmt.Sprintf("spec.rollout.nodeEdges form a cycle, %s: each of these nodes would wait for the next for ever; remove one of the edges",
		strings.Join(cycle, " → "))
}

// edgeSpecErr is specErr, or the node edges' cycle when there is no other spec error.
func edgeSpecErr(specErr error, f SetFacts) error {
	if specErr != nil {
		return specErr
	}
	if c := NodeEdgeCycle(f.NodeEdges); c != nil {
		return fmt.Errorf("%s", NodeEdgeCycleMessage(c))
	}
	return nil
}

// edgeWaits maps each selected node to the before nodes its edges wait for (sorted by name,
// each named by edgeWait, with its edge's reason): selected nodes not done for the set (with
// work to do for wants, or in flight: their rollout Activating, Deferred, Soaking or Failed,
// or cordoned). An edge naming a node the set does not
// select is ignored. Nil while deleting (an uninstall waits for no edge).
func edgeWaits(f SetFacts, nodes []NodeFacts, wants []Want) map[string][]string {
	if len(f.NodeEdges) == 0 || f.Deleting {
		return nil
	}
	byName := make(map[string]NodeFacts, len(nodes))
	for _, n := range nodes {
		if n.Selected {
			byName[n.Name] = n
		}
	}
	notDone := map[string]bool{}
	for name, n := range byName {
		p := newNodePass(&f, n, wants, nil, nil)
		notDone[name] = p.needsWork() || n.Record != nil && (InFlight(n.Record.Rollout) || n.Cordoned)
	}
	befores := map[string][]string{}
	reasons := map[[2]string]string{} // {after, before} → the first edge's reason
	for _, e := range f.NodeEdges {
		if _, ok := byName[e.After]; !ok || !notDone[e.Before] {
			continue
		}
		if !slices.Contains(befores[e.After], e.Before) {
			befores[e.After] = append(befores[e.After], e.Before)
		}
		if k := [2]string{e.After, e.Before}; reasons[k] == "" {
			reasons[k] = e.Reason
		}
	}
	out := make(map[string][]string, len(befores))
	for after, bs := range befores {
		sort.Strings(bs)
		for _, b := range bs {
			out[after] = append(out[after], edgeWait(b, reasons[[2]string{after, b}]))
		}
	}
	return out
}

// edgeWait is how a before node a node waits for is named: "<before>", or "<before>
// (<reason>)" when its edge gives a reason (NixFleet's edges[].reason).
func edgeWait(before, reason string) string {
	if reason = strings.TrimSpace(reason); reason != "" {
		return before + " (" + reason + ")"
	}
	return before
}

// holdForEdges holds the node (status waiting) while before nodes of its edges are not done,
// unless it is in flight already (it finishes) or something else holds it; the status line
// "<node> waits for <before>, ..." when it does.
func holdForEdges(p *nodePass, waits []string, wasInFlight bool) string {
	if len(waits) == 0 || p.hold != "" || !p.n.Selected || wasInFlight || !p.needsWork() {
		return ""
	}
	p.hold = v1alpha1.StatusWaiting
	return p.n.Name + " waits for " + strings.Join(waits, ", ")
}
