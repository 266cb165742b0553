package reconciler

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
)

const (
	execImageV1 = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
	execImageV2 = "ghcr.io/layr-labs/hourglass/executor:2.0.0"
	// keyMaterial is the fake private key in the test Secret: it must never appear in the
	// Executor, its ConfigMaps or its events.
	keyMaterial = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
)

func threeChains() []v1alpha1.Chain {
	return []v1alpha1.Chain{
		{Name: "ethereum", ChainID: 1, RPCURL: "https://eth.example.com/rpc", TaskMailboxAddress: "0x" + strings.Repeat("a1", 20)},
		{Name: "base", ChainID: 8453, RPCURL: "https://base.example.com", TaskMailboxAddress: "0x" + strings.Repeat("b2", 20)},
		{Name: "arbitrum", ChainID: 42161, RPCURL: "wss://arb.example.com/ws", TaskMailboxAddress: "0x" + strings.Repeat("c3", 20)},
	}
}

// runningPerformer creates a CPU Performer and waits until it is Running.
func (e *testEnv) runningPerformer(t *testing.T, name string, lbls map[string]string) *v1alpha1.Performer {
	t.Helper()
	p := e.newPerformer(name, v1alpha1.PerformerSpec{Image: imageV1})
	p.Labels = lbls
	e.create(t, p)
	return e.waitFor(t, p.Name, "Running", running)
}

// keySecret creates a Secret holding (fake) operator keys.
func (e *testEnv) keySecret(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("operator-keys-%d", seq.Add(1))
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		StringData: map[string]string{"ecdsa": keyMaterial, "bls": keyMaterial + "b1"}}
	if err := e.c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return name
}

func (e *testEnv) newExecutor(name string, spec v1alpha1.ExecutorSpec) *v1alpha1.Executor {
	return &v1alpha1.Executor{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, seq.Add(1)), Namespace: e.ns}, Spec: spec}
}

func (e *testEnv) waitExecutor(t *testing.T, name, what string, cond func(*v1alpha1.Executor) bool) *v1alpha1.Executor {
	t.Helper()
	var last v1alpha1.Executor
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &last); err != nil {
			return false, nil
		}
		return cond(&last), nil
	})
	if err != nil {
		t.Fatalf("executor %s: timed out waiting for %s\nlast status: %s\nevents:\n%s", name, what, describeExecutor(&last.Status), e.eventsOf("Executor", name))
	}
	return &last
}

func (e *testEnv) updateExecutor(t *testing.T, name string, mod func(*v1alpha1.Executor)) {
	t.Helper()
	updateLatest(t, e, types.NamespacedName{Namespace: e.ns, Name: name}, "executor", mod)
}

func describeExecutor(s *v1alpha1.ExecutorStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s ready=%s current=%s lastGood=%s failed=%s image=%s cm=%s observedGeneration=%d endpoints=%v\n",
		s.Phase, s.ReadyText, s.CurrentRevision, s.LastGoodRevision, s.FailedRevision, s.Image, s.ConfigMapName, s.ObservedGeneration, s.PerformerEndpoints)
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func execCondition(x *v1alpha1.Executor, typ string) metav1.Condition {
	for _, c := range x.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// execRunning: Running for the current generation with the spec's revision live (not rolled back).
func execRunning(x *v1alpha1.Executor) bool {
	return x.Status.Phase == v1alpha1.ExecutorRunning && x.Status.ObservedGeneration == x.Generation &&
		execCondition(x, v1alpha1.ConditionStalled).Status == metav1.ConditionFalse
}

// executorPods lists the executor's pods that are not being deleted.
func (e *testEnv) executorPods(t *testing.T, name string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := e.c.List(context.Background(), &list, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelExecutor: name}); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// waitPods waits until the executor has exactly n live pods, all Ready and of revision rev.
func (e *testEnv) waitPods(t *testing.T, name string, n int, rev string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pods = e.executorPods(t, name)
		if len(pods) != n {
			return false, nil
		}
		for _, p := range pods {
			if p.Annotations[v1alpha1.AnnotationSpecHash] != rev || !podReady(&p) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var got []string
		for _, p := range pods {
			got = append(got, fmt.Sprintf("%s rev=%s ready=%v", p.Name, p.Annotations[v1alpha1.AnnotationSpecHash], podReady(&p)))
		}
		t.Fatalf("executor %s: want %d Ready pods of revision %s, have %v", name, n, rev, got)
	}
	return pods
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *testEnv) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &cm); err != nil {
		t.Fatalf("config map %s: %v", name, err)
	}
	return &cm
}

