package reconciler

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// Issue 9 §2: whatever stops an object from progressing is in its status within seconds, as
// Stalled=True with a reason and the API server's (or kubelet's, or our check's) own message
// naming the object and field; Ready=False; a Warning event. Each wait below polls with the
// suite's generous timeout; nothing asserts on the wall clock.

// stalledWith: the status is for the current generation and Stalled=True has the reason and a
// message containing every one of msgs.
func stalledWith(conds []metav1.Condition, generation, observed int64, reason string, msgs []string) bool {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || observed != generation {
		return false
	}
	for _, m := range msgs {
		if !strings.Contains(c.Message, m) {
			return false
		}
	}
	return true
}

// waitStalled waits for the Performer's Stalled=True with reason and a message containing
// every one of msgs, then checks Ready=False and the Warning event.
func (e *testEnv) waitStalled(t *testing.T, name, reason string, msgs ...string) *v1alpha1.Performer {
	t.Helper()
	p := e.waitFor(t, name, "Stalled "+reason, func(p *v1alpha1.Performer) bool {
		return stalledWith(p.Status.Conditions, p.Generation, p.Status.ObservedGeneration, reason, msgs)
	})
	if c := condition(p, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", c)
	}
	if p.Status.Phase != v1alpha1.PerformerFailed {
		t.Errorf("phase %s, want Failed", p.Status.Phase)
	}
	e.waitEvent(t, "Performer", name, "Warning "+reason+": ")
	return p
}

// Owned objects the API server rejects: each performer stalls with reason Rejected and the
// API server's message, which names the object and the field.
func TestPerformerRejectedByAPIServer(t *testing.T) {
	e := setup(t)
	t.Parallel()
	str := func(s string) *string { return &s }
	cpu := func(req, lim string) v1alpha1.ResourceRequirements {
		return v1alpha1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)},
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(lim)}}
	}
	for _, c := range []struct {
		name string
		spec func(*v1alpha1.PerformerSpec)
		// kind of the rejected object and substrings of the API server's message
		kind string
		want []string
	}{
		{"missing-sa", func(s *v1alpha1.PerformerSpec) { s.ServiceAccountName = "no-such-sa" },
			"Pod", []string{"is forbidden", `serviceaccount "no-such-sa" not found`}},
		{"missing-priority", func(s *v1alpha1.PerformerSpec) { s.Scheduling.PriorityClassName = str("no-such-priority") },
			"Pod", []string{"is forbidden", "no PriorityClass with name no-such-priority was found"}},
		{"missing-runtime", func(s *v1alpha1.PerformerSpec) { s.Scheduling.RuntimeClassName = str("no-such-runtime") },
			"Pod", []string{"is forbidden", `RuntimeClass "no-such-runtime" not found`}},
		{"request-above-limit", func(s *v1alpha1.PerformerSpec) { s.Resources = cpu("2", "1") },
			"Pod", []string{"is invalid", "spec.containers[0].resources.requests", "must be less than or equal to cpu limit"}},
		// The CRD refuses a nodeSelector key that is not a label key; it checks only the length
		// of values, so a value with a space reaches the Pod.
		{"bad-selector-value", func(s *v1alpha1.PerformerSpec) { s.Scheduling.NodeSelector = map[string]string{"zone": "a b"} },
			"Pod", []string{"is invalid", "spec.nodeSelector", `"a b"`}},
		{"bad-env-name", func(s *v1alpha1.PerformerSpec) { s.Env = map[string]string{"A=B": "x"} },
			"Pod", []string{"is invalid", "spec.containers[0].env[0].name", `"A=B"`}},
		// Names that cannot become the Service (a dot, too long) are refused by the CRD itself
		// now (TestCRDNameRules), before any object exists.
	} {
		t.Run(c.name[:min(len(c.name), 20)], func(t *testing.T) {
			t.Parallel()
			spec := v1alpha1.PerformerSpec{Image: imageV1}
			c.spec(&spec)
			p := e.newPerformer(c.name, spec)
			e.create(t, p)
			want := append([]string{fmt.Sprintf("%s %s/%s was rejected", c.kind, e.ns, performer.ObjectName(p.Name))}, c.want...)
			e.waitStalled(t, p.Name, failure.ReasonRejected, want...)
		})
	}
}

// A rejected Pod heals without user action once what it lacked exists (the rejected create is
// retried with backoff).
func TestPerformerRejectionHeals(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	sa := fmt.Sprintf("late-sa-%d", seq.Add(1))
	p := e.newPerformer("heal-sa", v1alpha1.PerformerSpec{Image: imageV1, ServiceAccountName: sa})
	e.create(t, p)
	e.waitStalled(t, p.Name, failure.ReasonRejected, fmt.Sprintf(`serviceaccount "%s" not found`, sa))
	if err := e.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: e.ns}}); err != nil {
		t.Fatal(err)
	}
	got := e.waitFor(t, p.Name, "Running after the ServiceAccount appeared", running)
	e.checkRunning(t, got, imageV1)
}

