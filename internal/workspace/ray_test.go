package workspace

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// rayWorkspace is falcon-40b-instruct (2 GPUs) over two one-GPU replicas, edited by edit,
// resolved.
func rayWorkspace(t *testing.T, edit func(*v1alpha1.WorkspaceInference)) *v1alpha1.Workspace {
	t.Helper()
	in := v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}
	if edit != nil {
		edit(&in)
	}
	w := &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "ns"},
		Spec: v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 2, GPUCount: 1}, Inference: &in}}
	rw, err := Resolve(w)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

// KAITO's multi-node vLLM group (buildMultiNodeRayCommand, SetDistributedInferenceProbe,
// GenerateServiceManifest): pod 0 starts the Ray head for the group and serves with the
// args, the others join the head at the leader's address; --distributed-executor-backend=ray;
// POD_INDEX; the health check's startup, readiness and liveness probes against the leader;
// the endpoint Service has KAITO's ray and dashboard ports.
func TestRayGroup(t *testing.T) {
	rw := rayWorkspace(t, nil)
	if !RayGroup(rw) {
		t.Fatal("a preset group is not a Ray group")
	}
	ss, err := DesiredStatefulSet(rw)
	if err != nil {
		t.Fatal(err)
	}
	c := ss.Spec.Template.Spec.Containers[0]
	leader := "workspace-big-0.workspace-big-group.ns.svc.cluster.local"
	wantCmd := []string{"/bin/sh", "-c", `if [ "${POD_INDEX}" = "0" ]; then /workspace/vllm/multi-node-serving.sh leader --ray_cluster_size=2 --ray_port=6379; ` +
		`exec python3 /workspace/vllm/inference_api.py "$@"; else exec /workspace/vllm/multi-node-serving.sh worker --ray_address=` + leader + ` --ray_port=6379; fi`, "sh"}
	if !slices.Equal(c.Command, wantCmd) {
		t.Errorf("command\n got %q\nwant %q", c.Command, wantCmd)
	}
	wantArgs := []string{"--served-model-name=falcon-40b-instruct", "--port=$(PORT)", "--tensor-parallel-size=1", "--pipeline-parallel-size=2", "--distributed-executor-backend=ray"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q, want %q", c.Args, wantArgs)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["POD_INDEX"]; e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
		t.Errorf("POD_INDEX %+v", e)
	}
	check := "python3 /workspace/vllm/multi-node-health-check.py "
	for _, p := range []struct {
		name                    string
		probe                   *corev1.Probe
		cmd                     string
		delay, period, timeout  int32
		failures                int32
		terminationGraceSeconds int64
	}{
		{"startup", c.StartupProbe, check + "readiness --leader-address=" + leader + " --vllm-port=8000", 0, 10, 1, 180, 0},
		{"readiness", c.ReadinessProbe, check + "readiness --leader-address=" + leader + " --vllm-port=8000", 0, 10, 1, 1, 0},
		{"liveness", c.LivenessProbe, check + "liveness --leader-address=" + leader + " --ray-port=6379", 60, 10, 5, 1, 1},
	} {
		pr := p.probe
		if pr == nil || pr.Exec == nil || !slices.Equal(pr.Exec.Command, []string{"/bin/sh", "-c", p.cmd}) ||
			pr.InitialDelaySeconds != p.delay || pr.PeriodSeconds != p.period || pr.TimeoutSeconds != p.timeout || pr.FailureThreshold != p.failures {
			t.Errorf("%s probe %+v, want exec %q delay %d period %d timeout %d failures %d", p.name, pr, p.cmd, p.delay, p.period, p.timeout, p.failures)
			continue
		}
		if got := pr.TerminationGracePeriodSeconds; (got == nil) != (p.terminationGraceSeconds == 0) || got != nil && *got != p.terminationGraceSeconds {
			t.Errorf("%s probe terminationGracePeriodSeconds %v", p.name, got)
		}
	}
	var ports []string
	for _, sp := range DesiredService(rw).Spec.Ports {
		ports = append(ports, sp.Name+":"+sp.TargetPort.String())
	}
	if want := []string{"http:http", "ray:6379", "dashboard:8265"}; !slices.Equal(ports, want) {
		t.Errorf("endpoint Service ports %v, want %v", ports, want)
	}
}

