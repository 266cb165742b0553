package performer

// Performer isolation (spec.networkPolicy): the NetworkPolicy performer-<name> and its pure
// decision (DecideNetworkPolicy). It admits TCP on the gRPC port from the pods of the Executors
// that use the performer (by gantry.dev/executor, which spec.podLabels cannot override) and from
// spec.networkPolicy.allowFrom; ingress only. The kubelet's probes and `kubectl port-forward`
// are unaffected: NetworkPolicy always allows traffic from the pod's own node, and port-forward
// enters through the kubelet and runtime.

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
)

// ConditionNetworkPolicyReady is present while spec.networkPolicy.enabled: True when the
// NetworkPolicy performer-<name> is as desired (its message names the admitted executors),
// False when it cannot be written or a foreign object holds the name. It does not take part
// in the phase: the performer serves either way.
const ConditionNetworkPolicyReady = "NetworkPolicyReady"

// NetworkPolicyReady reasons and the events of the NetworkPolicy.
const (
	ReasonNetworkPolicyApplied = "NetworkPolicyApplied" // NetworkPolicyReady=True
	ReasonNetworkPolicyFailed  = "NetworkPolicyFailed"  // NetworkPolicyReady=False: the write failed (the API server's message); event Warning
	// NetworkPolicyReady=False reason OwnershipConflict (ReasonOwnershipConflict): a
	// NetworkPolicy performer-<name> exists that this Performer does not control; it is left alone.
	EventNetworkPolicyCreated = "NetworkPolicyCreated"
	EventNetworkPolicyUpdated = "NetworkPolicyUpdated"
	EventNetworkPolicyDeleted = "NetworkPolicyDeleted"
)

// NetworkPolicyAction is what the controller does to the NetworkPolicy performer-<name> in a pass.
type NetworkPolicyAction string

const (
	NetworkPolicyNone   NetworkPolicyAction = ""
	NetworkPolicyCreate NetworkPolicyAction = "CreateNetworkPolicy"
	NetworkPolicyUpdate NetworkPolicyAction = "UpdateNetworkPolicy"
	NetworkPolicyDelete NetworkPolicyAction = "DeleteNetworkPolicy"
)

// NetworkPolicyEnabled is spec.networkPolicy.enabled.
func NetworkPolicyEnabled(p *v1alpha1.Performer) bool {
	return p.Spec.NetworkPolicy != nil && p.Spec.NetworkPolicy.Enabled
}

// UsedBy reports whether the Executor e uses the Performer p: e's spec.performers names it or
// selects it by its labels (executor.References), or e created it (spec.managePerformers:
// the label gantry.dev/created-by-executor=<executor> on p). Executors of other namespaces
// never do. An executor in Hourglass compatibility mode uses no Gantry performer (it takes
// no performers; the ones it creates are Hourglass's).
func UsedBy(p *v1alpha1.Performer, e *v1alpha1.Executor) bool {
	if e.Namespace != p.Namespace {
		return false
	}
	return executor.References(e, p.Name, p.Labels) || (p.Labels[v1alpha1.LabelCreatedByExecutor] != "" && p.Labels[v1alpha1.LabelCreatedByExecutor] == e.Name)
}

// AllowedExecutors are the names of the executors that use p (UsedBy), sorted and unique.
func AllowedExecutors(p *v1alpha1.Performer, executors []v1alpha1.Executor) []string {
	var out []string
	for i := range executors {
		if UsedBy(p, &executors[i]) {
			out = append(out, executors[i].Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// DesiredNetworkPolicy builds the NetworkPolicy performer-<name> (no owner reference: the
// controller adds it): it selects the performer's pods (gantry.dev/performer=<name>, bare Pod
// and Deployment pods alike), restricts ingress only, and admits TCP on the gRPC port from one
// peer per allowed executor (podSelector gantry.dev/executor=<executor>, same namespace) and
// the allowFrom peers. With no peer at all it has no ingress rule: nothing is admitted (a rule
// with no peers would admit every source).
func DesiredNetworkPolicy(p *v1alpha1.Performer, allowed []string) *networkingv1.NetworkPolicy {
	var peers []networkingv1.NetworkPolicyPeer
	for _, e := range allowed {
		peers = append(peers, networkingv1.NetworkPolicyPeer{
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelExecutor: e}},
		})
	}
	if np := p.Spec.NetworkPolicy; np != nil {
		for _, x := range np.AllowFrom {
			peers = append(peers, networkingv1.NetworkPolicyPeer{
				PodSelector: x.PodSelector.DeepCopy(), NamespaceSelector: x.NamespaceSelector.DeepCopy(),
			})
		}
	}
	spec := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelPerformer: p.Name}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
	}
	if len(peers) > 0 {
		tcp, port := corev1.ProtocolTCP, intstr.FromInt32(GRPCPort(p))
		spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			From:  peers,
		}}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(p.Name), Namespace: p.Namespace, Labels: Labels(p)},
		Spec:       spec,
	}
}

