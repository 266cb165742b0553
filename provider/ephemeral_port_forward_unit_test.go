package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// podWith is a pod in namespace ns labelled gantry.dev/performer=perf, Running and Ready
// unless edit changes it.
func podWith(name string, edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"gantry.dev/performer": "perf"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "performer",
			Ports: []corev1.ContainerPort{{Name: "grpc", ContainerPort: 9090}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "performer", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	if edit != nil {
		edit(p)
	}
	return p
}

func notReadyCond(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions[1] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reason, Message: msg}
	}
}

// podNotReady names what the pod's status says: each row a pod state a user meets.
func TestPodNotReady(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string // substrings; none: Ready
	}{
		{"ready", podWith("p", nil), nil},
		{"terminating", podWith("p", func(p *corev1.Pod) { p.DeletionTimestamp = &now }), []string{"terminating"}},
		{"unschedulable", podWith("p", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.ContainerStatuses = corev1.PodPending, nil
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: "0/8 nodes are available: 3 Insufficient nvidia.com/gpu."}}
		}), []string{"phase Pending", "not scheduled (Unschedulable): 0/8 nodes are available: 3 Insufficient nvidia.com/gpu."}},
		{"image pull", podWith("p", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			notReadyCond("ContainersNotReady", "containers with unready status: [performer]")(p)
			p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "performer", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ErrImageNeverPull", Message: `Container image "x:1" is not present with pull policy of Never`}}}
		}), []string{"phase Pending", `container performer waiting (ErrImageNeverPull): Container image "x:1" is not present`,
			"Ready=False (ContainersNotReady): containers with unready status: [performer]"}},
		{"crash loop", podWith("p", func(p *corev1.Pod) {
			notReadyCond("ContainersNotReady", "")(p)
			p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "performer", RestartCount: 3,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}
		}), []string{"container performer waiting (CrashLoopBackOff): back-off 40s, last terminated (Error, exit code 1)"}},
		{"readiness probe", podWith("p", func(p *corev1.Pod) {
			notReadyCond("ContainersNotReady", "containers with unready status: [performer]")(p)
			p.Status.ContainerStatuses[0].Ready = false
		}), []string{"container performer running, not ready (its readiness probe has not passed)"}},
		{"failed", podWith("p", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
			notReadyCond("PodFailed", "")(p)
			p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "performer", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}
		}), []string{"phase Failed (Evicted): The node was low on resource: memory.", "container performer terminated (OOMKilled, exit code 137)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podNotReady(tc.pod)
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("podNotReady = %q, want Ready", got)
			}
			if len(tc.want) > 0 && got == "" {
				t.Fatalf("podNotReady = Ready, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("podNotReady = %q\nwant it to contain %q", got, w)
				}
			}
		})
	}
}

func TestReadyPodAndPort(t *testing.T) {
	pods := []corev1.Pod{*podWith("a", notReadyCond("ContainersNotReady", "")), *podWith("b", nil), *podWith("c", nil)}
	if p, _ := readyPod(pods, ""); p == nil || p.Name != "b" {
		t.Errorf("readyPod = %v, want b (the first Ready by name)", p)
	}
	if p, _ := readyPod(pods, "c"); p == nil || p.Name != "c" {
		t.Errorf("readyPod(want c) = %v, want c", p)
	}
	if p, why := readyPod(pods, "a"); p != nil || len(why) != 1 || why[0].pod != "a" {
		t.Errorf("readyPod(want a) = %v, %v; want none, a not ready", p, why)
	}
	for _, tc := range []struct {
		port intstr.IntOrString
		want int32
		err  string
	}{
		{intstr.FromString("grpc"), 9090, ""},
		{intstr.FromInt32(8080), 8080, ""},
		{intstr.FromString("http"), 0, `pod b has no container port named "http"`},
	} {
		got, err := podPort(&pods[1], tc.port)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("podPort(%v) = %d, %v; want %d, %q", tc.port, got, err, tc.want, tc.err)
		}
	}
}

func performerObject(phase string, conds ...map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer",
		"metadata": map[string]interface{}{"name": "perf", "namespace": "ns"},
		"spec":     map[string]interface{}{"image": "x:1"},
		"status":   map[string]interface{}{"phase": phase},
	}}
	if len(conds) > 0 {
		list := make([]interface{}, len(conds))
		for i, c := range conds {
			list[i] = c
		}
		_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
	}
	return u
}