// What the user writes wins, as in KAITO: a command of their own (KAITO's inference.template)
// is no Ray group; their --distributed-executor-backend stays the only one; their readiness
// probe replaces the startup and readiness probes, their liveness probe the liveness one; a
// custom image without a preset is no Ray group; one replica is no group at all; a Ray port
// as the inference port is refused.
func TestRayGroupUserOverrides(t *testing.T) {
	own := rayWorkspace(t, func(in *v1alpha1.WorkspaceInference) { in.Command = []string{"/my-server"} })
	if RayGroup(own) {
		t.Error("a group with its own command runs Ray")
	}
	ss, err := DesiredStatefulSet(own)
	if err != nil {
		t.Fatal(err)
	}
	if c := ss.Spec.Template.Spec.Containers[0]; !slices.Equal(c.Command, []string{"/my-server"}) || c.StartupProbe != nil ||
		slices.Contains(c.Args, "--distributed-executor-backend=ray") || len(DesiredService(own).Spec.Ports) != 1 {
		t.Errorf("own command: %q args %q startup %v", c.Command, c.Args, c.StartupProbe)
	}

	mp := rayWorkspace(t, func(in *v1alpha1.WorkspaceInference) {
		in.Args = []string{"--port=$(PORT)", "--distributed-executor-backend=mp"}
	})
	ss, err = DesiredStatefulSet(mp)
	if err != nil {
		t.Fatal(err)
	}
	if args := ss.Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--distributed-executor-backend=ray") {
		t.Errorf("the user's backend is doubled: %q", args)
	}

	liveness := rayWorkspace(t, func(in *v1alpha1.WorkspaceInference) {
		in.LivenessProbe = &v1alpha1.WorkspaceProbe{HTTPPath: "/alive"}
	})
	ss, err = DesiredStatefulSet(liveness)
	if err != nil {
		t.Fatal(err)
	}
	c := ss.Spec.Template.Spec.Containers[0]
	// The startup probe stays: it holds the user's liveness probe back while the group comes up.
	if c.StartupProbe == nil || c.ReadinessProbe.Exec == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/alive" {
		t.Errorf("user liveness probe: startup %v readiness %+v liveness %+v", c.StartupProbe, c.ReadinessProbe, c.LivenessProbe)
	}
	if !strings.Contains(strings.Join(c.Command, " "), "multi-node-serving.sh") {
		t.Errorf("a user liveness probe dropped the Ray command: %q", c.Command)
	}
	ready := &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "ns"}, Spec: v1alpha1.WorkspaceSpec{
		Resource:  v1alpha1.WorkspaceResource{Count: 2, GPUCount: 1},
		Inference: &v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct", ReadinessProbe: &v1alpha1.WorkspaceProbe{HTTPPath: "/ready"}}}}
	if _, err := Resolve(ready); err == nil || !strings.HasPrefix(err.Error(), "spec.inference.readinessProbe: ") {
		t.Errorf("a readiness probe of the user's own on a Ray group (the workers serve nothing): %v", err)
	}

	custom := &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1alpha1.WorkspaceSpec{
		Resource: v1alpha1.WorkspaceResource{Count: 2, GPUCount: 1}, Inference: &v1alpha1.WorkspaceInference{Model: "m", Image: "i", ModelGPUs: 2}}}
	rc, err := Resolve(custom)
	if err != nil {
		t.Fatal(err)
	}
	if !MultiNode(rc) || RayGroup(rc) {
		t.Errorf("custom image group: multi-node %v, Ray %v", MultiNode(rc), RayGroup(rc))
	}

	one := rayWorkspace(t, nil)
	one.Spec.Resource.Count = 1
	if RayGroup(one) {
		t.Error("one replica is a Ray group")
	}

	port := rayWorkspace(t, nil)
	port.Spec.Inference.Port = RayPort
	if _, err := Resolve(port); err == nil || !strings.Contains(err.Error(), "spec.inference.port: 6379") {
		t.Errorf("inference port 6379 in a Ray group: %v", err)
	}
	port.Spec.Resource.Count = 1
	port.Spec.Inference.ModelGPUs = 0
	port.Spec.Inference.Args = nil
	port.Spec.Resource.GPUCount = 2
	if _, err := Resolve(port); err != nil {
		t.Errorf("inference port 6379 without a group: %v", err)
	}
}
