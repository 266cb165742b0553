package packageset

// What a pass reads from the cluster's objects, as pure functions shared by the reconciler (a
// pass's facts) and the provider (the rollout preview at plan), so both read the same nodes the
// same way.

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// SpecFacts fills the facts f of a pass that come from the set's spec and status alone
// (packages, rollout, soak, health checks, release, quarantines, drain, policy, waves, node
// edges) and returns the node selector and the wave and compartment matchers; an invalid
// selector or matcher is f.SpecError and selects no node (an invalid pod selector of the
// drain is f.SpecError alone).
func SpecFacts(set *v1alpha1.PackageSet, f *SetFacts) (labels.Selector, func(map[string]string) int, func(map[string]string) string) {
	f.Wants = WantsOf(set.Spec.Packages)
	f.AdoptFrom = set.Annotations[v1alpha1.AnnotationAdoptFromSkyhook]
	if ro := set.Spec.Rollout; ro != nil {
		if ro.SoakDuration != nil {
			f.Soak = ro.SoakDuration.Duration
		}
		if ro.SoakCheckInterval != nil {
			f.SoakInterval = ro.SoakCheckInterval.Duration
		}
		f.OnHealthFailure = ro.OnHealthFailure
		f.HealthChecks = HealthChecksOf(ro)
	}
	// The release is verified on every pass (a local key, no network): before any stage starts.
	f.Release = CheckRelease(&set.Spec, f.Now)
	f.Quarantined = set.Status.QuarantinedVersions
	f.Drain = DrainSpecOf(set.Spec.Drain)
	f.ClearQuarantine = ParseClearQuarantine(set.Annotations[v1alpha1.AnnotationClearQuarantine])
	sel, err := metav1.LabelSelectorAsSelector(&set.Spec.NodeSelector)
	if err != nil {
		// The API server accepted the set but its selector is invalid: the set is Stalled
		// (InvalidSpec, the parser's message), selects no node, and a deletion still
		// releases the nodes that carry its records.
		f.SpecError = "spec.nodeSelector: " + err.Error()
		sel = labels.Nothing()
	}
	if _, err := DrainPodsOf(&set.Spec, types.NamespacedName{}); err != nil {
		// A selector the CRD accepted that does not parse (a label value with a space): the
		// set is Stalled (InvalidSpec) and starts nothing, instead of failing every pass that
		// drains.
		f.SpecError = err.Error()
	}
	if msg := fleetSelectorError(set); msg != "" {
		// A fleet budget nodeSelector the CRD accepted that does not parse: the set is
		// Stalled (InvalidSpec) and starts nothing, instead of a budget nobody can read.
		f.SpecError = msg
	}
	if err := NegativeResources(set.Spec.Packages); err != nil && f.SpecError == "" {
		// The CRD cannot refuse it within the API server's CEL budget (32 packages × two
		// unbounded maps), and every stage Pod would be refused: Stalled (InvalidSpec).
		f.SpecError = err.Error()
	}
	f.Policy = PolicyOf(set.Spec.DeploymentPolicy, set.Status.Compartments)
	var waves []v1alpha1.Wave
	if ro := set.Spec.Rollout; ro != nil {
		waves = ro.Waves
		f.NodeEdges = ro.NodeEdges
	}
	for _, w := range waves {
		f.Waves = append(f.Waves, w.Name)
		soak := time.Duration(-1) // the rollout's
		if w.SoakDuration != nil {
			soak = w.SoakDuration.Duration
		}
		f.WaveSoaks = append(f.WaveSoaks, soak)
	}
	waveOf, err := WaveMatcher(waves)
	if err != nil {
		f.SpecError = "spec." + err.Error()
		sel, waveOf = labels.Nothing(), func(map[string]string) int { return 0 }
	}
	compartmentOf, err := CompartmentMatcher(set.Spec.DeploymentPolicy)
	if err != nil {
		f.SpecError = "spec." + err.Error()
		sel, compartmentOf = labels.Nothing(), func(map[string]string) string { return DefaultCompartment }
	}
	return sel, waveOf, compartmentOf
}