// env_from Secrets/ConfigMaps and their keys are checked before the Pod is created; each
// missing one is named; creating them heals the performer without user action.
func TestPerformerMissingReferences(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	n := seq.Add(1)
	secret, cm := fmt.Sprintf("perf-keys-%d", n), fmt.Sprintf("perf-cfg-%d", n)
	p := e.newPerformer("refs", v1alpha1.PerformerSpec{Image: imageV1, EnvFrom: []v1alpha1.EnvFromRef{
		{Name: "TOKEN", SecretKeyRef: &v1alpha1.KeyRef{Name: secret, Key: "token"}},
		{Name: "MODE", ConfigMapKeyRef: &v1alpha1.KeyRef{Name: cm, Key: "mode"}},
	}})
	e.create(t, p)
	e.waitStalled(t, p.Name, failure.ReasonReferenceNotFound,
		"spec.envFrom: Secret "+e.ns+"/"+secret+" not found", "ConfigMap "+e.ns+"/"+cm+" not found")
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: performer.ObjectName(p.Name)}, &corev1.Pod{}); err == nil {
		t.Errorf("pod created while its references are missing")
	}
	// The ConfigMap appears complete, then the Secret without the key.
	if err := e.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm, Namespace: e.ns}, Data: map[string]string{"mode": "fast"}}); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: e.ns}, StringData: map[string]string{"other": "x"}}
	if err := e.c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	got := e.waitStalled(t, p.Name, failure.ReasonReferenceNotFound, "Secret "+e.ns+"/"+secret+" has no key token")
	if msg := condition(got, v1alpha1.ConditionStalled).Message; strings.Contains(msg, cm) {
		t.Errorf("the ConfigMap exists now but is still named: %q", msg)
	}
	s.StringData = map[string]string{"token": "t0ken"}
	if err := e.c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, p.Name, "Running once the key exists", running)
}

// A TEE type no node offers: the scheduler's message plus which TEE type's node label no node
// has (the local cluster has SEV-SNP and TDX nodes, no SGX).
func TestPerformerTEETypeNoNodeOffers(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("sgx", v1alpha1.PerformerSpec{Image: imageV1,
		HardwareRequirements: v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEESGX}})
	e.create(t, p)
	e.waitStalled(t, p.Name, performer.ReasonSchedulingFailed, "0/", "didn't match Pod's node affinity/selector",
		"no node has the label feature.node.kubernetes.io/cpu-security.sgx.enabled=true (TEE type sgx)")
}

// waitWSStalled waits for the Workspace's Stalled=True with reason and message substrings.
func (e *testEnv) waitWSStalled(t *testing.T, name, reason string, msgs ...string) *v1alpha1.Workspace {
	t.Helper()
	w := e.waitWS(t, name, "Stalled "+reason, func(w *v1alpha1.Workspace) bool {
		return stalledWith(w.Status.Conditions, w.Generation, w.Status.ObservedGeneration, reason, msgs)
	})
	if c := wsCond(w, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", c)
	}
	e.waitEvent(t, "Workspace", name, "Warning "+reason+": ")
	return w
}

