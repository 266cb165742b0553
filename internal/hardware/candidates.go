package hardware

// Which nodes can take a Pod placed by a Placement, judged as the scheduler's filters judge it
// (NodeAffinity, TaintToleration, NodeUnschedulable, NodeResourcesFit), in two tiers: fit, which
// changes only when a node joins, leaves or is relabelled, re-tainted or resized; and free now,
// which also counts cordons, taints the cluster adds and removes itself (transientTaints) and
// other pods' requests. The split serves the plan: a count known at plan must hold at apply, so
// it depends on fit only; what is free now goes in the plan's warning.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// transientTaints are the taint keys the cluster puts on a node and takes off again without
// the node's owner, each with what it means (for messages). A node carrying one still fits;
// it is not free now. Kubernetes' own (k8s.io/api/core/v1 well_known_taints.go: the node
// lifecycle controller's from the node's conditions, the cordon's, out-of-service), the cloud
// controller manager's uninitialized taint (the same set as packageset.NodeConditionTaints,
// plus the cordon and out-of-service), Karpenter's (a node not registered yet, a node being
// disrupted) and the key of a Gantry package set's default runtime-required taint (Skyhook's
// runtimeRequired: removed once the node's runtime-required packages are complete).
var transientTaints = map[string]string{
	corev1.TaintNodeNotReady:                         "not Ready",
	corev1.TaintNodeUnreachable:                      "unreachable",
	corev1.TaintNodeUnschedulable:                    "cordoned",
	corev1.TaintNodeMemoryPressure:                   "under memory pressure",
	corev1.TaintNodeDiskPressure:                     "under disk pressure",
	corev1.TaintNodePIDPressure:                      "under PID pressure",
	corev1.TaintNodeNetworkUnavailable:               "network unavailable",
	corev1.TaintNodeOutOfService:                     "out of service",
	"node.cloudprovider.kubernetes.io/uninitialized": "not initialised by the cloud controller manager yet",
	"karpenter.sh/unregistered":                      "not registered by Karpenter yet",
	"karpenter.sh/disrupted":                         "being disrupted by Karpenter",
	runtimeRequiredKey():                             "runtime-required packages not complete yet (Skyhook runtimeRequired)",
}

// runtimeRequiredKey is the key of v1alpha1.DefaultRuntimeRequiredTaint ("key=value:Effect").
func runtimeRequiredKey() string {
	kv, _, _ := strings.Cut(v1alpha1.DefaultRuntimeRequiredTaint, ":")
	k, _, _ := strings.Cut(kv, "=")
	return k
}

// Candidates returns, sorted, the nodes that can take a Pod placed by p with these container
// requests: fit (no Misfit: labels, the node's own non-transient NoSchedule/NoExecute taints,
// allocatable) and free, those of fit that can take it now (NotNow empty: not cordoned, no
// untolerated transient taint, requests within allocatable less inUse[node]). nodes may be
// empty and inUse nil.
func Candidates(p Placement, requests corev1.ResourceList, nodes []corev1.Node, inUse map[string]corev1.ResourceList) (fit, free []string) {
	for i := range nodes {
		n := &nodes[i]
		if len(p.Misfit(n, requests)) > 0 {
			continue
		}
		fit = append(fit, n.Name)
		if len(p.NotNow(n, requests, inUse[n.Name])) == 0 {
			free = append(free, n.Name)
		}
	}
	sort.Strings(fit)
	sort.Strings(free)
	return fit, free
}

// Misfit returns why node n can never take a Pod placed by p requesting requests as the node
// is (nil when it fits), in this order, each a phrase: a node-selector label it lacks ("no
// label nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 (GPU type NVIDIA-H100-80GB-HBM3)") or has
// with another value ("label nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB, not ..."), the
// required node affinity ("required node affinity not matched"), each NoSchedule/NoExecute
// taint of its own p does not tolerate ("taint nvidia.com/gpu=present:NoSchedule not
// tolerated"; transient taints are NotNow's), each request above its allocatable
// ("nvidia.com/gpu: 8 allocatable, 16 asked").
func (p Placement) Misfit(n *corev1.Node, requests corev1.ResourceList) []string {
	var out []string
	for _, k := range sortedKeys(p.NodeSelector) {
		want := p.NodeSelector[k]
		switch have, ok := n.Labels[k]; {
		case !ok:
			out = append(out, "no label "+k+"="+want+labelMeaning(k, want))
		case have != want:
			out = append(out, fmt.Sprintf("label %s=%s, not %s%s", k, have, want, labelMeaning(k, want)))
		}
	}
	if !requiredAffinityMatches(p.Affinity, n) {
		out = append(out, "required node affinity not matched")
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if blocksScheduling(t) && transientTaints[t.Key] == "" && !p.Tolerates(t) {
			out = append(out, "taint "+t.ToString()+" not tolerated")
		}
	}
	for _, name := range sortedResourceNames(requests) {
		q := requests[name]
		alloc := n.Status.Allocatable[name]
		if q.Sign() > 0 && alloc.Cmp(q) < 0 {
			out = append(out, fmt.Sprintf("%s: %s allocatable, %s asked", name, alloc.String(), q.String()))
		}
	}
	return out
}

