package performer

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func isolated(allowFrom ...v1alpha1.PerformerNetworkPeer) *v1alpha1.Performer {
	return &v1alpha1.Performer{
		ObjectMeta: metav1.ObjectMeta{Name: "avs", Namespace: "ns", UID: "uid-1", Generation: 3, Labels: map[string]string{"tier": "gpu"}},
		Spec: v1alpha1.PerformerSpec{Image: imgA, GRPCPort: 8080,
			NetworkPolicy: &v1alpha1.PerformerNetworkPolicy{Enabled: true, AllowFrom: allowFrom}},
	}
}

func exec(name, ns string, mod func(*v1alpha1.Executor)) v1alpha1.Executor {
	e := v1alpha1.Executor{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if mod != nil {
		mod(&e)
	}
	return e
}

// Which executors a performer's policy admits: those naming it, selecting it by its labels or
// having created it, in its namespace only; sorted, unique.
func TestAllowedExecutors(t *testing.T) {
	p := isolated()
	p.Labels[v1alpha1.LabelCreatedByExecutor] = "creator"
	execs := []v1alpha1.Executor{
		exec("named", "ns", func(e *v1alpha1.Executor) { e.Spec.Performers.Names = []string{"other", "avs"} }),
		exec("other-names", "ns", func(e *v1alpha1.Executor) { e.Spec.Performers.Names = []string{"other"} }),
		exec("by-label", "ns", func(e *v1alpha1.Executor) {
			e.Spec.Performers.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gpu"}}
		}),
		exec("label-miss", "ns", func(e *v1alpha1.Executor) {
			e.Spec.Performers.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "cpu"}}
		}),
		exec("bad-selector", "ns", func(e *v1alpha1.Executor) {
			e.Spec.Performers.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Bogus"}}}
		}),
		exec("creator", "ns", nil),
		exec("none", "ns", nil),
		exec("hourglass", "ns", func(e *v1alpha1.Executor) { e.Spec.HourglassCompat = &v1alpha1.HourglassCompat{} }),
		exec("named", "other-ns", func(e *v1alpha1.Executor) { e.Spec.Performers.Names = []string{"avs"} }),
		exec("elsewhere", "other-ns", func(e *v1alpha1.Executor) { e.Spec.Performers.Names = []string{"avs"} }),
	}
	got := AllowedExecutors(p, execs)
	if want := []string{"by-label", "creator", "named"}; !reflect.DeepEqual(got, want) {
		t.Errorf("AllowedExecutors = %v, want %v", got, want)
	}
	delete(p.Labels, v1alpha1.LabelCreatedByExecutor)
	if got := AllowedExecutors(p, execs[5:7]); got != nil {
		t.Errorf("without the created-by label: %v, want none", got)
	}
}

// The policy selects the performer's pods, restricts ingress only, and admits TCP on the gRPC
// port from one peer per executor plus the allowFrom peers.
func TestDesiredNetworkPolicy(t *testing.T) {
	all := &metav1.LabelSelector{}
	mon := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prometheus"}}
	p := isolated(v1alpha1.PerformerNetworkPeer{NamespaceSelector: all, PodSelector: mon})
	np := DesiredNetworkPolicy(p, []string{"a", "b"})
	if np.Name != "performer-avs" || np.Namespace != "ns" || np.Labels[v1alpha1.LabelPerformer] != "avs" || np.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy {
		t.Errorf("metadata = %+v", np.ObjectMeta)
	}
	if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, map[string]string{v1alpha1.LabelPerformer: "avs"}) {
		t.Errorf("podSelector = %v", np.Spec.PodSelector)
	}
	if !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policyTypes = %v (egress must stay untouched)", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("ingress = %+v", np.Spec.Ingress)
	}
	rule := np.Spec.Ingress[0]
	tcp, port := corev1.ProtocolTCP, intstr.FromInt32(8080)
	if !reflect.DeepEqual(rule.Ports, []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}) {
		t.Errorf("ports = %+v", rule.Ports)
	}
	want := []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelExecutor: "a"}}},
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelExecutor: "b"}}},
		{PodSelector: mon, NamespaceSelector: all},
	}
	if !reflect.DeepEqual(rule.From, want) {
		t.Errorf("from = %+v, want %+v", rule.From, want)
	}
	if rule.From[2].PodSelector == mon {
		t.Error("allowFrom selectors are shared with the spec, not copied")
	}

	// No peer at all: no ingress rule (a rule without peers would admit every source).
	if np := DesiredNetworkPolicy(isolated(), nil); np.Spec.Ingress != nil {
		t.Errorf("no peers: ingress = %+v, want none (deny all)", np.Spec.Ingress)
	}
	// The default port.
	p = isolated()
	p.Spec.GRPCPort = 0
	if np := DesiredNetworkPolicy(p, []string{"a"}); np.Spec.Ingress[0].Ports[0].Port.IntVal != 9090 {
		t.Errorf("default port = %v", np.Spec.Ingress[0].Ports[0].Port)
	}
}