// An executor over two performers and three chains renders the config (chains, aggregator,
// both endpoints; no key material), runs 2 pods with the keys as Secret references, scales to
// 3, rolls its pods on a config change and on a performer endpoint change, and cleans up on
// deletion.
func TestExecutorLifecycle(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	p1 := e.runningPerformer(t, "exec-a", nil)
	p2 := e.runningPerformer(t, "exec-b", nil)
	secret := e.keySecret(t)
	two := int32(2)
	x := e.newExecutor("lifecycle", v1alpha1.ExecutorSpec{
		Image: execImageV1, Replicas: &two, Chains: threeChains(), AggregatorEndpoint: "aggregator.avs.svc:9010",
		Performers:   v1alpha1.PerformerSelection{Names: []string{p1.Name, p2.Name}},
		OperatorKeys: v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa", BLSKey: "bls"},
	})
	if err := e.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	got := e.waitExecutor(t, x.Name, "Running", execRunning)
	st := got.Status
	checkLifecycleRunning(t, got, p1, p2)
	e.checkLifecycleConfig(t, got, p1, p2)
	dep := e.checkLifecycleDeployment(t, got, secret)
	rev1 := st.CurrentRevision
	pods := e.waitPods(t, x.Name, 2, rev1)
	if pods[0].Annotations[v1alpha1.AnnotationConfigHash] == "" {
		t.Errorf("pod lacks the config hash: %v", pods[0].Annotations)
	}

	// Scale: same revision, three pods, no new ConfigMap.
	e.updateExecutor(t, x.Name, func(x *v1alpha1.Executor) { three := int32(3); x.Spec.Replicas = &three })
	got = e.waitExecutor(t, x.Name, "Running with 3 replicas", func(x *v1alpha1.Executor) bool { return execRunning(x) && x.Status.ReadyReplicas == 3 })
	if got.Status.CurrentRevision != rev1 || got.Status.ConfigMapName != st.ConfigMapName || got.Status.ReadyText != "3/3" {
		t.Errorf("after scale: %s", describeExecutor(&got.Status))
	}
	e.waitPods(t, x.Name, 3, rev1)
	e.checkScaleSubresource(t, got, 3)

	// Config change: a fourth chain → new ConfigMap, new revision, every pod replaced.
	e.updateExecutor(t, x.Name, func(x *v1alpha1.Executor) {
		x.Spec.Chains = append(x.Spec.Chains, v1alpha1.Chain{Name: "optimism", ChainID: 10, RPCURL: "https://op.example.com", TaskMailboxAddress: "0x" + strings.Repeat("d4", 20)})
	})
	got = e.waitExecutor(t, x.Name, "Running on a new revision", func(x *v1alpha1.Executor) bool { return execRunning(x) && x.Status.CurrentRevision != rev1 })
	rev2 := got.Status.CurrentRevision
	if got.Status.ConfigMapName == st.ConfigMapName || !strings.Contains(e.configMap(t, got.Status.ConfigMapName).Data[v1alpha1.ExecutorConfigKey], "chain_id: 10\n") {
		t.Errorf("config map after chain change: %s", got.Status.ConfigMapName)
	}
	newPods := e.waitPods(t, x.Name, 3, rev2)
	for _, np := range newPods {
		for _, op := range pods {
			if np.UID == op.UID {
				t.Errorf("pod %s survived the config change", np.Name)
			}
		}
	}

	// A performer endpoint change (its gRPC port) re-renders the config and rolls the pods.
	e.update(t, p2.Name, func(p *v1alpha1.Performer) { p.Spec.GRPCPort = 9191 })
	got = e.waitExecutor(t, x.Name, "Running with the new endpoint", func(x *v1alpha1.Executor) bool {
		return execRunning(x) && x.Status.CurrentRevision != rev2 && len(x.Status.PerformerEndpoints) == 2 && strings.HasSuffix(x.Status.PerformerEndpoints[1].Endpoint, ":9191")
	})
	if !strings.Contains(e.configMap(t, got.Status.ConfigMapName).Data[v1alpha1.ExecutorConfigKey], p2.Name+"."+e.ns+".svc.cluster.local:9191") {
		t.Errorf("config lacks the new endpoint")
	}
	e.waitPods(t, x.Name, 3, got.Status.CurrentRevision)

	// Deletion: the Deployment and every ConfigMap go, then the Executor.
	if err := e.c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, &v1alpha1.Executor{ObjectMeta: metav1.ObjectMeta{Name: x.Name, Namespace: e.ns}})
	e.checkExecutorObjectsGone(t, x.Name, dep)
}

// checkLifecycleRunning: TestExecutorLifecycle's executor runs 2/2 replicas of its first
// revision (the last good one), its conditions are True at its generation, and it lists both
// performers' endpoints.
func checkLifecycleRunning(t *testing.T, got *v1alpha1.Executor, p1, p2 *v1alpha1.Performer) {
	t.Helper()
	st := got.Status
	if st.ReadyReplicas != 2 || st.ReadyText != "2/2" || st.CurrentRevision == "" || st.LastGoodRevision != st.CurrentRevision || st.Image != execImageV1 {
		t.Errorf("status: %s", describeExecutor(&st))
	}
	for _, typ := range []string{v1alpha1.ConditionReady, executor.ConditionConfigReady, executor.ConditionPerformersReady} {
		if c := execCondition(got, typ); c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	wantEP := []v1alpha1.PerformerEndpoint{
		{Name: p1.Name, Endpoint: p1.Status.GRPCEndpoint}, {Name: p2.Name, Endpoint: p2.Status.GRPCEndpoint},
	}
	if fmt.Sprint(st.PerformerEndpoints) != fmt.Sprint(wantEP) || !strings.HasSuffix(p1.Status.GRPCEndpoint, ".svc.cluster.local:9090") {
		t.Errorf("endpoints %v, want %v", st.PerformerEndpoints, wantEP)
	}
}

// checkLifecycleConfig: the executor's ConfigMap renders the chains, the aggregator and both
// endpoints, is immutable and owned by the executor; no key material is in it, the executor or
// its events.
func (e *testEnv) checkLifecycleConfig(t *testing.T, got *v1alpha1.Executor, p1, p2 *v1alpha1.Performer) {
	t.Helper()
	cm := e.configMap(t, got.Status.ConfigMapName)
	cfg := cm.Data[v1alpha1.ExecutorConfigKey]
	for _, want := range []string{"aggregator_endpoint: aggregator.avs.svc:9010", "chain_id: 1\n", "chain_id: 8453", "chain_id: 42161",
		"rpc_url: wss://arb.example.com/ws", "task_mailbox_address: 0x" + strings.Repeat("b2", 20),
		"endpoint: " + p1.Status.GRPCEndpoint, "endpoint: " + p2.Status.GRPCEndpoint, "ecdsa_private_key_env: ECDSA_PRIVATE_KEY", "log_level: info"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("executor-config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != got.UID || cm.Immutable == nil || !*cm.Immutable {
		t.Errorf("config map owner %+v immutable %v", ref, cm.Immutable)
	}
	// No key material anywhere the reconciler writes.
	raw := fmt.Sprintf("%+v %+v %+v %s", cm.Data, got.Spec, got.Status, e.eventsOf("Executor", got.Name))
	if strings.Contains(raw, keyMaterial) || strings.Contains(raw, keyMaterial[2:20]) {
		t.Fatalf("key material leaked into the config map, executor or events")
	}
}

// checkLifecycleDeployment: the executor owns its Deployment, whose container takes the keys
// from the Secret secret by reference only.
func (e *testEnv) checkLifecycleDeployment(t *testing.T, got *v1alpha1.Executor, secret string) appsv1.Deployment {
	t.Helper()
	var dep appsv1.Deployment
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: executor.DeploymentName(got.Name)}, &dep); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&dep); ref == nil || ref.UID != got.UID {
		t.Errorf("deployment owner %+v", ref)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	envs := map[string]*corev1.EnvVarSource{}
	for _, ev := range c.Env {
		if ev.Value != "" {
			t.Errorf("env %s has a plain value", ev.Name)
		}
		envs[ev.Name] = ev.ValueFrom
	}
	if s := envs["ECDSA_PRIVATE_KEY"]; s == nil || s.SecretKeyRef == nil || s.SecretKeyRef.Name != secret || s.SecretKeyRef.Key != "ecdsa" {
		t.Errorf("ECDSA env %+v", s)
	}
	if s := envs["BLS_PRIVATE_KEY"]; s == nil || s.SecretKeyRef == nil || s.SecretKeyRef.Key != "bls" {
		t.Errorf("BLS env %+v", s)
	}
	return dep
}