// A workspace's config ConfigMap (inference) and output push Secret (tuning) are checked before
// use; creating them heals it without user action. A TEE type no node offers names the label.
func TestWorkspaceFailuresReachStatus(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	t.Run("config ConfigMap", func(t *testing.T) {
		t.Parallel()
		cm := fmt.Sprintf("ws-cfg-%d", seq.Add(1))
		spec := inferenceSpec(1, 1, "")
		spec.Inference.Config = cm
		w := e.newWorkspace("cfg", nil, spec)
		if err := e.c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		got := e.waitWSStalled(t, w.Name, workspace.ReasonReferenceNotFound, "ConfigMap "+e.ns+"/"+cm+" not found")
		if c := wsCond(got, workspace.ConditionInferenceReady); c.Reason != workspace.ReasonReferenceNotFound {
			t.Errorf("InferenceReady = %+v", c)
		}
		if err := e.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm, Namespace: e.ns}, Data: map[string]string{"a": "b"}}); err != nil {
			t.Fatal(err)
		}
		e.waitWS(t, w.Name, "Ready once the ConfigMap exists", stateIs(v1alpha1.WorkspaceStateReady))
	})
	t.Run("push Secret", func(t *testing.T) {
		t.Parallel()
		secret := fmt.Sprintf("push-%d", seq.Add(1))
		spec := tuningSpec()
		spec.Tuning.Output.ImagePushSecret = secret
		w := e.newWorkspace("push", nil, spec)
		if err := e.c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		e.waitWSStalled(t, w.Name, workspace.ReasonReferenceNotFound, "Secret "+e.ns+"/"+secret+" not found")
		if err := e.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: e.ns},
			Type: corev1.SecretTypeDockerConfigJson, StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`}}); err != nil {
			t.Fatal(err)
		}
		e.waitWS(t, w.Name, "the tuning Job started once the Secret exists", func(w *v1alpha1.Workspace) bool {
			return wsCond(w, workspace.ConditionJobStarted).Status == metav1.ConditionTrue
		})
	})
	t.Run("TEE type", func(t *testing.T) {
		t.Parallel()
		spec := inferenceSpec(1, 0, "")
		spec.Resource.TEEType = v1alpha1.TEESGX
		w := e.newWorkspace("sgx", nil, spec)
		if err := e.c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		e.waitWSStalled(t, w.Name, workspace.ReasonNoMatchingNodes,
			"no node has the label feature.node.kubernetes.io/cpu-security.sgx.enabled=true (TEE type sgx)")
	})
	t.Run("rejected Deployment", func(t *testing.T) {
		t.Parallel()
		spec := inferenceSpec(1, 1, "")
		spec.Scheduling.NodeSelector = map[string]string{"zone": "a b"}
		w := e.newWorkspace("badsel", nil, spec)
		if err := e.c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		e.waitWSStalled(t, w.Name, workspace.ReasonRejected,
			"Deployment "+e.ns+"/"+workspace.ObjectName(w.Name)+" was rejected (Invalid)", "spec.template.spec.nodeSelector", `"a b"`)
	})
}

// waitExecutorStalled waits for the Executor's Stalled=True with reason and message substrings.
func (e *testEnv) waitExecutorStalled(t *testing.T, name, reason string, msgs ...string) *v1alpha1.Executor {
	t.Helper()
	x := e.waitExecutor(t, name, "Stalled "+reason, func(x *v1alpha1.Executor) bool {
		return stalledWith(x.Status.Conditions, x.Generation, x.Status.ObservedGeneration, reason, msgs)
	})
	if c := execCondition(x, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", c)
	}
	e.waitEvent(t, "Executor", name, "Warning "+reason+": ")
	return x
}

// Executor: a rollout that cannot pull its image says so (the kubelet's reason and the pod),
// not only ProgressDeadlineExceeded; a Deployment the API server rejects stalls with its
// message.
func TestExecutorFailuresReachStatus(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	p := e.runningPerformer(t, "xfail", map[string]string{"tier": "xfail"})
	spec := func() v1alpha1.ExecutorSpec {
		deadline := int32(10)
		return v1alpha1.ExecutorSpec{Image: execImageV1, Chains: threeChains()[:1], AggregatorEndpoint: "aggregator:9010",
			Performers:              v1alpha1.PerformerSelection{Names: []string{p.Name}},
			OperatorKeys:            v1alpha1.OperatorKeys{RemoteSignerURL: "https://signer.example.com"},
			ProgressDeadlineSeconds: &deadline}
	}
	t.Run("image pull", func(t *testing.T) {
		t.Parallel()
		s := spec()
		s.PodLabels = map[string]string{"image-pull-failed.stage.gantry.dev": "true"}
		x := e.newExecutor("pull", s)
		if err := e.c.Create(ctx, x); err != nil {
			t.Fatal(err)
		}
		e.waitExecutorStalled(t, x.Name, executor.ReasonProgressDeadlineExceeded,
			"ProgressDeadlineExceeded", "pod "+executor.DeploymentName(x.Name)+"-", "container executor: ", "ImagePull")
	})
	t.Run("rejected Deployment", func(t *testing.T) {
		t.Parallel()
		s := spec()
		s.Scheduling.NodeSelector = map[string]string{"zone": "a b"}
		x := e.newExecutor("badsel", s)
		if err := e.c.Create(ctx, x); err != nil {
			t.Fatal(err)
		}
		e.waitExecutorStalled(t, x.Name, executor.ReasonRejected,
			"Deployment "+e.ns+"/"+executor.DeploymentName(x.Name)+" was rejected (Invalid)", "spec.template.spec.nodeSelector", `"a b"`)
	})
}

// A hand-edited status the machine cannot move on from (Terminating → Running without a
// deletion is not a transition the lifecycle allows) is permanent: a Warning event names the
// illegal transition and the pass ends with a terminal error instead of a hot retry loop.
func TestPerformerIllegalTransitionIsTerminal(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	p := e.newPerformer("hand-edit", v1alpha1.PerformerSpec{Image: imageV1})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	for i := range got.Status.Conditions {
		c := &got.Status.Conditions[i]
		switch c.Type {
		case v1alpha1.ConditionReady, v1alpha1.ConditionStalled:
			c.Status = metav1.ConditionFalse
		case v1alpha1.ConditionReconciling:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, performer.ReasonTerminating, "edited by hand"
		}
	}
	got.Status.Phase = v1alpha1.PerformerTerminating
	if err := e.c.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	e.waitEvent(t, "Performer", p.Name, "Warning IllegalTransition: illegal Performer phase transition Terminating → Running")
}