// Every row of the isolation decision.
func TestDecideNetworkPolicy(t *testing.T) {
	base := NetworkPolicyFacts{Enabled: true, Generation: 3, Name: "performer-avs", Port: 9090, Allowed: []string{"a", "b"}}
	with := func(mod func(*NetworkPolicyFacts)) NetworkPolicyFacts {
		f := base
		mod(&f)
		return f
	}
	for _, tc := range []struct {
		name      string
		f         NetworkPolicyFacts
		action    NetworkPolicyAction
		cond      metav1.ConditionStatus // "" = no condition
		reason    string
		event     string
		allowed   []string
		msgSubstr string
	}{
		{"on, absent: create", base, NetworkPolicyCreate, metav1.ConditionTrue, ReasonNetworkPolicyApplied, EventNetworkPolicyCreated, []string{"a", "b"},
			"admits TCP 9090 only from the pods of executors a, b"},
		{"on, ours, up to date: nothing", with(func(f *NetworkPolicyFacts) { f.Exists, f.UpToDate = true, true }), NetworkPolicyNone,
			metav1.ConditionTrue, ReasonNetworkPolicyApplied, "", []string{"a", "b"}, "executors a, b"},
		{"on, ours, out of date: update", with(func(f *NetworkPolicyFacts) { f.Exists = true }), NetworkPolicyUpdate,
			metav1.ConditionTrue, ReasonNetworkPolicyApplied, EventNetworkPolicyUpdated, []string{"a", "b"}, "executors a, b"},
		{"on, foreign: left alone", with(func(f *NetworkPolicyFacts) { f.Exists, f.Foreign = true, true }), NetworkPolicyNone,
			metav1.ConditionFalse, ReasonOwnershipConflict, "", nil, "not controlled by this performer"},
		{"on, no peers: deny all", with(func(f *NetworkPolicyFacts) { f.Allowed = nil }), NetworkPolicyCreate,
			metav1.ConditionTrue, ReasonNetworkPolicyApplied, EventNetworkPolicyCreated, nil, "admits no pod on TCP 9090"},
		{"on, one executor and extra peers", with(func(f *NetworkPolicyFacts) { f.Allowed, f.ExtraPeers = []string{"a"}, 2 }), NetworkPolicyCreate,
			metav1.ConditionTrue, ReasonNetworkPolicyApplied, EventNetworkPolicyCreated, []string{"a"}, "from the pods of executor a and 2 allowFrom peers"},
		{"on, extra peer only", with(func(f *NetworkPolicyFacts) { f.Allowed, f.ExtraPeers = nil, 1 }), NetworkPolicyCreate,
			metav1.ConditionTrue, ReasonNetworkPolicyApplied, EventNetworkPolicyCreated, nil, "only from 1 allowFrom peer"},
		{"off, ours: delete", with(func(f *NetworkPolicyFacts) { f.Enabled, f.Exists = false, true }), NetworkPolicyDelete,
			"", "", EventNetworkPolicyDeleted, nil, ""},
		{"off, absent: nothing", with(func(f *NetworkPolicyFacts) { f.Enabled = false }), NetworkPolicyNone, "", "", "", nil, ""},
		{"off, foreign: left alone", with(func(f *NetworkPolicyFacts) { f.Enabled, f.Exists, f.Foreign = false, true, true }), NetworkPolicyNone,
			"", "", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideNetworkPolicy(tc.f)
			if d.Action != tc.action {
				t.Errorf("action = %q, want %q", d.Action, tc.action)
			}
			switch {
			case tc.cond == "" && d.Condition != nil:
				t.Errorf("condition = %+v, want none", d.Condition)
			case tc.cond != "" && d.Condition == nil:
				t.Errorf("no condition, want %s", tc.cond)
			case tc.cond != "":
				c := d.Condition
				if c.Type != ConditionNetworkPolicyReady || c.Status != tc.cond || c.Reason != tc.reason || c.ObservedGeneration != 3 || !strings.Contains(c.Message, tc.msgSubstr) {
					t.Errorf("condition = %+v, want %s %s containing %q", c, tc.cond, tc.reason, tc.msgSubstr)
				}
			}
			if (d.Event == nil) != (tc.event == "") || (d.Event != nil && (d.Event.Reason != tc.event || d.Event.Type != corev1.EventTypeNormal)) {
				t.Errorf("event = %+v, want %q", d.Event, tc.event)
			}
			if !reflect.DeepEqual(d.AllowedExecutors, tc.allowed) {
				t.Errorf("allowedExecutors = %v, want %v", d.AllowedExecutors, tc.allowed)
			}
		})
	}
}