// checkScaleSubresource: the executor's scale subresource (kubectl scale) reads replicas
// replicas and its pod selector.
func (e *testEnv) checkScaleSubresource(t *testing.T, got *v1alpha1.Executor, replicas int32) {
	t.Helper()
	scale := &autoscalingv1.Scale{}
	if err := e.c.SubResource("scale").Get(context.Background(), got, scale); err != nil {
		t.Fatalf("scale subresource: %v", err)
	}
	if scale.Spec.Replicas != replicas || scale.Status.Replicas != replicas || scale.Status.Selector != v1alpha1.LabelExecutor+"="+got.Name {
		t.Errorf("scale = %+v", scale)
	}
}

// checkExecutorObjectsGone: the deleted executor name's Deployment dep and its ConfigMaps are
// gone.
func (e *testEnv) checkExecutorObjectsGone(t *testing.T, name string, dep appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(&dep), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment still there: %v", err)
	}
	var cms corev1.ConfigMapList
	if err := e.c.List(ctx, &cms, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelExecutor: name}); err != nil || len(cms.Items) != 0 {
		t.Errorf("config maps left: %d %v", len(cms.Items), err)
	}
}

// An update whose new pods cannot pull their image (kwok's chaos label via podLabels) exceeds
// the progress deadline; the reconciler rolls back: RollingBack → Running on the previous
// revision, Stalled=True (RolledBack) naming both revisions, the old pods never replaced.
// An executor without declared performers (every upstream Hourglass executor example): it runs,
// PerformersReady is True, and its config lists no performer endpoints. Adding a performer
// later rolls out a config with its endpoint.
func TestExecutorWithoutPerformers(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	secret := e.keySecret(t)
	x := e.newExecutor("noperf", v1alpha1.ExecutorSpec{
		Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator.avs.svc:9010",
		OperatorKeys: v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa", BLSKey: "bls"},
	})
	if err := e.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	got := e.waitExecutor(t, x.Name, "Running", execRunning)
	if c := execCondition(got, executor.ConditionPerformersReady); c.Status != metav1.ConditionTrue || len(got.Status.PerformerEndpoints) != 0 {
		t.Errorf("without performers: PerformersReady %+v, endpoints %v", c, got.Status.PerformerEndpoints)
	}
	cfg := e.configMap(t, got.Status.ConfigMapName).Data[v1alpha1.ExecutorConfigKey]
	if strings.Contains(cfg, "endpoint: ") && strings.Contains(cfg, "svc.cluster.local:9090") {
		t.Errorf("config lists performer endpoints:\n%s", cfg)
	}
	p := e.runningPerformer(t, "later", nil)
	e.updateExecutor(t, x.Name, func(x *v1alpha1.Executor) { x.Spec.Performers.Names = []string{p.Name} })
	got = e.waitExecutor(t, x.Name, "Running with the performer", func(x *v1alpha1.Executor) bool {
		return execRunning(x) && len(x.Status.PerformerEndpoints) == 1
	})
	if cfg := e.configMap(t, got.Status.ConfigMapName).Data[v1alpha1.ExecutorConfigKey]; !strings.Contains(cfg, "endpoint: "+p.Status.GRPCEndpoint) {
		t.Errorf("config after adding a performer:\n%s", cfg)
	}
}