// NotNow returns why node n, which fits (Misfit is empty), cannot take a Pod placed by p
// requesting requests at this moment (nil when it can), each a phrase: "cordoned"
// (spec.unschedulable, or its taint), a transient taint p does not tolerate ("not Ready
// (taint node.kubernetes.io/not-ready:NoExecute)"), a request above what is free
// ("nvidia.com/gpu: 0 of 8 free, 1 asked": allocatable less inUse, never below 0). inUse is
// what the pods bound to n request (RequestsInUse; nil: nothing).
func (p Placement) NotNow(n *corev1.Node, requests, inUse corev1.ResourceList) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if n.Spec.Unschedulable && !p.Tolerates(&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		add(transientTaints[corev1.TaintNodeUnschedulable])
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		why := transientTaints[t.Key]
		switch {
		case why == "" || !blocksScheduling(t) || p.Tolerates(t):
		case t.Key == corev1.TaintNodeUnschedulable:
			add(why)
		default:
			add(why + " (taint " + t.ToString() + ")")
		}
	}
	for _, name := range sortedResourceNames(requests) {
		q := requests[name]
		alloc := n.Status.Allocatable[name]
		free := alloc.DeepCopy()
		free.Sub(inUse[name])
		if free.Sign() < 0 {
			free = *resource.NewQuantity(0, alloc.Format)
		}
		if q.Sign() > 0 && free.Cmp(q) < 0 {
			add(fmt.Sprintf("%s: %s of %s free, %s asked", name, free.String(), alloc.String(), q.String()))
		}
	}
	return out
}

// Tolerates reports whether one of p's tolerations tolerates taint t
// (corev1.Toleration.ToleratesTaint: key, operator, value and effect).
func (p Placement) Tolerates(t *corev1.Taint) bool {
	for i := range p.Tolerations {
		if p.Tolerations[i].ToleratesTaint(t) {
			return true
		}
	}
	return false
}

// blocksScheduling: a NoSchedule or NoExecute taint (the scheduler ignores PreferNoSchedule).
func blocksScheduling(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// Nearest names the nodes closest to taking a Pod placed by p requesting requests, for a
// message when none fits: at most limit nodes of those that do not fit, fewest Misfit reasons
// first (then by name), each "name (reason; reason)". Empty when nodes is.
func Nearest(p Placement, requests corev1.ResourceList, nodes []corev1.Node, limit int) []string {
	type near struct {
		name    string
		reasons []string
	}
	var all []near
	for i := range nodes {
		if r := p.Misfit(&nodes[i], requests); len(r) > 0 {
			all = append(all, near{nodes[i].Name, r})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if len(all[i].reasons) != len(all[j].reasons) {
			return len(all[i].reasons) < len(all[j].reasons)
		}
		return all[i].name < all[j].name
	})
	var out []string
	for _, n := range all[:min(limit, len(all))] {
		out = append(out, n.name+" ("+strings.Join(n.reasons, "; ")+")")
	}
	return out
}

// Busy names the nodes that fit a Pod placed by p requesting requests but cannot take it now,
// for a message when none is free: at most limit of them, in the order of nodes, each "name
// (reason; reason)" (NotNow's reasons). inUse is as for Candidates.
func Busy(p Placement, requests corev1.ResourceList, nodes []corev1.Node, inUse map[string]corev1.ResourceList, limit int) []string {
	var out []string
	for i := range nodes {
		n := &nodes[i]
		if len(out) == limit {
			break
		}
		if len(p.Misfit(n, requests)) > 0 {
			continue
		}
		if r := p.NotNow(n, requests, inUse[n.Name]); len(r) > 0 {
			out = append(out, n.Name+" ("+strings.Join(r, "; ")+")")
		}
	}
	return out
}

// Asks describes what p and requests ask of a node, for messages: "node selector
// nvidia.com/gpu.present=true, nvidia.com/gpu.product=X; tolerations nvidia.com/gpu:NoSchedule
// (Exists); required node affinity; requests nvidia.com/gpu: 1" (empty parts left out;
// "nothing in particular" when all are).
func (p Placement) Asks(requests corev1.ResourceList) string {
	var parts []string
	if len(p.NodeSelector) > 0 {
		var sel []string
		for _, k := range sortedKeys(p.NodeSelector) {
			sel = append(sel, k+"="+p.NodeSelector[k])
		}
		parts = append(parts, "node selector "+strings.Join(sel, ", "))
	}
	if len(p.Tolerations) > 0 {
		var tols []string
		for _, t := range p.Tolerations {
			tols = append(tols, TolerationString(t))
		}
		parts = append(parts, "tolerations "+strings.Join(tols, ", "))
	}
	if a := p.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		parts = append(parts, "required node affinity")
	}
	if r := RequestsString(requests); r != "" {
		parts = append(parts, "requests "+r)
	}
	if len(parts) == 0 {
		return "nothing in particular"
	}
	return strings.Join(parts, "; ")
}

