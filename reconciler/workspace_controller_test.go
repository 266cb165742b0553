package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

const (
	modelImage  = "ghcr.io/gantry-dev/hello-model:1.0.0"
	tuningImage = "ghcr.io/gantry-dev/hello-tuner:1.0.0"
	a100        = "NVIDIA-A100-SXM4-80GB"
)

func (e *testEnv) newWorkspace(name string, labels map[string]string, spec v1alpha1.WorkspaceSpec) *v1alpha1.Workspace {
	name = fmt.Sprintf("%s-%d", name, seq.Add(1))
	return &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: labels}, Spec: spec}
}

func inferenceSpec(count, gpus int32, product string) v1alpha1.WorkspaceSpec {
	return v1alpha1.WorkspaceSpec{
		Resource:  v1alpha1.WorkspaceResource{Count: count, GPUCount: gpus, GPUProduct: product},
		Inference: &v1alpha1.WorkspaceInference{Model: "falcon-7b-instruct", Image: modelImage},
	}
}

func tuningSpec() v1alpha1.WorkspaceSpec {
	return v1alpha1.WorkspaceSpec{
		Resource: v1alpha1.WorkspaceResource{Count: 1, GPUCount: 1},
		Tuning: &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningLoRA, BaseModel: "phi-3-mini-4k-instruct", Image: tuningImage,
			Input: v1alpha1.WorkspaceDataSource{URLs: []string{"https://example.com/data.parquet"}}, Output: v1alpha1.WorkspaceDataDestination{Image: "registry.example/adapters/phi:1"}},
	}
}

// waitWS polls the Workspace until cond holds; on timeout it fails with the last status and events.
func (e *testEnv) waitWS(t *testing.T, name, what string, cond func(*v1alpha1.Workspace) bool) *v1alpha1.Workspace {
	t.Helper()
	var last v1alpha1.Workspace
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &last); err != nil {
			return false, nil
		}
		return cond(&last), nil
	})
	if err != nil {
		t.Fatalf("workspace %s: timed out waiting for %s\nlast status: %s\nevents:\n%s", name, what, describeWS(&last), e.wsEvents(name))
	}
	return &last
}

func stateIs(s v1alpha1.WorkspaceState) func(*v1alpha1.Workspace) bool {
	return func(w *v1alpha1.Workspace) bool {
		return w.Status.State == s && w.Status.ObservedGeneration == w.Generation
	}
}

// watchWSStalled records the Stalled status of every copy of the workspace a watch sees, from
// now on (conditionWatch).
func (e *testEnv) watchWSStalled(t *testing.T, name string) *conditionWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &v1alpha1.WorkspaceList{}, client.InNamespace(e.ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cw := &conditionWatch{}
	go func() {
		for ev := range w.ResultChan() {
			if ws, ok := ev.Object.(*v1alpha1.Workspace); ok {
				cw.mu.Lock()
				cw.seen = append(cw.seen, wsCond(ws, v1alpha1.ConditionStalled).Status)
				cw.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop() })
	return cw
}

func wsCond(w *v1alpha1.Workspace, typ string) metav1.Condition {
	for _, c := range w.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func describeWS(w *v1alpha1.Workspace) string {
	var b strings.Builder
	fmt.Fprintf(&b, "state=%s mode=%s nodes=%v ready=%d endpoint=%s\n", w.Status.State, w.Status.Mode, w.Status.WorkerNodes, w.Status.ReadyReplicas, w.Status.Endpoint)
	for _, c := range w.Status.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func (e *testEnv) wsEvents(name string) string { return e.eventsOf("Workspace", name) }

// stateRecorder records every status.state a watch sees for one Workspace, collapsing repeats.
type stateRecorder struct {
	mu     sync.Mutex
	states []v1alpha1.WorkspaceState
}

func (e *testEnv) recordStates(t *testing.T, name string) *stateRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &v1alpha1.WorkspaceList{}, client.InNamespace(e.ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		cancel()
		t.Fatalf("watch: %v", err)
	}
	r := &stateRecorder{}
	go func() {
		for ev := range w.ResultChan() {
			ws, ok := ev.Object.(*v1alpha1.Workspace)
			if !ok {
				continue
			}
			r.mu.Lock()
			if n := len(r.states); ws.Status.State != "" && (n == 0 || r.states[n-1] != ws.Status.State) {
				r.states = append(r.states, ws.Status.State)
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop() })
	return r
}

func (r *stateRecorder) seen() []v1alpha1.WorkspaceState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states)
}

// until returns the recorded states once the watch has delivered last (the GET that saw it
// may be ahead of the watch), or what it has after waitTimeout.
func (r *stateRecorder) until(last v1alpha1.WorkspaceState) []v1alpha1.WorkspaceState {
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		s := r.seen()
		return len(s) > 0 && s[len(s)-1] == last, nil
	})
	return r.seen()
}

// checkKAITOPath asserts that every consecutive pair of recorded states is an edge of KAITO's
// Workspace status proposal.
func checkKAITOPath(t *testing.T, mode v1alpha1.WorkspaceMode, seen []v1alpha1.WorkspaceState) {
	t.Helper()
	for i := 1; i < len(seen); i++ {
		if err := workspace.CheckTransition(mode, seen[i-1], seen[i]); err != nil {
			t.Errorf("recorded states %v: %v", seen, err)
		}
	}
}

