package reconciler

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// waitNetworkPolicy polls the NetworkPolicy performer-<name> until cond holds for it (nil:
// it does not exist) and returns it.
func (e *testEnv) waitNetworkPolicy(t *testing.T, name, what string, cond func(*networkingv1.NetworkPolicy) bool) *networkingv1.NetworkPolicy {
	t.Helper()
	var last *networkingv1.NetworkPolicy
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		np := &networkingv1.NetworkPolicy{}
		err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: performer.ObjectName(name)}, np)
		switch {
		case apierrors.IsNotFound(err):
			np = nil
		case err != nil:
			return false, nil
		}
		last = np
		return cond(np), nil
	})
	if err != nil {
		t.Fatalf("NetworkPolicy of %s: timed out waiting for %s; last: %+v\nevents:\n%s", name, what, last, e.events(name))
	}
	return last
}

// executorPeers are the executors a policy admits (its gantry.dev/executor pod selectors, in
// order); extra counts the other peers.
func executorPeers(np *networkingv1.NetworkPolicy) (execs []string, extra int) {
	if np == nil || len(np.Spec.Ingress) == 0 {
		return nil, 0
	}
	for _, peer := range np.Spec.Ingress[0].From {
		if n := peer.PodSelector.MatchLabels[v1alpha1.LabelExecutor]; peer.PodSelector != nil && n != "" && peer.NamespaceSelector == nil {
			execs = append(execs, n)
		} else {
			extra++
		}
	}
	return execs, extra
}

// An isolated performer's NetworkPolicy follows the executors that use it: an executor naming
// it (performer_names) or selecting it by label appears as a peer and in
// status.allowedExecutors, and goes when it stops using it or is deleted; turning the flag off
// deletes the policy (and its condition); the policy is owned by the Performer and is
// garbage-collected with it.
func TestPerformerNetworkPolicy(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	monitoring := v1alpha1.PerformerNetworkPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prometheus"}},
	}
	p := e.newPerformer("isolated", v1alpha1.PerformerSpec{Image: imageV1,
		NetworkPolicy: &v1alpha1.PerformerNetworkPolicy{Enabled: true, AllowFrom: []v1alpha1.PerformerNetworkPeer{monitoring}}})
	p.Labels = map[string]string{"np-test": p.Name}
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running and isolated", func(p *v1alpha1.Performer) bool {
		return running(p) && condition(p, performer.ConditionNetworkPolicyReady).Status == metav1.ConditionTrue
	})

	// No executor yet: only the allowFrom peer, on the gRPC port, selecting the performer's pods.
	np := e.waitNetworkPolicy(t, p.Name, "created", func(np *networkingv1.NetworkPolicy) bool { return np != nil })
	if ref := metav1.GetControllerOf(np); ref == nil || ref.UID != got.UID || ref.Kind != "Performer" {
		t.Errorf("NetworkPolicy controller = %+v, want the Performer", ref)
	}
	if np.Spec.PodSelector.MatchLabels[v1alpha1.LabelPerformer] != p.Name || !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("NetworkPolicy spec = %+v", np.Spec)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 9090 ||
		*np.Spec.Ingress[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("ingress = %+v, want one rule on TCP 9090", np.Spec.Ingress)
	}
	if execs, extra := executorPeers(np); len(execs) != 0 || extra != 1 || !reflect.DeepEqual(np.Spec.Ingress[0].From[0].NamespaceSelector, monitoring.NamespaceSelector) {
		t.Errorf("peers = %+v, want the allowFrom peer only", np.Spec.Ingress[0].From)
	}
	if c := condition(got, performer.ConditionNetworkPolicyReady); !strings.Contains(c.Message, "only from 1 allowFrom peer") || len(got.Status.AllowedExecutors) != 0 {
		t.Errorf("NetworkPolicyReady = %+v, allowedExecutors %v", c, got.Status.AllowedExecutors)
	}
	e.waitEvent(t, "Performer", p.Name, performer.EventNetworkPolicyCreated)
	// The performer's own pod is selected by it: isolation applies to what runs.
	if pod := e.pod(t, p.Name); pod.Labels[v1alpha1.LabelPerformer] != p.Name {
		t.Errorf("pod labels %v do not match the policy's pod selector", pod.Labels)
	}

	// An executor naming the performer, and one selecting it by label, appear.
	secret := e.keySecret(t)
	spec := func() v1alpha1.ExecutorSpec {
		return v1alpha1.ExecutorSpec{Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator.avs.svc:9010",
			OperatorKeys: v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa", BLSKey: "bls"}}
	}
	byName := e.newExecutor("np-named", spec())
	byName.Spec.Performers.Names = []string{p.Name}
	byLabel := e.newExecutor("np-label", spec())
	byLabel.Spec.Performers.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"np-test": p.Name}}
	other := e.newExecutor("np-other", spec()) // uses no performer: never admitted
	for _, x := range []*v1alpha1.Executor{byName, byLabel, other} {
		if err := e.c.Create(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	both := []string{byName.Name, byLabel.Name}
	slices.Sort(both)
	np = e.waitNetworkPolicy(t, p.Name, "both executors admitted", func(np *networkingv1.NetworkPolicy) bool {
		execs, _ := executorPeers(np)
		return reflect.DeepEqual(execs, both)
	})
	if _, extra := executorPeers(np); extra != 1 {
		t.Errorf("allowFrom peer lost: %+v", np.Spec.Ingress[0].From)
	}
	got = e.waitFor(t, p.Name, "status.allowedExecutors with both", func(p *v1alpha1.Performer) bool {
		return reflect.DeepEqual(p.Status.AllowedExecutors, both)
	})
	if c := condition(got, performer.ConditionNetworkPolicyReady); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "executors "+strings.Join(both, ", ")) {
		t.Errorf("NetworkPolicyReady = %+v", c)
	}
	e.waitEvent(t, "Performer", p.Name, performer.EventNetworkPolicyUpdated)
	// The named executor's peer selects its live pods (the executor controller's label).
	peer := np.Spec.Ingress[0].From[slices.Index(both, byName.Name)].PodSelector
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		var pods corev1.PodList
		err := e.c.List(ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels(peer.MatchLabels))
		return err == nil && len(pods.Items) > 0 && strings.HasPrefix(pods.Items[0].Name, "executor-"+byName.Name), nil
	}); err != nil {
		t.Errorf("the peer %v selects no pod of executor %s", peer.MatchLabels, byName.Name)
	}

	// The named executor stops naming it, the selecting one is deleted: both go.
	e.updateExecutor(t, byName.Name, func(x *v1alpha1.Executor) { x.Spec.Performers.Names = nil })
	e.waitNetworkPolicy(t, p.Name, "the named executor removed", func(np *networkingv1.NetworkPolicy) bool {
		execs, _ := executorPeers(np)
		return reflect.DeepEqual(execs, []string{byLabel.Name})
	})
	if err := e.c.Delete(ctx, byLabel); err != nil {
		t.Fatal(err)
	}
	e.waitNetworkPolicy(t, p.Name, "the deleted executor removed", func(np *networkingv1.NetworkPolicy) bool {
		execs, extra := executorPeers(np)
		return np != nil && len(execs) == 0 && extra == 1
	})
	e.waitFor(t, p.Name, "status.allowedExecutors empty", func(p *v1alpha1.Performer) bool { return len(p.Status.AllowedExecutors) == 0 })

	// The flag off deletes the policy and its condition.
	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Spec.NetworkPolicy.Enabled = false })
	e.waitNetworkPolicy(t, p.Name, "deleted", func(np *networkingv1.NetworkPolicy) bool { return np == nil })
	got = e.waitFor(t, p.Name, "no NetworkPolicyReady", func(p *v1alpha1.Performer) bool {
		return running(p) && condition(p, performer.ConditionNetworkPolicyReady).Type == ""
	})
	e.waitEvent(t, "Performer", p.Name, performer.EventNetworkPolicyDeleted)

	// On again, then the Performer deleted: the policy goes with it (owner reference).
	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Spec.NetworkPolicy.Enabled = true })
	np = e.waitNetworkPolicy(t, p.Name, "re-created", func(np *networkingv1.NetworkPolicy) bool { return np != nil })
	if err := e.c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: e.ns}})
	e.waitGone(t, np)
}