func TestExecutorRollback(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	p := e.runningPerformer(t, "rb", map[string]string{"tier": "rollback"})
	two, deadline := int32(2), int32(10)
	x := e.newExecutor("rollback", v1alpha1.ExecutorSpec{
		Image: execImageV1, Replicas: &two, Chains: threeChains()[:1], AggregatorEndpoint: "aggregator:9010",
		Performers:              v1alpha1.PerformerSelection{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "rollback"}}},
		OperatorKeys:            v1alpha1.OperatorKeys{RemoteSignerURL: "https://signer.example.com"},
		ProgressDeadlineSeconds: &deadline,
	})
	if err := e.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	got := e.waitExecutor(t, x.Name, "Running", execRunning)
	if len(got.Status.PerformerEndpoints) != 1 || got.Status.PerformerEndpoints[0].Name != p.Name {
		t.Errorf("selector picked %v", got.Status.PerformerEndpoints)
	}
	rev1 := got.Status.CurrentRevision
	before := e.waitPods(t, x.Name, 2, rev1)
	rec := e.recordExecutorPhases(t, x.Name)

	e.updateExecutor(t, x.Name, func(x *v1alpha1.Executor) {
		x.Spec.Image = execImageV2
		x.Spec.PodLabels = map[string]string{"image-pull-failed.stage.gantry.dev": "true"}
	})
	got = e.waitExecutor(t, x.Name, "rolled back", func(x *v1alpha1.Executor) bool {
		return x.Status.Phase == v1alpha1.ExecutorRunning && x.Status.ObservedGeneration == x.Generation &&
			execCondition(x, v1alpha1.ConditionStalled).Reason == executor.ReasonRolledBack
	})
	st := got.Status
	if st.CurrentRevision != rev1 || st.LastGoodRevision != rev1 || st.FailedRevision == "" || st.FailedRevision == rev1 || st.Image != execImageV1 {
		t.Errorf("after rollback: %s", describeExecutor(&st))
	}
	stalled := execCondition(got, v1alpha1.ConditionStalled)
	for _, want := range []string{"update to revision " + st.FailedRevision + " failed and was rolled back", "revision " + rev1 + " (image " + execImageV1 + ") is running"} {
		if !strings.Contains(stalled.Message, want) {
			t.Errorf("Stalled message %q lacks %q", stalled.Message, want)
		}
	}
	if c := execCondition(got, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
	phases := fmt.Sprint(rec.seen())
	if !strings.Contains(phases, "RollingBack") {
		t.Errorf("phases seen %s, want RollingBack among them", phases)
	}
	e.waitEvent(t, "Executor", x.Name, "ProgressDeadlineExceeded")
	e.waitEvent(t, "Executor", x.Name, "Warning RolledBack")
	// The previous revision's pods were never replaced, and the failed ones are gone.
	after := e.waitPods(t, x.Name, 2, rev1)
	for i := range before {
		found := false
		for j := range after {
			found = found || after[j].UID == before[i].UID
		}
		if !found {
			t.Errorf("old pod %s was replaced", before[i].Name)
		}
	}
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: executor.DeploymentName(x.Name)}, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Template.Spec.Containers[0].Image != execImageV1 {
		t.Errorf("deployment image %s", dep.Spec.Template.Spec.Containers[0].Image)
	}

	// Fixing the spec (dropping the chaos label) rolls out a new revision and clears the rollback.
	e.updateExecutor(t, x.Name, func(x *v1alpha1.Executor) { x.Spec.PodLabels = nil })
	got = e.waitExecutor(t, x.Name, "Running on the fixed revision", func(x *v1alpha1.Executor) bool {
		return execRunning(x) && x.Status.CurrentRevision != rev1
	})
	if got.Status.FailedRevision != "" || got.Status.Image != execImageV2 {
		t.Errorf("after fix: %s", describeExecutor(&got.Status))
	}
}

// A referenced performer that does not exist fails the executor by name (PerformersReady=False,
// Stalled=True); creating it heals the executor. A missing key Secret is named the same way.
func TestExecutorMissingPerformerAndSecret(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	ghost := fmt.Sprintf("ghost-%d", seq.Add(1))
	x := e.newExecutor("missing", v1alpha1.ExecutorSpec{
		Image: execImageV1, Chains: threeChains()[:1], AggregatorEndpoint: "aggregator:9010",
		Performers:   v1alpha1.PerformerSelection{Names: []string{ghost}},
		OperatorKeys: v1alpha1.OperatorKeys{SecretName: "no-such-keys", ECDSAKey: "ecdsa"},
	})
	if err := e.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	got := e.waitExecutor(t, x.Name, "Failed", func(x *v1alpha1.Executor) bool { return x.Status.Phase == v1alpha1.ExecutorFailed })
	pr := execCondition(got, executor.ConditionPerformersReady)
	if pr.Status != metav1.ConditionFalse || pr.Reason != executor.ReasonPerformerNotFound || !strings.Contains(pr.Message, `"`+ghost+`"`) {
		t.Errorf("PerformersReady = %+v", pr)
	}
	if c := execCondition(got, v1alpha1.ConditionStalled); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, ghost) {
		t.Errorf("Stalled = %+v", c)
	}
	if c := execCondition(got, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", c)
	}
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: executor.DeploymentName(x.Name)}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment created without its performers: %v", err)
	}
	// The performer appears: now the Secret is what is missing.
	p := &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: ghost, Namespace: e.ns}, Spec: v1alpha1.PerformerSpec{Image: imageV1}}
	e.create(t, p)
	got = e.waitExecutor(t, x.Name, "SecretNotFound", func(x *v1alpha1.Executor) bool {
		return execCondition(x, v1alpha1.ConditionStalled).Reason == executor.ReasonSecretNotFound
	})
	if c := execCondition(got, executor.ConditionConfigReady); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "Secret "+e.ns+"/no-such-keys not found") {
		t.Errorf("ConfigReady = %+v", c)
	}
	// The Secret appears without the key: the key is named (the executor's backoff re-checks).
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "no-such-keys", Namespace: e.ns}, StringData: map[string]string{"other": keyMaterial}}
	if err := e.c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	wantMsg := "Secret " + e.ns + "/no-such-keys has no key ecdsa"
	got = e.waitExecutor(t, x.Name, "Stalled: "+wantMsg, func(x *v1alpha1.Executor) bool {
		c := execCondition(x, v1alpha1.ConditionStalled)
		return c.Status == metav1.ConditionTrue && c.Reason == executor.ReasonSecretNotFound && strings.Contains(c.Message, wantMsg)
	})
	if c := execCondition(got, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", c)
	}
	e.waitEvent(t, "Executor", x.Name, "Warning SecretNotFound: spec.operatorKeys: "+wantMsg)
	// The key is added (the executor's backoff re-checks it): Running, without user action.
	s.StringData = map[string]string{"ecdsa": keyMaterial}
	if err := e.c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	e.waitExecutor(t, x.Name, "Running", execRunning)
}

