package reconciler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/aggregator"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
)

const (
	aggImageV1 = "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2"
	aggImageV2 = "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0"
)

// aggSpec is Hourglass's demo aggregator (demo/aggregator-chain.yaml): an L1 and an L2 chain,
// one AVS on the L2, the operator key from the Secret secret.
func aggSpec(secret string) v1alpha1.AggregatorSpec {
	return v1alpha1.AggregatorSpec{
		Image: aggImageV1, OperatorAddress: "0x6B58f6762689DF33fe8fa3FC40Fb5a3089D3a8cc", L1ChainID: 31337,
		OperatorKeys: v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa"},
		Chains: []v1alpha1.AggregatorChain{
			{Name: "ethereum", ChainID: 31337, RPCURL: "http://anvil-l1.example.com:8545", PollIntervalSeconds: 10},
			{Name: "base", ChainID: 31338, RPCURL: "http://anvil-l2.example.com:9545"},
		},
		AVSs: []v1alpha1.AggregatorAVS{{Address: "0xce2ac75be2e0951f1f7b288c7a6a9bfb6c331dc4", ChainIDs: []int64{31338}}},
	}
}

func (e *testEnv) newAggregator(name string, spec v1alpha1.AggregatorSpec) *v1alpha1.Aggregator {
	return &v1alpha1.Aggregator{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, seq.Add(1)), Namespace: e.ns}, Spec: spec}
}

func (e *testEnv) waitAggregator(t *testing.T, name, what string, cond func(*v1alpha1.Aggregator) bool) *v1alpha1.Aggregator {
	t.Helper()
	var last v1alpha1.Aggregator
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &last); err != nil {
			return false, nil
		}
		return cond(&last), nil
	})
	if err != nil {
		t.Fatalf("aggregator %s: timed out waiting for %s\nlast status: %s\nevents:\n%s", name, what, describeAggregator(&last.Status), e.eventsOf("Aggregator", name))
	}
	return &last
}

func describeAggregator(s *v1alpha1.AggregatorStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s ready=%s revision=%s image=%s secret=%s endpoint=%s observedGeneration=%d\n",
		s.Phase, s.ReadyText, s.Revision, s.Image, s.ConfigSecretName, s.ManagementEndpoint, s.ObservedGeneration)
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func aggCondition(a *v1alpha1.Aggregator, typ string) metav1.Condition {
	for _, c := range a.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// aggRunning: Running for the current generation.
func aggRunning(a *v1alpha1.Aggregator) bool {
	return a.Status.Phase == v1alpha1.AggregatorRunning && a.Status.ObservedGeneration == a.Generation
}

func (e *testEnv) updateAggregator(t *testing.T, name string, mod func(*v1alpha1.Aggregator)) {
	t.Helper()
	updateLatest(t, e, types.NamespacedName{Namespace: e.ns, Name: name}, "aggregator", mod)
}

// TestAggregatorLifecycle: an Aggregator runs as Hourglass's chart runs it (a StatefulSet of
// one pod, a headless Service on management-grpc 9000, the config Secret mounted at
// /etc/secrets/hourglass), all owned by it; the config is Hourglass's format without key
// material; a config change rolls the pod; deletion leaves nothing.
func TestAggregatorLifecycle(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	secret := e.keySecret(t)
	a := e.newAggregator("lifecycle", aggSpec(secret))
	if err := e.c.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	got := e.waitAggregator(t, a.Name, "Running", aggRunning)
	st := got.Status
	if st.ReadyText != "1/1" || st.Image != aggImageV1 || st.Revision == "" || st.ConfigSecretName != "aggregator-"+a.Name+"-config" ||
		st.ManagementEndpoint != fmt.Sprintf("aggregator-%s.%s.svc.cluster.local:9000", a.Name, e.ns) {
		t.Errorf("status: %s", describeAggregator(&st))
	}
	for _, typ := range []string{v1alpha1.ConditionReady, aggregator.ConditionConfigReady} {
		if c := aggCondition(got, typ); c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	sts := e.checkAggregatorObjects(t, got, secret)
	e.checkAggregatorConfig(t, got, "pollIntervalSeconds: 10\n", "chainId: 31338\n", "storage:\n  type: memory\n")

	// A config change (a third chain) rewrites the Secret and rolls the pod: a new revision.
	e.updateAggregator(t, a.Name, func(a *v1alpha1.Aggregator) {
		a.Spec.Chains = append(a.Spec.Chains, v1alpha1.AggregatorChain{Name: "sepolia", ChainID: 11155111, RPCURL: "https://sepolia.example.com"})
	})
	got = e.waitAggregator(t, a.Name, "Running on a new revision", func(x *v1alpha1.Aggregator) bool { return aggRunning(x) && x.Status.Revision != st.Revision })
	e.checkAggregatorConfig(t, got, "chainId: 11155111\n")
	e.waitAggregatorPod(t, a.Name, got.Status.Revision)

	// An image change: Updating, then Running with the new image.
	e.updateAggregator(t, a.Name, func(a *v1alpha1.Aggregator) { a.Spec.Image = aggImageV2 })
	got = e.waitAggregator(t, a.Name, "Running the new image", func(x *v1alpha1.Aggregator) bool { return aggRunning(x) && x.Status.Image == aggImageV2 })
	e.waitEvent(t, "Aggregator", a.Name, "Normal UpdateInProgress")

	// Deletion: the StatefulSet, the Service and the Secret go, then the Aggregator.
	if err := e.c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, &v1alpha1.Aggregator{ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: e.ns}})
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.Secret{}} {
		name := sts.Name
		if _, ok := obj.(*corev1.Secret); ok {
			name = aggregator.SecretName(a.Name)
		}
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s left after deletion: %v", obj, name, err)
		}
	}
}

