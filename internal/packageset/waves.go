package packageset

// Rule: rollout waves (NixFleet's waves): nodes of a later wave start only once every node of
// the earlier waves is done.

import (
	"fmt"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// RestWave names, in status.currentWave, the nodes no wave picks (they come last).
const RestWave = "(rest)"

// WaveMatcher returns the function that gives a node's wave from its labels: the index of the
// first wave whose selector matches, else len(waves) (the rest, last). Errors: a selector the
// API machinery rejects, naming the wave.
func WaveMatcher(waves []v1alpha1.Wave) (func(map[string]string) int, error) {
	sels := make([]metav1.LabelSelector, len(waves))
	for i := range waves {
		sels[i] = waves[i].Selector
	}
	return firstMatching(sels, func(i int) string { return fmt.Sprintf("rollout.waves[%d] (%s).selector", i, waves[i].Name) })
}

// firstMatching parses sels and returns the function that gives the index of the first of
// them matching a node's labels, len(sels) when none does. Errors: a selector the API
// machinery rejects, prefixed by field(i).
func firstMatching(sels []metav1.LabelSelector, field func(i int) string) (func(map[string]string) int, error) {
	parsed := make([]labels.Selector, len(sels))
	for i := range sels {
		s, err := metav1.LabelSelectorAsSelector(&sels[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field(i), err)
		}
		parsed[i] = s
	}
	return func(l map[string]string) int {
		for i, s := range parsed {
			if s.Matches(labels.Set(l)) {
				return i
			}
		}
		return len(parsed)
	}, nil
}

// currentWave is the lowest wave (NodeFacts.Wave) of a selected node not done yet: one with
// work to do for wants, or in flight (its rollout Activating, Deferred, Soaking or Failed, or
// cordoned); math.MaxInt when every node is done.
func currentWave(f SetFacts, nodes []NodeFacts, wants []Want) int {
	cur := math.MaxInt
	for _, n := range nodes {
		if !n.Selected || n.Wave >= cur {
			continue
		}
		p := newNodePass(&f, n, wants, nil, nil)
		if p.needsWork() || n.Record != nil && (InFlight(n.Record.Rollout) || n.Cordoned) {
			cur = n.Wave
		}
	}
	return cur
}

// waveAfter is the lowest wave of a selected node whose plan this pass is not complete
// (math.MaxInt when all are): the wave under way once the pass is done, so a pass that
// completes the last wave reports none (the facts alone still name it).
func waveAfter(nodes []NodeFacts, plans []NodePlan) int {
	status := make(map[string]Status, len(plans))
	for _, np := range plans {
		status[np.Name] = np.Status
	}
	cur := math.MaxInt
	for _, n := range nodes {
		if n.Selected && n.Wave < cur && status[n.Name] != v1alpha1.StatusComplete {
			cur = n.Wave
		}
	}
	return cur
}

// WaveName is wave i's name in status (RestWave past the listed waves; "" for none).
func WaveName(waves []string, i int) string {
	switch {
	case i == math.MaxInt || len(waves) == 0:
		return ""
	case i < len(waves):
		return waves[i]
	}
	return RestWave
}