func performerService() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "performer-perf", Namespace: "ns"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"gantry.dev/performer": "perf"},
			Ports: []corev1.ServicePort{{Name: "grpc", Port: 9090, TargetPort: intstr.FromString("grpc")}}}}
}

func fakeClients(dyn []runtime.Object, core ...runtime.Object) *kube.Clients {
	return &kube.Clients{Core: kubefake.NewSimpleClientset(core...), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), dyn...)}
}

// A performer resolves through its Service to a Ready pod and the Service's named target port;
// without a Ready pod the error names the performer, its phase and failing condition, each pod
// and why it is not Ready, and its newest Warning event; a performer that does not exist is
// an absent target (deferred when the client can defer).
func TestPortForwardTargets(t *testing.T) {
	ctx := context.Background()
	target := pfTarget{kind: "Performer", name: "perf", namespace: "ns"}

	c := fakeClients([]runtime.Object{performerObject("Running")}, performerService(), podWith("performer-perf", nil))
	ep, err := resolveTarget(ctx, c, target)
	if err != nil {
		t.Fatal(err)
	}
	p, port, err := pickPod(ctx, c.Core, target, ep)
	if err != nil || p.Name != "performer-perf" || port != 9090 {
		t.Fatalf("pickPod = %v, %d, %v; want performer-perf, 9090", p, port, err)
	}
	withPort := target
	withPort.port = 9443
	if ep, _ := resolveTarget(ctx, c, withPort); ep.port != intstr.FromInt32(9443) {
		t.Errorf("remote_port: port %v, want 9443", ep.port)
	}

	failing := performerObject("Failed", map[string]interface{}{"type": "Ready", "status": "False", "reason": "ImagePullBackOff",
		"message": `Back-off pulling image "x:1"`, "lastTransitionTime": "2026-01-01T00:00:00Z"})
	pull := podWith("performer-perf", func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		notReadyCond("ContainersNotReady", "containers with unready status: [performer]")(p)
		p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "performer", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: `Back-off pulling image "x:1"`}}}
	})
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"}, Type: corev1.EventTypeWarning, Reason: "Failed",
		Message: `Failed to pull image "x:1": not found`, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "performer-perf", Namespace: "ns"}}
	c = fakeClients([]runtime.Object{failing}, performerService(), pull, ev)
	ep, err = resolveTarget(ctx, c, target)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = pickPod(ctx, c.Core, target, ep)
	var pe *pfError
	if !errors.As(err, &pe) || pe.summary != "No Ready Pod To Forward To" {
		t.Fatalf("pickPod error = %v, want No Ready Pod To Forward To", err)
	}
	for _, w := range []string{
		"Performer ns/perf has no Ready pod to forward to (phase Failed; Ready=False (ImagePullBackOff): Back-off pulling image \"x:1\")",
		"- performer-perf: phase Pending; container performer waiting (ImagePullBackOff)",
		"last warning: Failed: Failed to pull image \"x:1\": not found",
	} {
		if !strings.Contains(pe.detail, w) {
			t.Errorf("detail:\n%s\nwant it to contain %q", pe.detail, w)
		}
	}

	pinned := target
	pinned.pod = "performer-other"
	c = fakeClients([]runtime.Object{performerObject("Running")}, performerService(), podWith("performer-perf", nil))
	ep, _ = resolveTarget(ctx, c, pinned)
	if _, _, err := pickPod(ctx, c.Core, pinned, ep); err == nil || !strings.Contains(err.Error(), `pod_name "performer-other" is not one of its pods`) {
		t.Errorf("pinned to a pod that is not the target's: %v", err)
	}

	c = fakeClients(nil)
	_, err = resolveTarget(ctx, c, target)
	if !errors.As(err, &pe) || !pe.absent || !strings.Contains(pe.detail, "The cluster has no Performer ns/perf") {
		t.Errorf("absent performer: %v", err)
	}
	_, err = resolveTarget(ctx, fakeClients([]runtime.Object{performerObject("Pending")}), target)
	if !errors.As(err, &pe) || pe.absent || !strings.Contains(pe.detail, "Performer ns/perf has no Service performer-perf yet (phase Pending)") {
		t.Errorf("performer without Service: %v", err)
	}

	sel := pfTarget{namespace: "ns", labels: map[string]string{"app": "x"}, port: 80}
	ep, _ = resolveTarget(ctx, c, sel)
	if _, _, err := pickPod(ctx, c.Core, sel, ep); err == nil || !strings.Contains(err.Error(),
		"the pods matching app=x in namespace ns has no Ready pod to forward to: no pod matches the selector app=x in namespace ns.") {
		t.Errorf("pod_selector matching nothing: %v", err)
	}
}