// checkAggregatorObjects: the StatefulSet, Service and config Secret are the Aggregator's and
// shaped as Hourglass's chart makes them; the key reaches the pod only as secretKeyRefs.
func (e *testEnv) checkAggregatorObjects(t *testing.T, got *v1alpha1.Aggregator, secret string) *appsv1.StatefulSet {
	t.Helper()
	ctx := context.Background()
	var sts appsv1.StatefulSet
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: aggregator.StatefulSetName(got.Name)}, &sts); err != nil {
		t.Fatal(err)
	}
	var svc corev1.Service
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: aggregator.ServiceName(got.Name)}, &svc); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []metav1.Object{&sts, &svc, e.aggregatorSecret(t, got.Name)} {
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != got.UID {
			t.Errorf("%s: controller %+v, want the Aggregator", obj.GetName(), ref)
		}
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if *sts.Spec.Replicas != 1 || sts.Spec.ServiceName != svc.Name || strings.Join(c.Command, " ") != "aggregator run --config /etc/secrets/hourglass/config.yaml" {
		t.Errorf("statefulset replicas %d service %s command %v", *sts.Spec.Replicas, sts.Spec.ServiceName, c.Command)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "management-grpc" || svc.Spec.Ports[0].Port != 9000 {
		t.Errorf("service %+v", svc.Spec)
	}
	for _, ev := range c.Env {
		if ev.Value != "" || ev.ValueFrom == nil || ev.ValueFrom.SecretKeyRef == nil || ev.ValueFrom.SecretKeyRef.Name != secret || ev.ValueFrom.SecretKeyRef.Key != "ecdsa" {
			t.Errorf("env %s is not a secretKeyRef of %s/ecdsa: %+v", ev.Name, secret, ev.ValueFrom)
		}
	}
	if len(c.Env) == 0 || c.Env[0].Name != executor.HourglassOperatorKeyEnv {
		t.Errorf("env %+v", c.Env)
	}
	return &sts
}

func (e *testEnv) aggregatorSecret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: aggregator.SecretName(name)}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// checkAggregatorConfig: config.yaml holds each of want and Hourglass's operator section with
// an empty key placeholder; no key material is in it, the Aggregator or its events.
func (e *testEnv) checkAggregatorConfig(t *testing.T, got *v1alpha1.Aggregator, want ...string) {
	t.Helper()
	cfg := string(e.aggregatorSecret(t, got.Name).Data[v1alpha1.AggregatorConfigKey])
	for _, w := range append(want, "l1ChainId: 31337\n", "managementServerGrpcPort: 9000\n", "operatorPrivateKey:\n    privateKey: \"\"\n") {
		if !strings.Contains(cfg, w) {
			t.Errorf("config.yaml lacks %q:\n%s", w, cfg)
		}
	}
	raw := fmt.Sprintf("%s %+v %+v %s", cfg, got.Spec, got.Status, e.eventsOf("Aggregator", got.Name))
	if strings.Contains(raw, keyMaterial) || strings.Contains(raw, keyMaterial[2:20]) {
		t.Fatal("key material leaked into the config Secret, the Aggregator or its events")
	}
}

