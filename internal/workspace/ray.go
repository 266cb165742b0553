package workspace

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// KAITO's Ray cluster of a multi-node vLLM group (KAITO pkg/model buildMultiNodeRayCommand,
// pkg/workspace/inference SetDistributedInferenceProbe, pkg/workspace/manifests
// GenerateServiceManifest; the scripts ship in KAITO's vLLM image under /workspace/vllm).
const (
	// RayPort is the Ray head's GCS port the workers join (KAITO's PortRayCluster).
	RayPort = 6379
	// RayDashboardPort is the Ray dashboard's port on the endpoint Service (KAITO's 8265).
	RayDashboardPort = 8265
	// RayPortName and RayDashboardPortName name the two Ray ports of the endpoint Service.
	RayPortName          = "ray"
	RayDashboardPortName = "dashboard"
	// EnvPodIndex is KAITO's name for a group pod's index (the pod-index label): 0 is the
	// leader. KAITO's command and health check branch on it; RANK holds the same value.
	EnvPodIndex = "POD_INDEX"
	// VLLMServerCommand is KAITO's vLLM server (DefaultVLLMCommand): the leader runs it with
	// the container's arguments once the Ray head is up.
	VLLMServerCommand = "python3 /workspace/vllm/inference_api.py"
	// RayLeaderCommand and RayWorkerCommand are vLLM's multi-node-serving.sh as KAITO's image
	// ships it (DefaultVLLMRayLeaderBaseCommand, DefaultVLLMRayWorkerBaseCommand): the leader
	// starts the Ray head and waits until the whole group has joined; a worker joins the
	// head and blocks.
	RayLeaderCommand = "/workspace/vllm/multi-node-serving.sh leader"
	RayWorkerCommand = "/workspace/vllm/multi-node-serving.sh worker"
	// RayHealthCheckCommand is KAITO's multi-node health check
	// (DefaultVLLMMultiNodeHealthCheckCommand): "liveness" asks the Ray head for dead actors
	// of the vLLM job (on the leader; workers pass), "readiness" GETs the leader's /health
	// (workers pass).
	RayHealthCheckCommand = "python3 /workspace/vllm/multi-node-health-check.py"
	// RayStartupTimeoutSeconds is how long the startup probe lets a group come up (KAITO's
	// defaultStartupProbeTimeout, 30 minutes), checked every 10 s.
	RayStartupTimeoutSeconds = 30 * 60
)

// RayGroup reports whether a resolved workspace's multi-node group (MultiNode) runs KAITO's
// Ray cluster: the model is served on KAITO's vLLM runtime (a preset, or a Hugging Face model
// on the base image: AnyModel) and spec.inference.command is empty. A group with a command
// of its own (a custom image, as KAITO's inference.template) runs that command on every pod
// and gets no Ray command, probes or ports: it only has the group's environment.
func RayGroup(w *v1alpha1.Workspace) bool {
	in := w.Spec.Inference
	return MultiNode(w) && (in.Preset != "" || AnyModel(w)) && len(in.Command) == 0
}

// RayCommand is the container command of a Ray group's pods (RayGroup), KAITO's
// buildMultiNodeRayCommand as one shell line: pod 0 (POD_INDEX) starts the Ray head for
// count pods on RayPort, then serves with the container's arguments ("$@": the args stay the
// container's args, so the kubelet still expands $(PORT)); every other pod joins the head at
// LeaderAddress and blocks. Each branch execs its last command, so SIGTERM reaches it.
//
//	["/bin/sh", "-c", "if [ \"${POD_INDEX}\" = \"0\" ]; then /workspace/vllm/multi-node-serving.sh leader --ray_cluster_size=2 --ray_port=6379; exec python3 /workspace/vllm/inference_api.py \"$@\"; else exec /workspace/vllm/multi-node-serving.sh worker --ray_address=<leader> --ray_port=6379; fi", "sh"]
func RayCommand(w *v1alpha1.Workspace) []string {
	leader := fmt.Sprintf("%s --ray_cluster_size=%d --ray_port=%d", RayLeaderCommand, Replicas(w), RayPort)
	worker := fmt.Sprintf("%s --ray_address=%s --ray_port=%d", RayWorkerCommand, LeaderAddress(w), RayPort)
	script := fmt.Sprintf(`if [ "${%s}" = "0" ]; then %s; exec %s "$@"; else exec %s; fi`, EnvPodIndex, leader, VLLMServerCommand, worker)
	return []string{"/bin/sh", "-c", script, "sh"}
}

