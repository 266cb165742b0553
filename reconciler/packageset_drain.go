package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// Drains of cordoned nodes: gather sorts a node's pods and reads why evictions are refused
// (drainFacts), act evicts them (drain); both sort the pods alike (podsToDrain).

// drainPods is a cordoned node's pods as its drain sorts them (podsToDrain): evict, the pods to
// evict; hold, those matching podNonInterruptLabels, which must finish first; terminating, the
// pods to evict already being deleted; keep, the pods spec.drain forbids evicting ("ns/p:
// why"). Names are "namespace/name".
type drainPods struct {
	evict                   []corev1.Pod
	hold, terminating, keep []string
}

// podsToDrain reads the node's pods (one uncached List by spec.nodeName) and sorts them by the
// set's drain rules (packageset.DrainPods.Class: Skyhook's ShouldEvict, podNonInterruptLabels
// and spec.drain's skipPodLabels, deleteEmptyDirData and force; never the reconciler's own pod);
// with nonInterruptToo (packageset.NonInterruptExpired under Drain) podNonInterruptLabels no
// longer holds a pod.
func (r *PackageSetReconciler) podsToDrain(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, nonInterruptToo bool) (drainPods, error) {
	var out drainPods
	rules, err := packageset.DrainPodsOf(&set.Spec, r.Self)
	if err != nil {
		return out, err
	}
	if nonInterruptToo {
		rules.NonInterrupt = nil // past drain.nonInterruptTimeout under Drain: sorted like any pod
	}
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node.Name}); err != nil {
		return out, err
	}
	for _, p := range pods.Items {
		name := p.Namespace + "/" + p.Name
		switch class, why := rules.Class(&p); class {
		case packageset.DrainHold:
			out.hold = append(out.hold, name)
		case packageset.DrainTerminating:
			out.terminating = append(out.terminating, name)
		case packageset.DrainKeep:
			out.keep = append(out.keep, name+": "+why)
		case packageset.DrainEvict:
			out.evict = append(out.evict, p)
		}
	}
	return out, nil
}

// drainFacts fills a cordoned node's drain facts (its drain matters): its pods sorted
// (podsToDrain) and, in the pass where its drain reaches spec.drain.timeout
// (packageset.DrainTimedOut), why the Eviction API refuses each pod left to evict: a dry-run
// eviction (nothing is evicted), so the timeout names the PodDisruptionBudget.
func (r *PackageSetReconciler) drainFacts(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, nf *packageset.NodeFacts, spec packageset.DrainSpec, now time.Time) error {
	pods, err := r.podsToDrain(ctx, set, node, packageset.NonInterruptExpired(nf.Record, spec, now))
	if err != nil {
		return err
	}
	nf.Drained = len(pods.evict) == 0 && len(pods.terminating) == 0 && len(pods.keep) == 0
	nf.NonInterrupt, nf.Terminating, nf.Unevictable = pods.hold, pods.terminating, pods.keep
	for _, p := range pods.evict {
		nf.Evicting = append(nf.Evicting, p.Namespace+"/"+p.Name)
	}
	if len(pods.evict) == 0 || !packageset.DrainTimedOut(nf.Record, spec, now) {
		return nil
	}
	nf.EvictRefusals = map[string]string{}
	for i := range pods.evict {
		p := &pods.evict[i]
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := r.Client.SubResource("eviction").Create(ctx, p, ev, client.DryRunAll); err != nil && !apierrors.IsNotFound(err) {
			nf.EvictRefusals[p.Namespace+"/"+p.Name] = evictionError(err)
		}
	}
	return nil
}

// drain evicts the node's pods to evict (podsToDrain) through the Eviction API (the
// PodDisruptionBudgets decide; a pod already gone is fine), each with spec.drain.gracePeriod
// when set (else the pod's own terminationGracePeriodSeconds). It returns what refused them,
// "pod <ns>/<name>: <message> (<causes>)" per pod joined by "; " (a 429 names the
// PodDisruptionBudget in its cause), or "" when every eviction was accepted; err only when the
// node's pods cannot be listed. A refusal is retried by the next pass that drains.
func (r *PackageSetReconciler) drain(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, nonInterruptToo bool) (string, error) {
	pods, err := r.podsToDrain(ctx, set, node, nonInterruptToo)
	if err != nil {
		return "", err
	}
	grace := packageset.DrainSpecOf(set.Spec.Drain).GracePeriod
	var refused []string
	for i := range pods.evict {
		p := &pods.evict[i]
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if grace != nil {
			g := *grace
			ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: &g}
		}
		if err := r.Client.SubResource("eviction").Create(ctx, p, ev); err != nil && !apierrors.IsNotFound(err) {
			refused = append(refused, fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, evictionError(err)))
		}
	}
	return strings.Join(refused, "; "), nil
}

// evictionError is an eviction error's message followed by its status causes in parentheses
// (for a PodDisruptionBudget: "The disruption budget <name> needs 1 healthy pods and has 1
// currently"; err.Error() alone does not name it).
func evictionError(err error) string {
	msg := err.Error()
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Details != nil {
		var causes []string
		for _, c := range st.Status().Details.Causes {
			if c.Message != "" {
				causes = append(causes, c.Message)
			}
		}
		if len(causes) > 0 {
			msg += " (" + strings.Join(causes, "; ") + ")"
		}
	}
	return msg
}