// waitAggregatorPod waits until the aggregator's pod is of revision rev and Ready.
func (e *testEnv) waitAggregatorPod(t *testing.T, name, rev string) {
	t.Helper()
	var p corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: aggregator.PodName(name)}, &p); err != nil {
			return false, nil
		}
		return p.DeletionTimestamp == nil && p.Annotations[v1alpha1.AnnotationSpecHash] == rev && podReady(&p), nil
	})
	if err != nil {
		t.Fatalf("pod %s: not Ready at revision %s (has %s)", aggregator.PodName(name), rev, p.Annotations[v1alpha1.AnnotationSpecHash])
	}
}

// TestAggregatorFailures: a missing key Secret is Failed (SecretNotFound, naming it) and heals
// when it appears; a pod the scheduler cannot place is Failed with the scheduler's own words,
// and a spec change that fits heals it; a namesake StatefulSet not the Aggregator's is an
// ownership conflict.
func TestAggregatorFailures(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	missing := fmt.Sprintf("agg-keys-%d", seq.Add(1))
	a := e.newAggregator("failures", aggSpec(missing))
	if err := e.c.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	wantMsg := "Secret " + e.ns + "/" + missing + " not found"
	got := e.waitAggregator(t, a.Name, "SecretNotFound", func(x *v1alpha1.Aggregator) bool {
		c := aggCondition(x, v1alpha1.ConditionStalled)
		return x.Status.Phase == v1alpha1.AggregatorFailed && c.Reason == aggregator.ReasonSecretNotFound && strings.Contains(c.Message, wantMsg)
	})
	if c := aggCondition(got, aggregator.ConditionConfigReady); c.Status != metav1.ConditionFalse {
		t.Errorf("ConfigReady = %+v", c)
	}
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: aggregator.StatefulSetName(a.Name)}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("statefulset created without its key Secret: %v", err)
	}
	e.waitEvent(t, "Aggregator", a.Name, "Warning SecretNotFound", wantMsg)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: missing, Namespace: e.ns}, StringData: map[string]string{"ecdsa": keyMaterial}}
	if err := e.c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	e.waitAggregator(t, a.Name, "Running once the Secret exists", aggRunning)

	// More CPU than any node has: the scheduler's words, verbatim.
	e.updateAggregator(t, a.Name, func(x *v1alpha1.Aggregator) {
		x.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500")}
	})
	got = e.waitAggregator(t, a.Name, "Unschedulable", func(x *v1alpha1.Aggregator) bool {
		return x.Status.Phase == v1alpha1.AggregatorFailed && aggCondition(x, v1alpha1.ConditionStalled).Reason == aggregator.ReasonUnschedulable
	})
	if c := aggCondition(got, v1alpha1.ConditionStalled); !strings.Contains(c.Message, "Insufficient cpu") || !strings.Contains(c.Message, aggregator.PodName(a.Name)) {
		t.Errorf("Stalled = %+v, want the scheduler's Insufficient cpu", c)
	}
	e.updateAggregator(t, a.Name, func(x *v1alpha1.Aggregator) { x.Spec.Resources = v1alpha1.ResourceRequirements{} })
	e.waitAggregator(t, a.Name, "Running again", aggRunning)

	// A StatefulSet of another's with the name of a new Aggregator's.
	b := e.newAggregator("conflict", aggSpec(missing))
	zero := int32(0)
	foreign := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: aggregator.StatefulSetName(b.Name), Namespace: e.ns},
		Spec: appsv1.StatefulSetSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: aggImageV1}}}}}}
	if err := e.c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), foreign) })
	if err := e.c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	e.waitAggregator(t, b.Name, "OwnershipConflict", func(x *v1alpha1.Aggregator) bool {
		return aggCondition(x, v1alpha1.ConditionStalled).Reason == aggregator.ReasonOwnershipConflict
	})
}