// RayArgs are the vLLM arguments a Ray group adds after the others: vLLM's
// --distributed-executor-backend=ray (KAITO sets it for pipeline parallelism across nodes
// since vLLM 0.12), unless args already pass the flag (the user's choice wins, as a value in
// KAITO's inference config does). None outside a Ray group.
func RayArgs(w *v1alpha1.Workspace, args []string) []string {
	const flag = "--distributed-executor-backend"
	if !RayGroup(w) || slices.ContainsFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") }) {
		return nil
	}
	return []string{flag + "=ray"}
}

// rayProbe is KAITO's getDistributedInferenceProbe: the health check in mode (liveness or
// readiness) as a shell command, against the leader's address and the Ray port (liveness)
// or the inference port (readiness).
func rayProbe(w *v1alpha1.Workspace, mode string, initialDelay, period, timeout, failures int32) *corev1.Probe {
	arg := fmt.Sprintf("--vllm-port=%d", Port(w))
	if mode == "liveness" {
		arg = fmt.Sprintf("--ray-port=%d", RayPort)
	}
	cmd := fmt.Sprintf("%s %s --leader-address=%s %s", RayHealthCheckCommand, mode, LeaderAddress(w), arg)
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", cmd}}},
		InitialDelaySeconds: initialDelay, PeriodSeconds: period, TimeoutSeconds: timeout, FailureThreshold: failures,
	}
}

// withRay makes c, the model container of a Ray group's pod template (RayGroup), KAITO's
// multi-node vLLM container: RayCommand; the startup probe (readiness mode every 10 s, 1 s
// timeout, up to RayStartupTimeoutSeconds), readiness (readiness mode, every 10 s, 1 s
// timeout, failing at once) and liveness (liveness mode after 60 s, every 10 s, 5 s timeout,
// failing at once, then killed after a 1 s grace period) probes of KAITO's
// SetDistributedInferenceProbe, except that spec.inference.livenessProbe replaces the
// liveness probe when set. The startup probe stays in every case: it holds any liveness probe
// back while the leader waits for its workers and loads the model. A readiness probe of the
// user's own is refused on a Ray group (checkRayGroup): the workers serve nothing.
func withRay(w *v1alpha1.Workspace, c *corev1.Container) {
	in := w.Spec.Inference
	c.Command = RayCommand(w)
	c.StartupProbe = rayProbe(w, "readiness", 0, 10, 1, RayStartupTimeoutSeconds/10)
	c.ReadinessProbe = rayProbe(w, "readiness", 0, 10, 1, 1)
	if in.LivenessProbe == nil {
		c.LivenessProbe = rayProbe(w, "liveness", 60, 10, 5, 1)
		grace := int64(1)
		c.LivenessProbe.TerminationGracePeriodSeconds = &grace
	}
}

// podIndexEnv is EnvPodIndex from the pod's pod-index label.
func podIndexEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: EnvPodIndex, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: "metadata.labels['" + appsv1.PodIndexLabel + "']"}}}
}

// rayServicePorts are the endpoint Service's Ray ports of a Ray group, as KAITO's Service has
// them: ray (RayPort) and dashboard (RayDashboardPort), each to the same container port.
func rayServicePorts() []corev1.ServicePort {
	return []corev1.ServicePort{
		{Name: RayPortName, Port: RayPort, TargetPort: intstr.FromInt32(RayPort), Protocol: corev1.ProtocolTCP},
		{Name: RayDashboardPortName, Port: RayDashboardPort, TargetPort: intstr.FromInt32(RayDashboardPort), Protocol: corev1.ProtocolTCP},
	}
}

// checkRayGroup refuses a Ray group (RayGroup) whose inference port is one of the Ray ports
// (the Ray head listens there on the leader; the error names spec.inference.port) or that
// sets a readiness probe of its own (one pod template serves the leader and the workers,
// which serve nothing: only KAITO's health check, where workers pass, fits both; the error
// names spec.inference.readinessProbe).
func checkRayGroup(w *v1alpha1.Workspace) error {
	if !RayGroup(w) {
		return nil
	}
	if p := Port(w); p == RayPort || p == RayDashboardPort {
		return fmt.Errorf("spec.inference.port: %d is a port of the Ray head a multi-node group's leader runs (KAITO's Ray cluster: %d, dashboard %d); choose another port", p, RayPort, RayDashboardPort)
	}
	if w.Spec.Inference.ReadinessProbe != nil {
		return errors.New("spec.inference.readinessProbe: a multi-node group on KAITO's Ray cluster uses KAITO's health check (the leader's /health; the workers, which serve nothing, pass): remove the readiness probe, or give the group a command of its own")
	}
	return nil
}