// testGPUNode is a kwok GPU node the test owns: a product no standard node has.
func testGPUNode(name, product string, gpus int64) *corev1.Node {
	q := resource.MustParse(fmt.Sprint(gpus))
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"gantry.dev/test": "workspace", "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": q},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": q},
		},
	}
}

func (e *testEnv) addNode(t *testing.T, n *corev1.Node) {
	t.Helper()
	if err := e.c.Create(context.Background(), n.DeepCopy()); err != nil {
		t.Fatalf("create node %s: %v", n.Name, err)
	}
}

func (e *testEnv) removeNode(t *testing.T, name string) {
	t.Helper()
	err := e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete node %s: %v", name, err)
	}
	e.waitGone(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// An inference workspace of 2 replicas × 1 A100 goes Ready: a Deployment and a Service it
// controls, pods on A100 nodes, the endpoint, and every condition True.
func TestWorkspaceInferenceReady(t *testing.T) {
	e := setup(t)
	t.Parallel()
	w := e.newWorkspace("inf", nil, inferenceSpec(2, 1, a100))
	rec := e.recordStates(t, w.Name)
	if err := e.c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	for _, typ := range []string{v1alpha1.ConditionReady, workspace.ConditionResourceReady, workspace.ConditionInferenceReady, workspace.ConditionWorkspaceSucceeded} {
		if c := wsCond(got, typ); c.Status != metav1.ConditionTrue {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	if c := wsCond(got, workspace.ConditionJobStarted); c.Type != "" {
		t.Errorf("inference workspace has JobStarted: %+v", c)
	}
	wantEndpoint := fmt.Sprintf("workspace-%s.%s.svc.cluster.local:8000", w.Name, e.ns)
	if got.Status.Mode != v1alpha1.WorkspaceModeInference || got.Status.Endpoint != wantEndpoint || got.Status.ReadyReplicas != 2 || len(got.Status.WorkerNodes) == 0 {
		t.Errorf("status: %s", describeWS(got))
	}
	for _, n := range got.Status.WorkerNodes {
		if n != "gantry-gpu-0" && n != "gantry-gpu-1" {
			t.Errorf("worker node %s is not an A100 node", n)
		}
	}
	var dep appsv1.Deployment
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &dep); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&dep); ref == nil || ref.UID != got.UID || *dep.Spec.Replicas != 2 {
		t.Errorf("deployment owner %+v replicas %d", ref, *dep.Spec.Replicas)
	}
	var svc corev1.Service
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &svc); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&svc); ref == nil || ref.UID != got.UID || svc.Spec.Ports[0].Port != 8000 {
		t.Errorf("service %+v", svc.Spec)
	}
	if s := rec.until(v1alpha1.WorkspaceStateReady); !slices.Equal(s, []v1alpha1.WorkspaceState{v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateReady}) {
		t.Errorf("states %v", s)
	}
	// Deletion removes the owned objects, then the workspace.
	if err := e.c.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: e.ns}})
	e.waitGone(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "workspace-" + w.Name, Namespace: e.ns}})
}

// A preset workspace (KAITO's inference.preset): only the preset and the GPU product are
// given; the Deployment runs the preset's image and arguments with MODEL_NAME and PORT, on as
// many GPUs as the preset needs (falcon-40b-instruct: 2 per replica). An unknown preset stalls
// the workspace (InvalidSpec) naming the closest presets, and creates nothing.
func TestWorkspacePreset(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	spec := inferenceSpec(1, 0, a100)
	spec.Inference = &v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}
	w := e.newWorkspace("preset", nil, spec)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &dep); err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, v := range c.Env {
		env[v.Name] = v.Value
	}
	gpus := c.Resources.Limits["nvidia.com/gpu"]
	if c.Image != "mcr.microsoft.com/aks/kaito/kaito-falcon-40b-instruct:0.1.1" || gpus.Value() != 2 ||
		!slices.Equal(c.Args, []string{"--served-model-name=falcon-40b-instruct", "--port=$(PORT)", "--tensor-parallel-size=2"}) ||
		env["MODEL_NAME"] != "falcon-40b-instruct" || env["PORT"] != "8000" {
		t.Errorf("preset container: image %s gpus %s args %v env %v", c.Image, gpus.String(), c.Args, env)
	}
	_ = e.c.Delete(ctx, got)

	bad := e.newWorkspace("preset-typo", nil, v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1},
		Inference: &v1alpha1.WorkspaceInference{Preset: "mistral-7b-instrct"}})
	if err := e.c.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	got = e.waitWS(t, bad.Name, "Stalled", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, v1alpha1.ConditionStalled).Status == metav1.ConditionTrue
	})
	if st := wsCond(got, v1alpha1.ConditionStalled); st.Reason != workspace.ReasonInvalidSpec || !strings.Contains(st.Message, "did you mean mistral-7b-instruct") {
		t.Errorf("unknown preset: %s", describeWS(got))
	}
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + bad.Name}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment exists for an unknown preset (%v)", err)
	}
	_ = e.c.Delete(ctx, got)

	// The API server refuses a workspace with neither preset nor model (CEL).
	none := e.newWorkspace("nomodel", nil, v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1},
		Inference: &v1alpha1.WorkspaceInference{Image: "registry.example/x:1"}})
	if err := e.c.Create(ctx, none); err == nil || !strings.Contains(err.Error(), "spec.inference needs a preset, or a model and an image") {
		t.Errorf("create without preset and model: %v", err)
	}
}