// TestAggregatorPersistence: spec.persistence becomes the StatefulSet's claim template (and
// Hourglass's badger storage in it); the CRD refuses changing it after creation. The claim
// may not bind on a cluster without a provisioner, so only the objects are checked.
func TestAggregatorPersistence(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	spec := aggSpec(e.keySecret(t))
	spec.Persistence = &v1alpha1.AggregatorPersistence{Size: resource.MustParse("1Gi")}
	a := e.newAggregator("persist", spec)
	if err := e.c.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: aggregator.StatefulSetName(a.Name)}, &sts) == nil, nil
	})
	if err != nil {
		t.Fatal("no statefulset")
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("claim templates %+v", sts.Spec.VolumeClaimTemplates)
	}
	got := e.waitAggregator(t, a.Name, "config rendered", func(x *v1alpha1.Aggregator) bool {
		return aggCondition(x, aggregator.ConditionConfigReady).Status == metav1.ConditionTrue
	})
	e.checkAggregatorConfig(t, got, "type: badger\n", "badger:\n    dir: /var/lib/ponos/aggregator/badger\n", "badgerConfig:\n    dir: /var/lib/ponos/aggregator/badger\n")
	// The reconciler may write the object between the read and the update (a finalizer, the
	// status), so a conflict is read again and retried; only the CRD's refusal ends the loop.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur v1alpha1.Aggregator
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(got), &cur); err != nil {
			return err
		}
		cur.Spec.Persistence.Size = resource.MustParse("2Gi")
		return e.c.Update(ctx, &cur)
	})
	if err == nil || !strings.Contains(err.Error(), "persistence cannot change after creation") {
		t.Errorf("changing persistence: err %v", err)
	}
	if err := e.c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, &v1alpha1.Aggregator{ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: e.ns}})
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: aggregator.ClaimName(a.Name)}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("claim left: %v", err)
	}
}

// TestAggregatorCRDValidation: the CRD refuses what Hourglass's aggregator would refuse at
// start (an l1ChainId that is not one of chains, a chain ID it does not support, an AVS on an
// unknown chain, no operatorPrivateKey) and the executor's key kinds it cannot read.
func TestAggregatorCRDValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	good := func() v1alpha1.AggregatorSpec { return aggSpec("k") }
	cases := []crdCase[v1alpha1.AggregatorSpec]{
		{"good", nil, "", ""},
		{"remote signer", func(s *v1alpha1.AggregatorSpec) {
			s.OperatorKeys = v1alpha1.OperatorKeys{RemoteSigner: &v1alpha1.RemoteSigner{URL: "https://web3signer:9000", PublicKey: "0x" + strings.Repeat("ab", 64)}}
		}, "", ""},
		{"l1 not a chain", func(s *v1alpha1.AggregatorSpec) { s.L1ChainID = 1 }, "spec", "l1ChainId must be the chainId of one of chains"},
		{"unsupported chain", func(s *v1alpha1.AggregatorSpec) { s.Chains[1].ChainID = 42161 }, "spec.chains[1].chainId", "Unsupported value"},
		{"AVS on an unknown chain", func(s *v1alpha1.AggregatorSpec) { s.AVSs[0].ChainIDs = []int64{8453} }, "spec", "every avss[].chainIds entry"},
		{"no ECDSA key", func(s *v1alpha1.AggregatorSpec) {
			s.OperatorKeys = v1alpha1.OperatorKeys{SecretName: "k", BLSKeystoreKey: "ks"}
		}, "spec", "operatorKeys needs ecdsaKey or remoteSigner"},
		{"raw BLS key", func(s *v1alpha1.AggregatorSpec) { s.OperatorKeys.BLSKey = "bls" }, "spec", "operatorKeys takes no blsKey or remoteSignerUrl"},
		{"operator address", func(s *v1alpha1.AggregatorSpec) { s.OperatorAddress = "0x12" }, "spec.operatorAddress", "should match"},
		{"poll interval", func(s *v1alpha1.AggregatorSpec) { s.Chains[0].PollIntervalSeconds = -1 }, "spec.chains[0].pollIntervalSeconds", "greater than or equal to 1"},
		{"zero size", func(s *v1alpha1.AggregatorSpec) {
			s.Persistence = &v1alpha1.AggregatorPersistence{Size: resource.MustParse("0")}
		}, "spec.persistence.size", "persistence.size must be more than 0"},
	}
	checkCRDCases(t, e, good, func(s v1alpha1.AggregatorSpec) client.Object { return e.newAggregator("crd-agg", s) }, cases)
}