// RequestsString renders requests "name: quantity, ..." sorted by name, leaving out zero
// quantities; "" when none is left.
func RequestsString(requests corev1.ResourceList) string {
	var out []string
	for _, name := range sortedResourceNames(requests) {
		if q := requests[name]; q.Sign() > 0 {
			out = append(out, fmt.Sprintf("%s: %s", name, q.String()))
		}
	}
	return strings.Join(out, ", ")
}

// TolerationString renders a toleration as "key=value:Effect (Operator)", e.g.
// "nvidia.com/gpu:NoSchedule (Exists)"; an empty key with Exists is "every taint (Exists)", an
// empty effect matches every effect and is left out.
func TolerationString(t corev1.Toleration) string {
	s := t.Key
	if s == "" {
		s = "every taint"
	}
	if t.Value != "" {
		s += "=" + t.Value
	}
	if t.Effect != "" {
		s += ":" + string(t.Effect)
	}
	op := t.Operator
	if op == "" {
		op = corev1.TolerationOpEqual
	}
	return s + " (" + string(op) + ")"
}

// EffectiveRequests is what a container with res requests of a node, as the API server
// defaults it: res.Requests, plus res.Limits for each resource without a request. nil when
// both are empty.
func EffectiveRequests(res corev1.ResourceRequirements) corev1.ResourceList {
	var out corev1.ResourceList
	for _, list := range []corev1.ResourceList{res.Requests, res.Limits} {
		for name, q := range list {
			if _, ok := out[name]; ok {
				continue
			}
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// RequestsInUse is, per node name, the sum of the container requests for the resources named
// in want (its keys; the quantities are ignored) of the pods bound to the node that have not
// terminated (phase not Succeeded or Failed), as ResourceInUse counts them; pods for which
// skip returns true (skip may be nil) are left out, e.g. a Performer's own Pod, which a
// spec change replaces. Nodes with nothing in use are absent.
func RequestsInUse(pods []corev1.Pod, want corev1.ResourceList, skip func(*corev1.Pod) bool) map[string]corev1.ResourceList {
	inUse := map[string]corev1.ResourceList{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || skip != nil && skip(p) {
			continue
		}
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				if _, ok := want[name]; !ok {
					continue
				}
				used := inUse[p.Spec.NodeName]
				if used == nil {
					used = corev1.ResourceList{}
					inUse[p.Spec.NodeName] = used
				}
				sum := used[name]
				sum.Add(q)
				used[name] = sum
			}
		}
	}
	return inUse
}

// requiredAffinityMatches reports whether n satisfies a's required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution; true without one): one of its terms
// matches, a term matching when all its matchExpressions match n's labels and all its
// matchFields match n's name (metadata.name, the only field the API allows). A term with
// neither, an unknown operator or a requirement the label parser rejects matches nothing, as
// in the scheduler.
func requiredAffinityMatches(a *corev1.Affinity, n *corev1.Node) bool {
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions)+len(term.MatchFields) > 0 &&
			requirementsMatch(term.MatchExpressions, labels.Set(n.Labels)) &&
			requirementsMatch(term.MatchFields, labels.Set{"metadata.name": n.Name}) {
			return true
		}
	}
	return false
}

// selectorOps maps node selector operators to label selector ones.
var selectorOps = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

func requirementsMatch(reqs []corev1.NodeSelectorRequirement, set labels.Set) bool {
	for _, r := range reqs {
		op, ok := selectorOps[r.Operator]
		if !ok {
			return false
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil || !req.Matches(set) {
			return false
		}
	}
	return true
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