// portForwardSchemaType is gantry_port_forward's schema type as the provider serves it.
func portForwardSchemaType(t *testing.T, srv tfprotov6.ProviderServer) tftypes.Object {
	t.Helper()
	sch, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || diagsHaveError(sch.Diagnostics) {
		t.Fatalf("GetProviderSchema: %v %v", err, sch.Diagnostics)
	}
	s, ok := sch.EphemeralResourceSchemas["gantry_port_forward"]
	if !ok {
		t.Fatal("the provider serves no gantry_port_forward ephemeral resource")
	}
	return s.ValueType().(tftypes.Object) //nolint:forcetypeassert // a schema's type is an object
}

// Configuration mistakes fail at validation (plan), naming the attribute.
func TestPortForwardValidation(t *testing.T) {
	srv := Server("test")
	typ := portForwardSchemaType(t, srv)
	obj := func(attr string, v map[string]tftypes.Value) tftypes.Value {
		return objectOf(typ.AttributeTypes[attr], v)
	}
	perf := obj("performer", map[string]tftypes.Value{"name": tstr("perf")})
	sel := obj("pod_selector", map[string]tftypes.Value{"match_labels": stringMap(map[string]tftypes.Value{"app": tstr("x")})})
	port := tftypes.NewValue(tftypes.Number, 8080)
	for _, tc := range []struct {
		name string
		cfg  map[string]tftypes.Value
		want string // "" valid
	}{
		{"performer", map[string]tftypes.Value{"performer": perf}, ""},
		{"pod selector with port", map[string]tftypes.Value{"pod_selector": sel, "remote_port": port, "check_path": tstr("/healthz?x=1")}, ""},
		{"no target", map[string]tftypes.Value{}, "Missing Attribute Configuration: Exactly one of these attributes must be configured: [performer,workspace,pod_selector]"},
		{"two targets", map[string]tftypes.Value{"performer": perf, "pod_selector": sel, "remote_port": port}, "Invalid Attribute Combination: Exactly one of these attributes must be configured: [performer,workspace,pod_selector]"},
		{"pod selector without port", map[string]tftypes.Value{"pod_selector": sel}, `Attribute "remote_port" must be specified when "pod_selector" is specified`},
		{"bad local port", map[string]tftypes.Value{"performer": perf, "local_port": tftypes.NewValue(tftypes.Number, 70000)}, "local_port value must be between 1 and 65535"},
		{"check path", map[string]tftypes.Value{"performer": perf, "check_path": tstr("healthz")}, `"healthz" must start with a single /`},
		{"check url", map[string]tftypes.Value{"performer": perf, "check_path": tstr("//evil.example/x")}, "must start with a single /"},
		{"bad label", map[string]tftypes.Value{"remote_port": port, "pod_selector": obj("pod_selector", map[string]tftypes.Value{
			"match_labels": stringMap(map[string]tftypes.Value{"app": tstr("not valid!")})})}, "is not a valid label value"},
		{"bad namespace", map[string]tftypes.Value{"performer": obj("performer", map[string]tftypes.Value{"name": tstr("perf"), "namespace": tstr("Not_A_Namespace")})}, "must be a DNS-1123 label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := srv.ValidateEphemeralResourceConfig(context.Background(), &tfprotov6.ValidateEphemeralResourceConfigRequest{
				TypeName: "gantry_port_forward", Config: dynValue(t, typ, objectOf(typ, tc.cfg))})
			if err != nil {
				t.Fatal(err)
			}
			got := diagsString(resp.Diagnostics)
			if tc.want == "" && diagsHaveError(resp.Diagnostics) {
				t.Fatalf("want valid, got %s", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("diagnostics:\n%s\nwant one containing %q", got, tc.want)
			}
		})
	}
}

// Close of a forward this process does not have (an Open that failed, a restarted provider)
// does nothing.
func TestPortForwardCloseUnknown(t *testing.T) {
	srv := Server("test")
	resp, err := srv.CloseEphemeralResource(context.Background(), &tfprotov6.CloseEphemeralResourceRequest{
		TypeName: "gantry_port_forward", Private: []byte(`{"port_forward":"eyJpZCI6Im5vbmUifQ=="}`)})
	if err != nil || diagsHaveError(resp.Diagnostics) {
		t.Fatalf("Close: %v %s", err, diagsString(resp.Diagnostics))
	}
}