// A failed write: NetworkPolicyReady=False with the API server's message and a Warning; the
// status keeps the executors last applied. A failed delete (off) keeps no condition.
func TestNetworkPolicyWriteFailed(t *testing.T) {
	f := NetworkPolicyFacts{Enabled: true, Generation: 2, Name: "performer-avs", Port: 9090, Allowed: []string{"a", "b"}, Exists: true}
	d := NetworkPolicyWriteFailed(DecideNetworkPolicy(f), f, []string{"a"}, `networkpolicies.networking.k8s.io "performer-avs" is forbidden`)
	if c := d.Condition; c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonNetworkPolicyFailed ||
		c.Message != `cannot update NetworkPolicy performer-avs: networkpolicies.networking.k8s.io "performer-avs" is forbidden` {
		t.Errorf("condition = %+v", c)
	}
	if d.Event == nil || d.Event.Type != corev1.EventTypeWarning || d.Event.Reason != ReasonNetworkPolicyFailed {
		t.Errorf("event = %+v", d.Event)
	}
	if !reflect.DeepEqual(d.AllowedExecutors, []string{"a"}) || !d.Failed {
		t.Errorf("allowedExecutors = %v (want the previous [a]), failed %v", d.AllowedExecutors, d.Failed)
	}
	off := NetworkPolicyFacts{Name: "performer-avs", Exists: true}
	d = NetworkPolicyWriteFailed(DecideNetworkPolicy(off), off, []string{"a"}, "boom")
	if d.Condition != nil || d.AllowedExecutors != nil || !d.Failed || d.Event == nil || !strings.Contains(d.Event.Message, "cannot delete NetworkPolicy performer-avs: boom") {
		t.Errorf("failed delete = %+v", d)
	}
}

// Facts from the live object: ours and as desired, ours with other peers or without our
// labels, foreign, being deleted.
func TestNetworkPolicyFactsOf(t *testing.T) {
	p := isolated()
	want := DesiredNetworkPolicy(p, []string{"a"})
	ours := func(mod func(*networkingv1.NetworkPolicy)) *networkingv1.NetworkPolicy {
		np := want.DeepCopy()
		yes := true
		np.OwnerReferences = []metav1.OwnerReference{{UID: p.UID, Controller: &yes, Kind: "Performer", Name: p.Name}}
		np.Labels["extra"] = "kept" // labels added by others do not matter
		if mod != nil {
			mod(np)
		}
		return np
	}
	for _, tc := range []struct {
		name                      string
		have                      *networkingv1.NetworkPolicy
		exists, foreign, upToDate bool
	}{
		{"absent", nil, false, false, false},
		{"ours, as desired", ours(nil), true, false, true},
		{"ours, old peers", ours(func(np *networkingv1.NetworkPolicy) { np.Spec = DesiredNetworkPolicy(p, []string{"a", "gone"}).Spec }), true, false, false},
		{"ours, without our label", ours(func(np *networkingv1.NetworkPolicy) { delete(np.Labels, v1alpha1.LabelManagedBy) }), true, false, false},
		{"ours, being deleted", ours(func(np *networkingv1.NetworkPolicy) { now := metav1.Now(); np.DeletionTimestamp = &now }), true, false, false},
		{"foreign", ours(func(np *networkingv1.NetworkPolicy) { np.OwnerReferences[0].UID = types.UID("someone-else") }), true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NetworkPolicyFactsOf(p, []string{"a"}, tc.have, want)
			if f.Exists != tc.exists || f.Foreign != tc.foreign || f.UpToDate != tc.upToDate || !f.Enabled || f.Port != 8080 || f.Name != "performer-avs" {
				t.Errorf("facts = %+v", f)
			}
		})
	}
}

// An executor change reaches the isolated performers it uses or that still admit it, and
// nothing else.
func TestExecutorPerformers(t *testing.T) {
	named := isolated()
	named.Name = "named"
	stale := isolated()
	stale.Name = "stale"
	stale.Status.AllowedExecutors = []string{"e"}
	wasOn := &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: "was-on", Namespace: "ns"}, Status: v1alpha1.PerformerStatus{AllowedExecutors: []string{"e"}}}
	open := &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: "open", Namespace: "ns"}}
	other := isolated()
	other.Name, other.Namespace = "named", "other-ns"
	e := exec("e", "ns", func(e *v1alpha1.Executor) { e.Spec.Performers.Names = []string{"named", "open"} })
	got := ExecutorPerformers(&e, []v1alpha1.Performer{*named, *stale, *wasOn, *open, *other})
	want := []types.NamespacedName{{Namespace: "ns", Name: "named"}, {Namespace: "ns", Name: "stale"}, {Namespace: "ns", Name: "was-on"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ExecutorPerformers = %v, want %v", got, want)
	}
}