// CRD validation rejects what the API forbids, with the messages the CEL rules give.
func TestExecutorValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	good := func() v1alpha1.ExecutorSpec {
		return v1alpha1.ExecutorSpec{Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator:9010",
			Performers: v1alpha1.PerformerSelection{Names: []string{"a"}}, OperatorKeys: v1alpha1.OperatorKeys{SecretName: "k", ECDSAKey: "e"}}
	}
	for name, c := range map[string]struct {
		mod  func(*v1alpha1.ExecutorSpec)
		want string
	}{
		"bad address":        {func(s *v1alpha1.ExecutorSpec) { s.Chains[0].TaskMailboxAddress = "0x1234" }, "taskMailboxAddress"},
		"bad rpc url":        {func(s *v1alpha1.ExecutorSpec) { s.Chains[0].RPCURL = "ftp://x" }, "rpcUrl"},
		"chain id 0":         {func(s *v1alpha1.ExecutorSpec) { s.Chains[0].ChainID = 0 }, "chainId"},
		"duplicate chain id": {func(s *v1alpha1.ExecutorSpec) { s.Chains[1].ChainID = 1 }, "chain IDs must be unique"},
		"names and selector": {func(s *v1alpha1.ExecutorSpec) { s.Performers.Selector = &metav1.LabelSelector{} }, "set at most one of performers.names or performers.selector"},
		"keys and signer": {func(s *v1alpha1.ExecutorSpec) { s.OperatorKeys.RemoteSignerURL = "https://s" },
			"exactly one of operatorKeys.secretName or operatorKeys.remoteSignerUrl"},
		"secret without keys": {func(s *v1alpha1.ExecutorSpec) { s.OperatorKeys.ECDSAKey = "" }, "needs ecdsaKey, blsKey and/or blsKeystoreKey"},
		"no chains":           {func(s *v1alpha1.ExecutorSpec) { s.Chains = nil }, "chains"},
		"reserved pod label":  {func(s *v1alpha1.ExecutorSpec) { s.PodLabels = map[string]string{"gantry.dev/executor": "x"} }, "podLabels cannot set"},
		"replicas > 100":      {func(s *v1alpha1.ExecutorSpec) { n := int32(101); s.Replicas = &n }, "replicas"},
	} {
		s := good()
		c.mod(&s)
		err := e.c.Create(context.Background(), e.newExecutor("invalid", s))
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want Invalid mentioning %q", name, err, c.want)
		}
	}
}

// executorPhases records every status.phase a watch sees for one Executor, collapsing repeats.
type executorPhases struct {
	mu     sync.Mutex
	phases []v1alpha1.ExecutorPhase
}

func (e *testEnv) recordExecutorPhases(t *testing.T, name string) *executorPhases {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &v1alpha1.ExecutorList{}, client.InNamespace(e.ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		cancel()
		t.Fatalf("watch: %v", err)
	}
	r := &executorPhases{}
	go func() {
		for ev := range w.ResultChan() {
			x, ok := ev.Object.(*v1alpha1.Executor)
			if !ok {
				continue
			}
			r.mu.Lock()
			if n := len(r.phases); x.Status.Phase != "" && (n == 0 || r.phases[n-1] != x.Status.Phase) {
				r.phases = append(r.phases, x.Status.Phase)
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop() })
	return r
}

func (r *executorPhases) seen() []v1alpha1.ExecutorPhase {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]v1alpha1.ExecutorPhase(nil), r.phases...)
}