// NodeReader reads the per-node facts of one set's pass from the cluster's nodes and package
// sets (NewNodeReader); Read is called once per node.
type NodeReader struct {
	set           *v1alpha1.PackageSet
	sets          []v1alpha1.PackageSet
	sel           labels.Selector
	waveOf        func(map[string]string) int
	compartmentOf func(map[string]string) string
	incomplete    map[string]bool
	tolerations   []corev1.Toleration
}

// NewNodeReader fills f's spec facts (SpecFacts), the after-cycle spec error, the fleet
// budget facts (FleetFactsOf over nodes; the reconciler may replace them with an uncached
// read) and the afterConverged holds (ConvergedWaits), and returns the reader of the per-node facts. sets are the cluster's package sets;
// tolerations the stage pods' (StageTolerations and the runtime-required taint's).
func NewNodeReader(set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet, nodes []corev1.Node, tolerations []corev1.Toleration, f *SetFacts) *NodeReader {
	r := &NodeReader{set: set, sets: sets, tolerations: tolerations}
	r.sel, r.waveOf, r.compartmentOf = SpecFacts(set, f)
	if cycle := AfterCycle(set, sets); cycle != nil && f.SpecError == "" {
		f.SpecError = AfterCycleMessage(cycle, set, sets)
	}
	r.incomplete = IncompleteEverywhere(sets, nodes)
	f.Fleet = FleetFactsOf(set, sets, nodes)
	f.ConvergedWaits = ConvergedWaits(set, sets, nodes)
	return r
}

// Read returns the node's facts for the set, without its stage pods (Jobs) and drain facts
// (Drained, NonInterrupt, Terminating), which the caller adds; ok is false for a node the set
// neither selects nor holds a record on. Error: the node's record annotation does not parse.
func (r *NodeReader) Read(node *corev1.Node) (nf NodeFacts, ok bool, err error) {
	raw, hasRecord := node.Annotations[v1alpha1.AnnotationNodeStatePrefix+r.set.Name]
	selected := r.sel.Matches(labels.Set(node.Labels))
	if !selected && !hasRecord {
		return nf, false, nil
	}
	nf = NodeFacts{Name: node.Name, Selected: selected, BootID: node.Status.NodeInfo.BootID, Allocatable: ExtendedAllocatable(node),
		Compartment: r.compartmentOf(node.Labels), Wave: r.waveOf(node.Labels)}
	if hasRecord {
		rec := &NodeRecord{}
		if err := json.Unmarshal([]byte(raw), rec); err != nil {
			return nf, false, fmt.Errorf("node %s annotation %s%s is not a node record: %w", node.Name, v1alpha1.AnnotationNodeStatePrefix, r.set.Name, err)
		}
		nf.Record = rec
	}
	if from := r.set.Annotations[v1alpha1.AnnotationAdoptFromSkyhook]; from != "" && selected {
		if raw, ok := node.Annotations[v1alpha1.SkyhookNodeStatePrefix+from]; ok {
			st, err := ParseSkyhookNodeState(raw)
			if err != nil {
				nf.SkyhookUnreadable = fmt.Sprintf("annotation %s%s is not Skyhook's node state: %v", v1alpha1.SkyhookNodeStatePrefix, from, err)
			}
			nf.Skyhook = st
		}
	}
	nf.Blocked, nf.WaitFor = TaintHold(node.Spec.Taints, node.Status.Conditions, r.tolerations, r.set.Spec.RuntimeRequired)
	nf.Gate, nf.GateSet = GateOf(r.set, r.sets, node.Labels, node.Annotations, r.incomplete)
	_, nf.Cordoned = node.Annotations[v1alpha1.AnnotationCordonPrefix+r.set.Name]
	nf.Cordoned = nf.Cordoned && node.Spec.Unschedulable
	return nf, true, nil
}