// A gated model (KAITO's model access Secret): the llama preset needs
// spec.inference.modelAccessSecret. While the Secret is missing the workspace is Stalled
// (ReferenceNotFound) naming it; once it exists with its key HF_TOKEN the workspace goes Ready
// and the model server gets HF_TOKEN from the Secret (a secretKeyRef: the value never appears
// in the Deployment).
func TestWorkspaceGatedModel(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	spec := inferenceSpec(1, 0, a100)
	secret := fmt.Sprintf("hf-token-%d", seq.Add(1))
	spec.Inference = &v1alpha1.WorkspaceInference{Preset: "llama-3.1-8b-instruct", ModelAccessSecret: secret}
	w := e.newWorkspace("gated", nil, spec)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Stalled on the missing Secret", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, v1alpha1.ConditionStalled).Reason == "ReferenceNotFound"
	})
	if st := wsCond(got, v1alpha1.ConditionStalled); !strings.Contains(st.Message, secret) {
		t.Errorf("missing secret: %s", describeWS(got))
	}
	if err := e.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: e.ns},
		StringData: map[string]string{"HF_TOKEN": "hf_not-a-real-token"}}); err != nil {
		t.Fatal(err)
	}
	got = e.waitWS(t, w.Name, "Ready with the Secret", stateIs(v1alpha1.WorkspaceStateReady))
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &dep); err != nil {
		t.Fatal(err)
	}
	var ref *corev1.SecretKeySelector
	for _, v := range dep.Spec.Template.Spec.Containers[0].Env {
		if v.Name == "HF_TOKEN" && v.ValueFrom != nil {
			ref = v.ValueFrom.SecretKeyRef
		}
		if strings.Contains(v.Value, "hf_not-a-real-token") {
			t.Errorf("the token is in the Deployment: %s", v.Name)
		}
	}
	if ref == nil || ref.Name != secret || ref.Key != "HF_TOKEN" {
		t.Errorf("HF_TOKEN env from %+v", ref)
	}
	_ = e.c.Delete(ctx, got)
}

// An instance type (KAITO's resource.instanceType): replicas go to nodes labelled
// node.kubernetes.io/instance-type with it and get the type's GPUs per node when no gpuCount is
// asked. With no node of the type the workspace is Stalled (NoMatchingNodes) naming the label
// and why no node is provisioned.
func TestWorkspaceInstanceType(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	node := testGPUNode(fmt.Sprintf("gantry-test-nc48-%d", seq.Add(1)), "NVIDIA-A100-PCIE-80GB", 2)
	node.Labels["node.kubernetes.io/instance-type"] = "Standard_NC48ads_A100_v4"
	e.addNode(t, node)
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}})
	})

	w := e.newWorkspace("nc48", nil, v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1, InstanceType: "Standard_NC48ads_A100_v4"},
		Inference: &v1alpha1.WorkspaceInference{Model: "falcon-7b-instruct", Image: modelImage}})
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	if !slices.Equal(got.Status.WorkerNodes, []string{node.Name}) {
		t.Errorf("worker nodes %v, want the instance type's node %s", got.Status.WorkerNodes, node.Name)
	}
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &dep); err != nil {
		t.Fatal(err)
	}
	gpus := dep.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
	if gpus.Value() != 2 || dep.Spec.Template.Spec.NodeSelector["node.kubernetes.io/instance-type"] != "Standard_NC48ads_A100_v4" {
		t.Errorf("pods: gpus %s node selector %v", gpus.String(), dep.Spec.Template.Spec.NodeSelector)
	}
	_ = e.c.Delete(ctx, got)

	none := e.newWorkspace("p5", nil, v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1, InstanceType: "p5.48xlarge"},
		Inference: &v1alpha1.WorkspaceInference{Model: "falcon-7b-instruct", Image: modelImage}})
	if err := e.c.Create(ctx, none); err != nil {
		t.Fatal(err)
	}
	got = e.waitWS(t, none.Name, "Stalled", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, v1alpha1.ConditionStalled).Reason == workspace.ReasonNoMatchingNodes
	})
	if !strings.Contains(wsCond(got, v1alpha1.ConditionStalled).Message, "node.kubernetes.io/instance-type=p5.48xlarge") {
		t.Errorf("no p5 node: %s", describeWS(got))
	}
	// This reconciler has no --node-class: provisioning (on by default) says why it makes no
	// nodes, whether or not Karpenter's NodeClaim API is installed, and creates none.
	if msg := wsCond(got, v1alpha1.ConditionStalled).Message; !strings.Contains(msg, "node provisioning is on") || len(got.Status.NodeClaims) != 0 {
		t.Errorf("provisioning without a node class: %q, claims %v", msg, got.Status.NodeClaims)
	}
	_ = e.c.Delete(ctx, got)
}