// NetworkPolicyFacts are what the controller observed about isolation in one pass.
type NetworkPolicyFacts struct {
	// Enabled is spec.networkPolicy.enabled.
	Enabled bool
	// Generation is the Performer's metadata.generation (the condition's observedGeneration).
	Generation int64
	// Name is the NetworkPolicy's name (performer-<name>), Port the gRPC port.
	Name string
	Port int32
	// Allowed are the executors that use the performer (AllowedExecutors); ExtraPeers is the
	// number of spec.networkPolicy.allowFrom peers.
	Allowed    []string
	ExtraPeers int
	// Exists: a NetworkPolicy of that name exists; Foreign: it is not controlled by this
	// Performer; UpToDate: it is ours and its spec and labels are the desired ones.
	Exists, Foreign, UpToDate bool
}

// NetworkPolicyFactsOf reads the facts from the Performer, the allowed executors and the live
// NetworkPolicy (nil when absent) against the desired one.
func NetworkPolicyFactsOf(p *v1alpha1.Performer, allowed []string, have, want *networkingv1.NetworkPolicy) NetworkPolicyFacts {
	f := NetworkPolicyFacts{Enabled: NetworkPolicyEnabled(p), Generation: p.Generation, Name: ObjectName(p.Name),
		Port: GRPCPort(p), Allowed: allowed}
	if p.Spec.NetworkPolicy != nil {
		f.ExtraPeers = len(p.Spec.NetworkPolicy.AllowFrom)
	}
	if have != nil {
		f.Exists = true
		f.Foreign = !controlledBy(have, p.UID)
		f.UpToDate = !f.Foreign && have.DeletionTimestamp == nil && NetworkPolicyUpToDate(have, want)
	}
	return f
}

// NetworkPolicyUpToDate reports whether a live NetworkPolicy has the desired spec and carries
// the desired labels.
func NetworkPolicyUpToDate(have, want *networkingv1.NetworkPolicy) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(have.Spec, want.Spec)
}

// NetworkPolicyDecision is the isolation outcome of one pass.
type NetworkPolicyDecision struct {
	// Action on the NetworkPolicy performer-<name>.
	Action NetworkPolicyAction
	// Condition is NetworkPolicyReady to set; nil means remove it (isolation off).
	Condition *metav1.Condition
	// AllowedExecutors is the new status.allowedExecutors (nil when off or not ours).
	AllowedExecutors []string
	// Event, when non-nil, is emitted once the action succeeded.
	Event *Event
	// Failed is true when the action failed (NetworkPolicyWriteFailed): the controller tries
	// again after a while.
	Failed bool
}

// DecideNetworkPolicy decides the pass: off → delete our policy (a foreign one is left
// alone), drop the condition; on → create or update the policy unless it is as desired,
// NetworkPolicyReady=True naming the admitted executors; on with a foreign object holding the
// name → no action, NetworkPolicyReady=False reason OwnershipConflict.
func DecideNetworkPolicy(f NetworkPolicyFacts) NetworkPolicyDecision {
	if !f.Enabled {
		d := NetworkPolicyDecision{}
		if f.Exists && !f.Foreign {
			d.Action = NetworkPolicyDelete
			d.Event = &Event{Type: corev1.EventTypeNormal, Reason: EventNetworkPolicyDeleted,
				Message: fmt.Sprintf("NetworkPolicy %s deleted: spec.networkPolicy is not enabled", f.Name)}
		}
		return d
	}
	if f.Foreign {
		return NetworkPolicyDecision{Condition: &metav1.Condition{Type: ConditionNetworkPolicyReady, Status: metav1.ConditionFalse,
			ObservedGeneration: f.Generation, Reason: ReasonOwnershipConflict,
			Message: fmt.Sprintf("NetworkPolicy %s exists and is not controlled by this performer; it is left alone and the performer is not isolated by Gantry (delete it or rename the performer)", f.Name)}}
	}
	msg := NetworkPolicyMessage(f)
	d := NetworkPolicyDecision{AllowedExecutors: slices.Clone(f.Allowed),
		Condition: &metav1.Condition{Type: ConditionNetworkPolicyReady, Status: metav1.ConditionTrue,
			ObservedGeneration: f.Generation, Reason: ReasonNetworkPolicyApplied, Message: msg}}
	switch {
	case !f.Exists:
		d.Action = NetworkPolicyCreate
		d.Event = &Event{Type: corev1.EventTypeNormal, Reason: EventNetworkPolicyCreated, Message: msg}
	case !f.UpToDate:
		d.Action = NetworkPolicyUpdate
		d.Event = &Event{Type: corev1.EventTypeNormal, Reason: EventNetworkPolicyUpdated, Message: msg}
	}
	return d
}