// TestExecutorManagedPerformers: with managePerformers the executor's pods run as
// executor-<name>, which may create Performers in its namespace and nothing else; the
// Performers it creates (label gantry.dev/created-by-executor) are listed in status and
// deleted with the Executor; the config tells the executor where and how; the upstream
// executor fields (ports, operator address, BLS keystore, AVS list) reach the pods and config.
func TestExecutorManagedPerformers(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	secret := fmt.Sprintf("bls-keystore-%d", seq.Add(1))
	if err := e.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: e.ns},
		StringData: map[string]string{"keystore.json": `{"crypto":{}}`, "password": "pw", "ecdsa": keyMaterial}}); err != nil {
		t.Fatal(err)
	}
	avs := "0x" + strings.Repeat("d4", 20)
	x := e.newExecutor("managed", v1alpha1.ExecutorSpec{
		Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator.avs.svc:9010",
		OperatorKeys:     v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa", BLSKeystoreKey: "keystore.json", BLSKeystorePasswordKey: "password"},
		GRPCPort:         9095,
		OperatorAddress:  "0x" + strings.Repeat("e5", 20),
		AVSPerformers:    []v1alpha1.AVSPerformer{{AVSAddress: avs, AVSRegistrarAddress: "0x" + strings.Repeat("f6", 20), ProcessType: "server", Image: imageV1}},
		ManagePerformers: true,
	})
	if err := e.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	got := e.waitExecutor(t, x.Name, "Running", execRunning)
	name := executor.AccessName(x.Name)

	// The pods: ServiceAccount, ports, keystore mounted from the Secret, password by reference.
	pods := e.executorPods(t, x.Name)
	if len(pods) == 0 {
		t.Fatal("no executor pods")
	}
	ps := pods[0].Spec
	if ps.ServiceAccountName != name {
		t.Errorf("serviceAccountName = %q, want %q", ps.ServiceAccountName, name)
	}
	ports := map[string]int32{}
	for _, p := range ps.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["grpc"] != 9095 || ports["management"] != v1alpha1.DefaultExecutorManagementPort {
		t.Errorf("container ports = %v", ports)
	}
	var keystore *corev1.SecretVolumeSource
	for _, v := range ps.Volumes {
		if v.Secret != nil {
			keystore = v.Secret
		}
	}
	if keystore == nil || keystore.SecretName != secret || len(keystore.Items) != 1 || keystore.Items[0].Key != "keystore.json" {
		t.Errorf("keystore volume = %+v", keystore)
	}
	var pw *corev1.EnvVar
	for i, v := range ps.Containers[0].Env {
		if v.Name == v1alpha1.ExecutorBLSKeystorePasswordEnv {
			pw = &ps.Containers[0].Env[i]
		}
	}
	if pw == nil || pw.Value != "" || pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef.Key != "password" {
		t.Errorf("%s = %+v, want a secretKeyRef to key password", v1alpha1.ExecutorBLSKeystorePasswordEnv, pw)
	}
	cfg := e.configMap(t, got.Status.ConfigMapName).Data[v1alpha1.ExecutorConfigKey]
	for _, want := range []string{"grpc_port: 9095", "management_server_grpc_port: 9091", "operator_address: 0x" + strings.Repeat("e5", 20),
		"avs_address: " + avs, "process_type: server", "bls_keystore_file: " + v1alpha1.ExecutorKeystorePath,
		"bls_keystore_password_env: " + v1alpha1.ExecutorBLSKeystorePasswordEnv, "crd_group: gantry.dev", "namespace: " + e.ns,
		v1alpha1.LabelCreatedByExecutor + ": " + x.Name} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "pw") && strings.Contains(cfg, "password: pw") || strings.Contains(cfg, keyMaterial) {
		t.Errorf("config holds key material:\n%s", cfg)
	}

	// As the executor's ServiceAccount: Performers in its namespace yes; Secrets and other
	// namespaces no.
	asExecutor := rest.CopyConfig(e.cfg)
	asExecutor.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + e.ns + ":" + name}
	sc, err := client.New(asExecutor, client.Options{Scheme: NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	perf := &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("avs-%d", seq.Add(1)), Namespace: e.ns,
		Labels: map[string]string{v1alpha1.LabelCreatedByExecutor: x.Name}}, Spec: v1alpha1.PerformerSpec{Image: imageV1, AVSAddress: avs}}
	if err := sc.Create(ctx, perf); err != nil {
		t.Fatalf("the executor's ServiceAccount cannot create a Performer: %v", err)
	}
	if err := sc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stolen", Namespace: e.ns}}); !apierrors.IsForbidden(err) {
		t.Errorf("creating a Secret as the executor: err = %v, want Forbidden", err)
	}
	other := &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "default"}, Spec: v1alpha1.PerformerSpec{Image: imageV1}}
	if err := sc.Create(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("creating a Performer in another namespace as the executor: err = %v, want Forbidden", err)
	}

	// Status lists it, Running with its endpoint.
	got = e.waitExecutor(t, x.Name, "the managed performer Running in status", func(x *v1alpha1.Executor) bool {
		return len(x.Status.ManagedPerformers) == 1 && x.Status.ManagedPerformers[0].Name == perf.Name &&
			x.Status.ManagedPerformers[0].Phase == v1alpha1.PerformerRunning && x.Status.ManagedPerformers[0].Endpoint != ""
	})
	t.Logf("managed performers: %+v", got.Status.ManagedPerformers)

	// Deleting the Executor deletes what it created; its access goes with it.
	if err := e.c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var p v1alpha1.Performer
		err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: perf.Name}, &p)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the managed performer %s outlived its executor", perf.Name)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var sa corev1.ServiceAccount
		err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &sa)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("ServiceAccount %s outlived its executor (garbage collection)", name)
	}
}

// TestExecutorManagePerformersOff: turning managePerformers off revokes the access and
// deletes the performers the executor created.
func TestExecutorManagePerformersOff(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	secret := e.keySecret(t)
	x := e.newExecutor("manageoff", v1alpha1.ExecutorSpec{
		Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator.avs.svc:9010",
		OperatorKeys: v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa"}, ManagePerformers: true,
	})
	if err := e.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	e.waitExecutor(t, x.Name, "Running", execRunning)
	perf := e.newPerformer("made", v1alpha1.PerformerSpec{Image: imageV1})
	perf.Labels = map[string]string{v1alpha1.LabelCreatedByExecutor: x.Name}
	e.create(t, perf)
	e.waitExecutor(t, x.Name, "the managed performer in status", func(x *v1alpha1.Executor) bool { return len(x.Status.ManagedPerformers) == 1 })
	e.updateExecutor(t, x.Name, func(x *v1alpha1.Executor) { x.Spec.ManagePerformers = false })
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var role rbacv1.Role
		roleErr := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: executor.AccessName(x.Name)}, &role)
		var p v1alpha1.Performer
		perfErr := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: perf.Name}, &p)
		return apierrors.IsNotFound(roleErr) && apierrors.IsNotFound(perfErr), nil
	})
	if err != nil {
		t.Fatalf("after managePerformers=false the Role or the managed performer is still there")
	}
	e.waitExecutor(t, x.Name, "Running without access", func(x *v1alpha1.Executor) bool {
		return execRunning(x) && len(x.Status.ManagedPerformers) == 0
	})
}