// The Pending trap made visible, and healing without user action: a workspace asking for a
// GPU product no node has stays Pending with ResourceReady=False (NoMatchingNodes) and
// Stalled=True; a node with that product is added and it goes Ready on its own. Then the
// node is removed: NotReady with the root cause in a False condition (never Pending); the
// node comes back: Ready again.
func TestWorkspacePendingTrapAndNodeLoss(t *testing.T) {
	e := setup(t)
	t.Parallel()
	product := fmt.Sprintf("GANTRY-TEST-B200-%d", seq.Add(1))
	node := testGPUNode(fmt.Sprintf("gantry-test-b200-%d", seq.Add(1)), product, 8)
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}})
	})

	w := e.newWorkspace("trap", nil, inferenceSpec(1, 2, product))
	rec := e.recordStates(t, w.Name)
	if err := e.c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Stalled", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, v1alpha1.ConditionStalled).Status == metav1.ConditionTrue
	})
	res := wsCond(got, workspace.ConditionResourceReady)
	if got.Status.State != v1alpha1.WorkspaceStatePending || res.Status != metav1.ConditionFalse || res.Reason != workspace.ReasonNoMatchingNodes || !strings.Contains(res.Message, product) {
		t.Errorf("trap: %s", describeWS(got))
	}
	e.waitEvent(t, "Workspace", w.Name, "Warning "+workspace.ReasonNoMatchingNodes+": ") // recorded asynchronously

	e.addNode(t, node)
	got = e.waitWS(t, w.Name, "Ready after the node was added", stateIs(v1alpha1.WorkspaceStateReady))
	if !slices.Equal(got.Status.WorkerNodes, []string{node.Name}) {
		t.Errorf("worker nodes %v", got.Status.WorkerNodes)
	}

	e.removeNode(t, node.Name)
	got = e.waitWS(t, w.Name, "NotReady after the node was removed", stateIs(v1alpha1.WorkspaceStateNotReady))
	var falseConds []string
	for _, c := range got.Status.Conditions {
		if c.Status == metav1.ConditionFalse && (c.Type == workspace.ConditionResourceReady || c.Type == workspace.ConditionInferenceReady) {
			falseConds = append(falseConds, c.Reason+": "+c.Message)
		}
	}
	if len(falseConds) == 0 || !strings.Contains(strings.Join(falseConds, "\n"), node.Name) && !strings.Contains(strings.Join(falseConds, "\n"), product) {
		t.Errorf("NotReady without a root cause naming the node or product: %s", describeWS(got))
	}

	e.addNode(t, node)
	e.waitWS(t, w.Name, "Ready after the node came back", stateIs(v1alpha1.WorkspaceStateReady))
	want := []v1alpha1.WorkspaceState{v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateReady, v1alpha1.WorkspaceStateNotReady, v1alpha1.WorkspaceStateReady}
	if s := rec.until(want[len(want)-1]); !slices.Equal(s, want) {
		t.Errorf("states %v, want %v", s, want)
	}
	checkKAITOPath(t, v1alpha1.WorkspaceModeInference, rec.seen())
	_ = e.c.Delete(context.Background(), got)
	e.waitGone(t, &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: e.ns}})
}

// The Pending trap counts free GPUs, not total ones: a node of 8 GPUs of which another pod
// (not the workspace's) uses 6 cannot hold a replica of 4. The workspace is Stalled with
// InsufficientCapacity naming how many are free where ("2 of 8 GPUs free", "<node> 2/8"); once
// the other pod is deleted the workspace goes Ready without any change.
func TestWorkspaceFreeCapacity(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	product := fmt.Sprintf("GANTRY-TEST-L40S-%d", seq.Add(1))
	node := testGPUNode(fmt.Sprintf("gantry-test-l40s-%d", seq.Add(1)), product, 8)
	e.addNode(t, node)
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}})
	})
	six := resource.MustParse("6")
	blocker := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-hog-%d", seq.Add(1)), Namespace: e.ns},
		Spec: corev1.PodSpec{NodeName: node.Name, Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/hog:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": six}, Limits: corev1.ResourceList{"nvidia.com/gpu": six}}}}}}
	if err := e.c.Create(ctx, blocker); err != nil {
		t.Fatal(err)
	}

	w := e.newWorkspace("free", nil, inferenceSpec(1, 4, product))
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Stalled by free capacity", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, workspace.ConditionResourceReady).Reason == workspace.ReasonInsufficientCapacity
	})
	res := wsCond(got, workspace.ConditionResourceReady)
	if !strings.Contains(res.Message, "2 of 8 GPUs free") || !strings.Contains(res.Message, node.Name+" 2/8") ||
		wsCond(got, v1alpha1.ConditionStalled).Status != metav1.ConditionTrue {
		t.Errorf("free capacity: %s", describeWS(got))
	}

	if err := e.c.Delete(ctx, blocker, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	got = e.waitWS(t, w.Name, "Ready once the GPUs are free", stateIs(v1alpha1.WorkspaceStateReady))
	if !slices.Equal(got.Status.WorkerNodes, []string{node.Name}) {
		t.Errorf("worker nodes %v", got.Status.WorkerNodes)
	}
	_ = e.c.Delete(ctx, got)
	e.waitGone(t, &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: e.ns}})
}

// A LoRA tuning run: kwok completes the Job; Pending → Running → Succeeded, terminal.
func TestWorkspaceTuningSucceeded(t *testing.T) {
	e := setup(t)
	t.Parallel()
	w := e.newWorkspace("tune", nil, tuningSpec())
	rec := e.recordStates(t, w.Name)
	if err := e.c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Succeeded", stateIs(v1alpha1.WorkspaceStateSucceeded))
	for _, typ := range []string{v1alpha1.ConditionReady, workspace.ConditionJobStarted, workspace.ConditionWorkspaceSucceeded} {
		if c := wsCond(got, typ); c.Status != metav1.ConditionTrue {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	var job batchv1.Job
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &job); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&job); ref == nil || ref.UID != got.UID {
		t.Errorf("job owner %+v", ref)
	}
	want := []v1alpha1.WorkspaceState{v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateRunning, v1alpha1.WorkspaceStateSucceeded}
	if s := rec.until(want[len(want)-1]); !slices.Equal(s, want) {
		t.Errorf("states %v, want %v", s, want)
	}
}