// NetworkPolicyMessage says what the policy admits, e.g. "NetworkPolicy performer-x admits
// TCP 9090 only from the pods of executors a, b and 1 allowFrom peer (and the kubelet's
// probes from the node)".
func NetworkPolicyMessage(f NetworkPolicyFacts) string {
	var from []string
	switch len(f.Allowed) {
	case 0:
	case 1:
		from = append(from, "the pods of executor "+f.Allowed[0])
	default:
		from = append(from, "the pods of executors "+strings.Join(f.Allowed, ", "))
	}
	switch f.ExtraPeers {
	case 0:
	case 1:
		from = append(from, "1 allowFrom peer")
	default:
		from = append(from, fmt.Sprintf("%d allowFrom peers", f.ExtraPeers))
	}
	if len(from) == 0 {
		return fmt.Sprintf("NetworkPolicy %s admits no pod on TCP %d: no executor in the namespace uses this performer and allowFrom is empty (the kubelet's probes from the node still pass)", f.Name, f.Port)
	}
	return fmt.Sprintf("NetworkPolicy %s admits TCP %d only from %s (and the kubelet's probes from the node)", f.Name, f.Port, strings.Join(from, " and "))
}

// NetworkPolicyWriteFailed turns d into the outcome of its action failing with message msg
// (the API server's): NetworkPolicyReady=False reason NetworkPolicyFailed, a Warning event,
// and status.allowedExecutors as it was (prev). A failed delete (isolation off) keeps no
// condition: the policy still exists and the next pass tries again.
func NetworkPolicyWriteFailed(d NetworkPolicyDecision, f NetworkPolicyFacts, prev []string, msg string) NetworkPolicyDecision {
	what := map[NetworkPolicyAction]string{NetworkPolicyCreate: "create", NetworkPolicyUpdate: "update", NetworkPolicyDelete: "delete"}[d.Action]
	text := fmt.Sprintf("cannot %s NetworkPolicy %s: %s", what, f.Name, msg)
	out := NetworkPolicyDecision{Action: d.Action, AllowedExecutors: slices.Clone(prev), Failed: true,
		Event: &Event{Type: corev1.EventTypeWarning, Reason: ReasonNetworkPolicyFailed, Message: text}}
	if f.Enabled {
		out.Condition = &metav1.Condition{Type: ConditionNetworkPolicyReady, Status: metav1.ConditionFalse,
			ObservedGeneration: f.Generation, Reason: ReasonNetworkPolicyFailed, Message: text}
	} else {
		out.AllowedExecutors = nil
	}
	return out
}

// ExecutorPerformers maps an Executor to the Performers (names, among the candidates: the
// Performers of its namespace) whose NetworkPolicy may change with it: the isolated ones
// (spec.networkPolicy.enabled) it uses or that hold it in status.allowedExecutors (it stopped
// using them, or is gone).
func ExecutorPerformers(e *v1alpha1.Executor, candidates []v1alpha1.Performer) []types.NamespacedName {
	var out []types.NamespacedName
	for i := range candidates {
		p := &candidates[i]
		if p.Namespace != e.Namespace || (!NetworkPolicyEnabled(p) && len(p.Status.AllowedExecutors) == 0) {
			continue
		}
		if UsedBy(p, e) || slices.Contains(p.Status.AllowedExecutors, e.Name) {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return out
}