// TestExecutorHourglassCompat: in Hourglass compatibility mode the executor runs as
// Hourglass's chart runs its image (executor run --config .../config.yaml), the ConfigMap holds
// Hourglass's own format with no key material, the keys reach the pod only as the
// EXECUTOR__... secretKeyRefs Hourglass's loader reads, and the Role covers Hourglass's
// Performers; the API server refuses what Hourglass's executor cannot use.
func TestExecutorHourglassCompat(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	secret := fmt.Sprintf("hourglass-keys-%d", seq.Add(1))
	if err := e.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: e.ns},
		StringData: map[string]string{"keystore.json": `{"crypto":{}}`, "password": "pw", "ecdsa": keyMaterial}}); err != nil {
		t.Fatal(err)
	}
	avs := "0x" + strings.Repeat("d4", 20)
	spec := v1alpha1.ExecutorSpec{
		Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator.avs.svc:9010",
		OperatorKeys:    v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa", BLSKeystoreKey: "keystore.json", BLSKeystorePasswordKey: "password"},
		GRPCPort:        9000,
		ManagementPort:  9001,
		OperatorAddress: "0x" + strings.Repeat("e5", 20),
		AVSPerformers:   []v1alpha1.AVSPerformer{{AVSAddress: avs, ProcessType: "server", Image: "hello-performer:latest"}},
		HourglassCompat: &v1alpha1.HourglassCompat{L1Chain: "base"},
	}
	x := e.newExecutor("hourglass", spec)
	if err := e.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	got := e.waitExecutor(t, x.Name, "Running", execRunning)
	cm := e.configMap(t, got.Status.ConfigMapName)
	cfg, ok := cm.Data[v1alpha1.HourglassConfigKey]
	if !ok {
		t.Fatalf("ConfigMap %s has no %s: %v", cm.Name, v1alpha1.HourglassConfigKey, cm.Data)
	}
	for _, want := range []string{"grpcPort: 9000", "managementServerGrpcPort: 9001", "address: 0x" + strings.Repeat("e5", 20),
		"l1Chain:\n  chainId: 8453\n  rpcUrl: https://base.example.com\n", "deploymentMode: kubernetes", "crdGroup: hourglass.eigenlayer.io",
		"namespace: " + e.ns, "repository: hello-performer", "tag: latest", "type: memory"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, keyMaterial) || strings.Contains(cfg, "crypto") {
		t.Errorf("config holds key material:\n%s", cfg)
	}
	pods := e.executorPods(t, x.Name)
	if len(pods) == 0 {
		t.Fatal("no executor pods")
	}
	c := pods[0].Spec.Containers[0]
	if strings.Join(c.Command, " ") != "executor run --config /etc/gantry/config.yaml" {
		t.Errorf("command = %q", c.Command)
	}
	env := map[string]string{}
	for _, v := range c.Env {
		if v.Value != "" || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil || v.ValueFrom.SecretKeyRef.Name != secret {
			t.Errorf("env %+v is not a secretKeyRef of %s", v, secret)
			continue
		}
		env[v.Name] = v.ValueFrom.SecretKeyRef.Key
	}
	if env[executor.HourglassOperatorKeyEnv] != "ecdsa" || env[executor.HourglassBLSKeystoreEnv] != "keystore.json" || env[executor.HourglassBLSPasswordEnv] != "password" {
		t.Errorf("env = %v", env)
	}
	if sa := pods[0].Spec.ServiceAccountName; sa != executor.AccessName(x.Name) {
		t.Errorf("serviceAccountName = %q", sa)
	}
	var role rbacv1.Role
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: executor.AccessName(x.Name)}, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) == 0 || role.Rules[0].APIGroups[0] != v1alpha1.HourglassPerformerGroup {
		t.Errorf("Role rules = %+v, want Hourglass's Performers first", role.Rules)
	}

	// What Hourglass's executor cannot use is refused by the API server, naming the field.
	for name, c := range map[string]struct {
		mod  func(*v1alpha1.ExecutorSpec)
		want string
	}{
		"no operator address": {func(s *v1alpha1.ExecutorSpec) { s.OperatorAddress = "" }, "hourglassCompat needs operatorAddress"},
		"raw BLS key": {func(s *v1alpha1.ExecutorSpec) {
			s.OperatorKeys.BLSKeystoreKey, s.OperatorKeys.BLSKeystorePasswordKey, s.OperatorKeys.BLSKey = "", "", "bls"
		},
			"hourglassCompat takes no operatorKeys.blsKey"},
		"performer names":  {func(s *v1alpha1.ExecutorSpec) { s.Performers.Names = []string{"p"} }, "hourglassCompat takes no performers"},
		"unknown l1 chain": {func(s *v1alpha1.ExecutorSpec) { s.HourglassCompat = &v1alpha1.HourglassCompat{L1Chain: "gnosis"} }, "hourglassCompat.l1Chain must name one of chains"},
		"untagged image":   {func(s *v1alpha1.ExecutorSpec) { s.AVSPerformers[0].Image = "hello-performer" }, "must be repository:tag"},
	} {
		s := *spec.DeepCopy()
		c.mod(&s)
		err := e.c.Create(ctx, e.newExecutor("invalid-hg", s))
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want Invalid mentioning %q", name, err, c.want)
		}
	}
}