// Tuning with PersistentVolumeClaims as input and output (KAITO's volumeSource): while the
// input claim is missing the workspace is Stalled (ReferenceNotFound) naming it and no Job is
// created. Once both claims exist but are not bound yet (no volume: the local cluster has no
// provisioner), the scheduler holds the pod ("unbound immediate PersistentVolumeClaims"): the
// workspace waits as KAITO does, Pending, Reconciling with reason WaitingForVolumeBinding,
// quoting the scheduler and naming both claims (Pending), and Stalled never turns True from
// then on (a watch sees every status written). The test then creates the volumes; the
// PersistentVolume controller binds the claims, the Job mounts them (input read-only at
// /mnt/input, output at /mnt/output, INPUT_DIR / OUTPUT_DIR) and the run Succeeds.
func TestWorkspaceTuningPVC(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	in, out := fmt.Sprintf("train-data-%d", seq.Add(1)), fmt.Sprintf("adapters-%d", seq.Add(1))
	spec := tuningSpec()
	spec.Tuning.Input = v1alpha1.WorkspaceDataSource{PVC: in}
	spec.Tuning.Output = v1alpha1.WorkspaceDataDestination{PVC: out}
	w := e.newWorkspace("tune-pvc", nil, spec)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Stalled on the missing claims", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, v1alpha1.ConditionStalled).Reason == "ReferenceNotFound"
	})
	if msg := wsCond(got, v1alpha1.ConditionStalled).Message; !strings.Contains(msg, in) {
		t.Errorf("missing claim: %s", describeWS(got))
	}
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Job exists while its input claim is missing (%v)", err)
	}
	for _, name := range []string{in, out} {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if err := e.c.Create(ctx, pvc); err != nil {
			t.Fatal(err)
		}
	}
	// The claims exist but no volume is bound to them (the local cluster has no provisioner):
	// progress, with the scheduler's own words in status; never Stalled.
	got = e.waitWS(t, w.Name, "waiting for the claims to bind", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, workspace.ConditionResourceReady).Reason == workspace.ReasonWaitingForVolumeBinding
	})
	stalled := e.watchWSStalled(t, w.Name)
	rc := wsCond(got, v1alpha1.ConditionReconciling)
	if got.Status.State != v1alpha1.WorkspaceStatePending || wsCond(got, v1alpha1.ConditionStalled).Status != metav1.ConditionFalse ||
		rc.Status != metav1.ConditionTrue || rc.Reason != workspace.ReasonWaitingForVolumeBinding {
		t.Errorf("claims binding: want Pending, Reconciling=True WaitingForVolumeBinding, Stalled=False\n%s", describeWS(got))
	}
	for _, want := range []string{"pod has unbound immediate PersistentVolumeClaims", e.ns + "/" + in + " (Pending)", e.ns + "/" + out + " (Pending)"} {
		if msg := wsCond(got, workspace.ConditionResourceReady).Message; !strings.Contains(msg, want) {
			t.Errorf("ResourceReady message %q lacks %q", msg, want)
		}
	}
	for _, name := range []string{in, out} {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/gantry-test/" + name}},
			ClaimRef:               &corev1.ObjectReference{Namespace: e.ns, Name: name}}}
		if err := e.c.Create(ctx, pv); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.c.Delete(context.Background(), pv) })
	}
	e.waitWS(t, w.Name, "Succeeded", stateIs(v1alpha1.WorkspaceStateSucceeded))
	if seen := stalled.statuses(); slices.Contains(seen, metav1.ConditionTrue) {
		t.Errorf("Stalled turned True while the claims were binding: %v\nevents:\n%s", seen, e.wsEvents(w.Name))
	}
	var job batchv1.Job
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &job); err != nil {
		t.Fatal(err)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range job.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m
	}
	claims := map[string]string{}
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	if !mounts["/mnt/input"].ReadOnly || mounts["/mnt/output"].Name == "" || mounts["/mnt/output"].ReadOnly || claims["input"] != in || claims["output"] != out {
		t.Errorf("job mounts %v claims %v", mounts, claims)
	}
}

// A tuning run whose pod fails (kwok's chaos label, copied from the Workspace to its pod):
// Failed, Stalled=True, the failure's reason in WorkspaceSucceeded; terminal.
func TestWorkspaceTuningFailed(t *testing.T) {
	e := setup(t)
	t.Parallel()
	w := e.newWorkspace("tune-fail", map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}, tuningSpec())
	rec := e.recordStates(t, w.Name)
	if err := e.c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Failed", stateIs(v1alpha1.WorkspaceStateFailed))
	ws := wsCond(got, workspace.ConditionWorkspaceSucceeded)
	if ws.Status != metav1.ConditionFalse || ws.Reason != workspace.ReasonWorkspaceFailed || !strings.Contains(ws.Message, "BackoffLimitExceeded") {
		t.Errorf("WorkspaceSucceeded = %+v", ws)
	}
	if st := wsCond(got, v1alpha1.ConditionStalled); st.Status != metav1.ConditionTrue {
		t.Errorf("Stalled = %+v", st)
	}
	want := []v1alpha1.WorkspaceState{v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateRunning, v1alpha1.WorkspaceStateFailed}
	if s := rec.until(want[len(want)-1]); !slices.Equal(s, want) {
		t.Errorf("states %v, want %v", s, want)
	}
}