// A NetworkPolicy performer-<name> that is not the Performer's is left alone:
// NetworkPolicyReady=False, reason OwnershipConflict; the performer still runs.
func TestPerformerNetworkPolicyForeign(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	p := e.newPerformer("np-foreign", v1alpha1.PerformerSpec{Image: imageV1, NetworkPolicy: &v1alpha1.PerformerNetworkPolicy{Enabled: true}})
	foreign := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: performer.ObjectName(p.Name), Namespace: e.ns},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"someone": "else"}}},
	}
	if err := e.c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running with NetworkPolicyReady=False", func(p *v1alpha1.Performer) bool {
		return running(p) && condition(p, performer.ConditionNetworkPolicyReady).Status == metav1.ConditionFalse
	})
	if c := condition(got, performer.ConditionNetworkPolicyReady); c.Reason != performer.ReasonOwnershipConflict {
		t.Errorf("NetworkPolicyReady = %+v, want reason %s", c, performer.ReasonOwnershipConflict)
	}
	var np networkingv1.NetworkPolicy
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: foreign.Name}, &np); err != nil {
		t.Fatal(err)
	}
	if len(np.OwnerReferences) != 0 || np.Spec.PodSelector.MatchLabels["someone"] != "else" {
		t.Errorf("foreign NetworkPolicy was changed: %+v", np)
	}
	// Off: the foreign policy is still not ours to delete.
	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Spec.NetworkPolicy = nil })
	e.waitFor(t, p.Name, "no NetworkPolicyReady", func(p *v1alpha1.Performer) bool {
		return running(p) && condition(p, performer.ConditionNetworkPolicyReady).Type == ""
	})
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: foreign.Name}, &np); err != nil {
		t.Errorf("foreign NetworkPolicy deleted: %v", err)
	}
	_ = e.c.Delete(ctx, &np)
}