// TestExecutorHourglassExecutorV1alpha1: with hourglassCompat.configFormat
// hourglass-executor-v1alpha1 the executor runs as the removed HourglassExecutor operator ran
// its image: the ConfigMap holds config.yaml byte for byte as that operator's
// buildExecutorConfig wrote it (no key material), mounted at /etc/hourglass; the container
// keeps its entrypoint with --config=/etc/hourglass/config.yaml, port grpc 9090, HTTP probes
// /healthz and /readyz on 8080; the keys reach it only as ECDSA_PRIVATE_KEY and
// BLS_PRIVATE_KEY secretKeyRefs; the Role covers Hourglass's Performers. Switching to the
// default format (ponos) rolls a new ConfigMap and pod template. The API server refuses what
// that config has no place for, naming the format.
func TestExecutorHourglassExecutorV1alpha1(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	secret := fmt.Sprintf("hgv1-keys-%d", seq.Add(1))
	if err := e.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: e.ns},
		StringData: map[string]string{"ecdsa": keyMaterial, "bls": "bls-" + keyMaterial}}); err != nil {
		t.Fatal(err)
	}
	spec := v1alpha1.ExecutorSpec{
		Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator.avs.svc:9010", LogLevel: "debug",
		OperatorKeys:    v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa", BLSKey: "bls"},
		HourglassCompat: &v1alpha1.HourglassCompat{ConfigFormat: v1alpha1.HourglassConfigFormatExecutorV1alpha1},
	}
	x := e.newExecutor("hgv1", spec)
	if err := e.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	got := e.waitExecutor(t, x.Name, "Running", execRunning)
	cm := e.configMap(t, got.Status.ConfigMapName)
	want := `
aggregator_endpoint: "aggregator.avs.svc:9010"
performer_mode: "kubernetes"
log_level: "debug"
chains:
`
	for _, c := range threeChains() {
		want += fmt.Sprintf(`
  - name: "%s"
    rpc: "%s"
    chain_id: %d
    task_mailbox_address: "%s"
`, c.Name, c.RPCURL, c.ChainID, c.TaskMailboxAddress)
	}
	want += "\nkubernetes:\n  namespace: \"" + e.ns + "\"\n"
	if !reflect.DeepEqual(cm.Data, map[string]string{v1alpha1.HourglassConfigKey: want}) {
		t.Errorf("ConfigMap %s data %q, want config.yaml %q", cm.Name, cm.Data, want)
	}
	pods := e.executorPods(t, x.Name)
	if len(pods) == 0 {
		t.Fatal("no executor pods")
	}
	c := pods[0].Spec.Containers[0]
	if c.Command != nil || !reflect.DeepEqual(c.Args, []string{"--config=/etc/hourglass/config.yaml"}) {
		t.Errorf("command %q args %q", c.Command, c.Args)
	}
	// The ServiceAccount admission plugin adds the token's kube-api-access-* mount to the pod.
	var mounts []corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(m.Name, "kube-api-access-") {
			mounts = append(mounts, m)
		}
	}
	if len(mounts) != 1 || mounts[0].MountPath != v1alpha1.HourglassExecutorV1alpha1MountPath {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "grpc" || c.Ports[0].ContainerPort != 9090 {
		t.Errorf("ports %+v", c.Ports)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port.IntValue() != 8080 ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port.IntValue() != 8080 {
		t.Errorf("liveness %+v readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	env := map[string]string{}
	for _, v := range c.Env {
		if v.Value != "" || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil || v.ValueFrom.SecretKeyRef.Name != secret {
			t.Errorf("env %+v is not a secretKeyRef of %s", v, secret)
			continue
		}
		env[v.Name] = v.ValueFrom.SecretKeyRef.Key
	}
	if !reflect.DeepEqual(env, map[string]string{v1alpha1.ExecutorECDSAKeyEnv: "ecdsa", v1alpha1.ExecutorBLSKeyEnv: "bls"}) {
		t.Errorf("env = %v", env)
	}
	var role rbacv1.Role
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: executor.AccessName(x.Name)}, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) == 0 || role.Rules[0].APIGroups[0] != v1alpha1.HourglassPerformerGroup {
		t.Errorf("Role rules = %+v, want Hourglass's Performers first", role.Rules)
	}

	// Back to Hourglass's current format: a new config, a new revision.
	e.updateExecutor(t, x.Name, func(x *v1alpha1.Executor) {
		x.Spec.HourglassCompat.ConfigFormat = v1alpha1.HourglassConfigFormatPonos
		x.Spec.OperatorAddress = "0x" + strings.Repeat("e5", 20)
		x.Spec.OperatorKeys.BLSKey = ""
	})
	after := e.waitExecutor(t, x.Name, "Running on ponos", func(n *v1alpha1.Executor) bool {
		return execRunning(n) && n.Status.ConfigMapName != got.Status.ConfigMapName && n.Status.CurrentRevision != got.Status.CurrentRevision
	})
	if cfg := e.configMap(t, after.Status.ConfigMapName).Data[v1alpha1.HourglassConfigKey]; !strings.Contains(cfg, "l1Chain:") {
		t.Errorf("after configFormat ponos the config is not Hourglass's current format:\n%s", cfg)
	}

	// What the HourglassExecutor config has no place for is refused by the API server.
	for name, c := range map[string]struct {
		mod  func(*v1alpha1.ExecutorSpec)
		want string
	}{
		"avs performers": {func(s *v1alpha1.ExecutorSpec) {
			s.AVSPerformers = []v1alpha1.AVSPerformer{{AVSAddress: "0x" + strings.Repeat("d4", 20)}}
		}, "hourglass-executor-v1alpha1 takes no avsPerformers"},
		"l1 chain":  {func(s *v1alpha1.ExecutorSpec) { s.HourglassCompat.L1Chain = "base" }, "hourglass-executor-v1alpha1 takes no avsPerformers and no hourglassCompat.l1Chain"},
		"grpc port": {func(s *v1alpha1.ExecutorSpec) { s.GRPCPort = 9000 }, "hourglass-executor-v1alpha1 needs grpcPort 9090"},
		"remote signer": {func(s *v1alpha1.ExecutorSpec) {
			s.OperatorKeys = v1alpha1.OperatorKeys{RemoteSignerURL: "https://signer:9000"}
		}, "takes no operatorKeys.blsKeystoreKey, remoteSigner or remoteSignerUrl"},
		"unknown format": {func(s *v1alpha1.ExecutorSpec) { s.HourglassCompat.ConfigFormat = "v1alpha1" }, "spec.hourglassCompat.configFormat"},
	} {
		s := *spec.DeepCopy()
		c.mod(&s)
		err := e.c.Create(ctx, e.newExecutor("invalid-hgv1", s))
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want Invalid mentioning %q", name, err, c.want)
		}
	}
}