// Multi-node inference (KAITO): a model needing 2 GPUs over 2 replicas of 1 GPU is ONE group,
// not two copies: a StatefulSet whose pods have stable names, GROUP_SIZE, RANK and the
// leader's address, a headless group Service, and the endpoint on the leader. With one of
// the two nodes the group is not Ready (the workspace says why); with both it is.
func TestWorkspaceMultiNode(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	product := fmt.Sprintf("NVIDIA-L4-GROUP-%d", seq.Add(1))
	nodes := []*corev1.Node{testGPUNode(fmt.Sprintf("gantry-test-group-%d", seq.Add(1)), product, 1), testGPUNode(fmt.Sprintf("gantry-test-group-%d", seq.Add(1)), product, 1)}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
		}
	})
	e.addNode(t, nodes[0])
	spec := inferenceSpec(2, 1, product)
	spec.Inference.ModelGPUs = 2
	w := e.newWorkspace("group", nil, spec)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	// One node: pod 0 runs, pod 1 cannot be placed; the group is not Ready and says so.
	got := e.waitWS(t, w.Name, "pod 0 placed, the group not Ready, with a capacity reason", func(w *v1alpha1.Workspace) bool {
		rr := wsCond(w, workspace.ConditionResourceReady)
		return w.Status.State == v1alpha1.WorkspaceStatePending && rr.Status == metav1.ConditionFalse && len(w.Status.WorkerNodes) == 1 &&
			w.Status.ReadyReplicas == 1 && w.Status.GroupSize == 2 && strings.Contains(rr.Message, "room for 1 replica")
	})
	t.Logf("one node: %s", describeWS(got))
	name := "workspace-" + w.Name
	var sts appsv1.StatefulSet
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &sts) == nil, nil
	}); err != nil {
		t.Fatalf("no StatefulSet for a multi-node group: %v", err)
	}
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &dep); !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment exists beside the group: %v", err)
	}
	env := map[string]corev1.EnvVar{}
	for _, v := range sts.Spec.Template.Spec.Containers[0].Env {
		env[v.Name] = v
	}
	leader := fmt.Sprintf("%s-0.%s-group.%s.svc.cluster.local", name, name, e.ns)
	if env["GROUP_SIZE"].Value != "2" || env["LEADER_ADDRESS"].Value != leader || env["RANK"].ValueFrom == nil ||
		env["RANK"].ValueFrom.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
		t.Errorf("group env %+v", env)
	}
	if sts.Spec.ServiceName != name+"-group" || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("statefulset serviceName %q policy %q", sts.Spec.ServiceName, sts.Spec.PodManagementPolicy)
	}
	var gsvc, svc corev1.Service
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name + "-group"}, &gsvc); err != nil || gsvc.Spec.ClusterIP != corev1.ClusterIPNone || !gsvc.Spec.PublishNotReadyAddresses {
		t.Errorf("group service %+v: %v", gsvc.Spec, err)
	}
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &svc); err != nil || svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != name+"-0" {
		t.Errorf("the endpoint Service does not route to the leader: %v %v", svc.Spec.Selector, err)
	}

	// The second node: the whole group runs, Ready.
	e.addNode(t, nodes[1])
	got = e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	if got.Status.ReadyReplicas != 2 || got.Status.LeaderAddress != leader || len(got.Status.WorkerNodes) != 2 {
		t.Errorf("group status: %s leader %q", describeWS(got), got.Status.LeaderAddress)
	}
	var pods corev1.PodList
	if err := e.c.List(ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels{workspace.LabelWorkspace: w.Name}); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{name + "-0", name + "-1"}) {
		t.Errorf("group pods %v, want stable names %s-0 and %s-1", names, name, name)
	}

	// Back to independent copies (modelGPUs = 1): the group goes, a Deployment takes over.
	e.updateWorkspace(t, w.Name, func(w *v1alpha1.Workspace) { w.Spec.Inference.ModelGPUs = 1 })
	e.waitGone(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}})
	got = e.waitWS(t, w.Name, "Ready as copies", func(w *v1alpha1.Workspace) bool {
		return w.Status.State == v1alpha1.WorkspaceStateReady && w.Status.GroupSize == 0 && w.Status.ObservedGeneration == w.Generation
	})
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &dep); err != nil {
		t.Errorf("no Deployment after leaving the group: %v", err)
	}
	if err := e.c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: e.ns}})
}

// A fixed-count workspace of 4 replicas rolling a new pod template out (the Deployment's
// default strategy lets 25% of 4, one pod, be unavailable): NotReady while the rollout runs,
// then Ready once, and it stays Ready. It used to be Ready while one old pod was left and a
// new one not Ready yet, then NotReady a moment later when the old pod went (WorkloadFacts).
func TestWorkspaceRolloutOfFourStaysReady(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	product := fmt.Sprintf("NVIDIA-L4-ROLL-%d", seq.Add(1))
	n := testGPUNode(fmt.Sprintf("gantry-test-roll-%d", seq.Add(1)), product, 8)
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
	})
	e.addNode(t, n)
	w := e.newWorkspace("roll4", nil, inferenceSpec(4, 1, product))
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	rec := e.recordStates(t, w.Name)
	e.updateWorkspace(t, w.Name, func(w *v1alpha1.Workspace) { w.Spec.Inference.Args = []string{"--max-model-len=4096"} })
	e.waitWS(t, w.Name, "Ready at the new generation", func(w *v1alpha1.Workspace) bool {
		return w.Status.State == v1alpha1.WorkspaceStateReady && w.Status.ObservedGeneration == w.Generation && w.Status.ReadyReplicas == 4
	})
	time.Sleep(5 * time.Second) // the Deployment controller and the kubelets finish what they do
	want := []v1alpha1.WorkspaceState{v1alpha1.WorkspaceStateReady, v1alpha1.WorkspaceStateNotReady, v1alpha1.WorkspaceStateReady}
	if s := rec.seen(); !slices.Equal(s, want) {
		t.Errorf("states through the rollout %v, want %v", s, want)
	}
	dep := e.deployment(t, w.Name)
	if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--max-model-len=4096") || dep.Status.UpdatedReplicas != 4 || dep.Status.Replicas != 4 {
		t.Errorf("deployment args %q status %+v", args, dep.Status)
	}
}

// KAITO's Ray cluster on a multi-node group of its vLLM runtime (a preset over two one-GPU
// replicas): the StatefulSet's pods run KAITO's command (pod 0 starts the Ray head for 2
// pods on 6379 and then serves with the args and --distributed-executor-backend=ray, the
// others join the head at the leader address the status shows), get POD_INDEX and KAITO's
// multi-node health check as startup, readiness and liveness probes, and the endpoint Service
// has the ray and dashboard ports; the group goes Ready. A command of the user's own replaces
// all of it (KAITO's inference.template): the pods run it, without the Ray probes and ports.
func TestWorkspaceMultiNodeRay(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	product := fmt.Sprintf("NVIDIA-L4-RAY-%d", seq.Add(1))
	for i := 0; i < 2; i++ {
		n := testGPUNode(fmt.Sprintf("gantry-test-ray-%d", seq.Add(1)), product, 1)
		t.Cleanup(func() {
			_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
		})
		e.addNode(t, n)
	}
	spec := v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 2, GPUCount: 1, GPUProduct: product},
		Inference: &v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct", Image: modelImage}}
	w := e.newWorkspace("ray", nil, spec)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	name := "workspace-" + w.Name
	leader := fmt.Sprintf("%s-0.%s-group.%s.svc.cluster.local", name, name, e.ns)
	if got.Status.GroupSize != 2 || got.Status.LeaderAddress != leader {
		t.Errorf("group status: %s leader %q", describeWS(got), got.Status.LeaderAddress)
	}
	var sts appsv1.StatefulSet
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &sts); err != nil {
		t.Fatal(err)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	wantCmd := []string{"/bin/sh", "-c", `if [ "${POD_INDEX}" = "0" ]; then /workspace/vllm/multi-node-serving.sh leader --ray_cluster_size=2 --ray_port=6379; ` +
		`exec python3 /workspace/vllm/inference_api.py "$@"; else exec /workspace/vllm/multi-node-serving.sh worker --ray_address=` + leader + ` --ray_port=6379; fi`, "sh"}
	if !slices.Equal(c.Command, wantCmd) {
		t.Errorf("command\n got %q\nwant %q", c.Command, wantCmd)
	}
	if args := strings.Join(c.Args, " "); !strings.Contains(args, "--pipeline-parallel-size=2") || !strings.HasSuffix(args, "--distributed-executor-backend=ray") {
		t.Errorf("args %q", c.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, v := range c.Env {
		env[v.Name] = v
	}
	if v := env["POD_INDEX"]; v.ValueFrom == nil || v.ValueFrom.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
		t.Errorf("POD_INDEX %+v", v)
	}
	check := "python3 /workspace/vllm/multi-node-health-check.py "
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		cmd   string
	}{
		{"startup", c.StartupProbe, check + "readiness --leader-address=" + leader + " --vllm-port=8000"},
		{"readiness", c.ReadinessProbe, check + "readiness --leader-address=" + leader + " --vllm-port=8000"},
		{"liveness", c.LivenessProbe, check + "liveness --leader-address=" + leader + " --ray-port=6379"},
	} {
		if p.probe == nil || p.probe.Exec == nil || !slices.Equal(p.probe.Exec.Command, []string{"/bin/sh", "-c", p.cmd}) {
			t.Errorf("%s probe %+v, want exec %q", p.what, p.probe, p.cmd)
		}
	}
	if c.StartupProbe != nil && c.StartupProbe.FailureThreshold != 180 || c.LivenessProbe != nil && (c.LivenessProbe.InitialDelaySeconds != 60 || c.LivenessProbe.TerminationGracePeriodSeconds == nil) {
		t.Errorf("startup %+v liveness %+v: KAITO's 30 minutes to start, liveness after 60 s with a 1 s grace", c.StartupProbe, c.LivenessProbe)
	}
	svcPorts := func() []string {
		var svc corev1.Service
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &svc); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range svc.Spec.Ports {
			out = append(out, fmt.Sprintf("%s:%d", p.Name, p.Port))
		}
		return out
	}
	if ports := svcPorts(); !slices.Equal(ports, []string{"http:8000", "ray:6379", "dashboard:8265"}) {
		t.Errorf("endpoint Service ports %v", ports)
	}

	// A command of the user's own: no Ray.
	e.updateWorkspace(t, w.Name, func(w *v1alpha1.Workspace) { w.Spec.Inference.Command = []string{"/model-server"} })
	e.waitWS(t, w.Name, "Ready on the user's command", func(w *v1alpha1.Workspace) bool {
		return w.Status.State == v1alpha1.WorkspaceStateReady && w.Status.ObservedGeneration == w.Generation
	})
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &sts); err != nil {
		t.Fatal(err)
	}
	c = sts.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"/model-server"}) || c.StartupProbe != nil || c.LivenessProbe != nil || slices.Contains(c.Args, "--distributed-executor-backend=ray") {
		t.Errorf("user command: %q args %q startup %v liveness %v", c.Command, c.Args, c.StartupProbe, c.LivenessProbe)
	}
	if ports := svcPorts(); !slices.Equal(ports, []string{"http:8000"}) {
		t.Errorf("endpoint Service ports without Ray %v", ports)
	}
	if err := e.c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: e.ns}})
}

// KAITO's inference config: a preset workspace's ConfigMap must have inference_config.yaml.
// Without the key the workspace is Stalled (ReferenceNotFound) naming it; once the key is there
// it goes Ready and the model server gets --kaito-config-file=/mnt/config/inference_config.yaml
// and, from KAITO's kaito.sh/performance-mode annotation, --performance-mode=throughput.
func TestWorkspaceInferenceConfigKey(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("infcfg-%d", seq.Add(1)), Namespace: e.ns}, Data: map[string]string{"other.yaml": "x: 1\n"}}
	if err := e.c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	spec := inferenceSpec(1, 0, a100)
	spec.Inference = &v1alpha1.WorkspaceInference{Preset: "phi-2", Config: cm.Name}
	w := e.newWorkspace("infcfg", nil, spec)
	w.Annotations = map[string]string{workspace.AnnotationPerformanceMode: "throughput"}
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Stalled on the missing key", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, v1alpha1.ConditionStalled).Reason == "ReferenceNotFound"
	})
	if st := wsCond(got, v1alpha1.ConditionStalled); !strings.Contains(st.Message, "has no key inference_config.yaml") {
		t.Errorf("missing key: %s", describeWS(got))
	}
	cm.Data["inference_config.yaml"] = "vllm:\n  max-model-len: 4096\n"
	if err := e.c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	got = e.waitWS(t, w.Name, "Ready with the key", stateIs(v1alpha1.WorkspaceStateReady))
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &dep); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.HasSuffix(args, "--kaito-config-file=/mnt/config/inference_config.yaml --performance-mode=throughput") {
		t.Errorf("args %s", args)
	}
	_ = e.c.Delete(ctx, got)
}

// updateWorkspace applies mod to the latest copy of workspace name and updates it, again on a
// conflict (the reconciler writes the status meanwhile).
func (e *testEnv) updateWorkspace(t *testing.T, name string, mod func(*v1alpha1.Workspace)) {
	t.Helper()
	updateLatest(t, e, types.NamespacedName{Namespace: e.ns, Name: name}, "workspace", mod)
}

// A change of labels alone (metadata.generation stays) reaches the pods through a rollout; the
// gantry.dev/reconcileRequestedAt handshake tells a waiting client when the status is about
// the new labels: the first status that answers the token is computed before the rollout (not
// Ready), and once it answers and says Ready, the Deployment's pods carry the new label.
func TestWorkspaceLabelsChangeHandshake(t *testing.T) {
	e := setup(t)
	t.Parallel()
	w := e.newWorkspace("labels", nil, inferenceSpec(1, 1, a100))
	if err := e.c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	ready := e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	if ready.Status.LastHandledReconcileAt != "" {
		t.Fatalf("lastHandledReconcileAt %q without the annotation", ready.Status.LastHandledReconcileAt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout) // ends the watch
	defer cancel()
	watch, err := e.c.Watch(ctx, &v1alpha1.WorkspaceList{}, client.InNamespace(e.ns), client.MatchingFields{"metadata.name": w.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	const token = "2026-11-28T00:00:00.000000001Z"
	generation := ready.Generation
	e.updateWorkspace(t, w.Name, func(w *v1alpha1.Workspace) {
		w.Labels = map[string]string{"team.example.com/owner": "models"}
		w.Annotations = map[string]string{v1alpha1.AnnotationReconcileRequestedAt: token}
	})
	var first *v1alpha1.Workspace
	for ev := range watch.ResultChan() {
		if ws, ok := ev.Object.(*v1alpha1.Workspace); ok && ws.Status.LastHandledReconcileAt == token {
			first = ws
			break
		}
	}
	if first == nil {
		t.Fatalf("no status answered the token within %s (the watch ended)", waitTimeout)
	}
	if first.Generation != generation {
		t.Fatalf("a change of labels bumped the generation %d → %d: the handshake would not be needed", generation, first.Generation)
	}
	if first.Status.State == v1alpha1.WorkspaceStateReady {
		t.Fatalf("the first status answering the token is Ready, computed before the labels reached the pods: %s", describeWS(first))
	}
	e.waitWS(t, w.Name, "Ready answering the token", func(w *v1alpha1.Workspace) bool {
		return stateIs(v1alpha1.WorkspaceStateReady)(w) && w.Status.LastHandledReconcileAt == token
	})
	var dep appsv1.Deployment
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Template.Labels["team.example.com/owner"] != "models" || dep.Status.UpdatedReplicas != 1 {
		t.Errorf("Ready answering the token, but the Deployment's template labels are %v, updatedReplicas %d", dep.Spec.Template.Labels, dep.Status.UpdatedReplicas)
	}
}
