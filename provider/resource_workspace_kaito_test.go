package provider

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// KAITO workspace examples end to end: a private preset (access_mode, image,
// image_pull_secrets) on MIG slices (resource.partition) with an inference config
// (--kaito-config-file), a performance mode, and inference.template settings (command,
// probes, volumes). Two replicas become Ready on a kwok node that offers
// nvidia.com/mig-1g.10gb and taints that key; the Deployment's pod template has what KAITO's
// would; a second plan is empty; 8 replicas on the node's 7 slices stall naming the MIG
// resource.
func TestAccWorkspace_kaitoExamples(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ctx := context.Background()
	ns := testNamespace(t, c, "acc-ws-kaito")
	product := "NVIDIA-A100-MIG-ACC-" + rand.String(5)
	name := "acc-mig-" + strings.ToLower(product[len(product)-5:])
	alloc := corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("32"), corev1.ResourceMemory: k8sresource.MustParse("256Gi"),
		corev1.ResourcePods: k8sresource.MustParse("110"), "nvidia.com/mig-1g.10gb": k8sresource.MustParse("7")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
				"nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.config.state": "success"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule},
			{Key: "nvidia.com/mig-1g.10gb", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}
	if _, err := c.Core.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Core.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := c.Core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "phi-config"},
		Data: map[string]string{"inference_config.yaml": "vllm:\n  max-model-len: 4096\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := workspaceConfig(ns, "phi", fmt.Sprintf(`
  resource = {
    count       = 2
    gpu_product = %q
    partition   = { mode = "mig", profile = "1g.10gb" }
  }
  inference = {
    preset             = "phi-3-mini-4k-instruct"
    access_mode        = "private"
    image              = "registry.example/kaito/phi-3-mini-4k-instruct:private"
    image_pull_secrets = ["regcred"]
    config             = "phi-config"
    performance_mode   = "throughput"
    command            = ["/bin/sh", "-c", "exec python3 /workspace/vllm/inference_api.py \"$@\"", "--"]
    readiness_probe    = { http_path = "/health", initial_delay_seconds = 5 }
    liveness_probe     = { exec = ["cat", "/tmp/alive"], period_seconds = 30 }
    volumes = [
      { name = "scratch", mount_path = "/scratch", empty_dir = true },
      { name = "extra", mount_path = "/etc/extra", config_map = "phi-config" },
    ]
  }
  timeouts = { create = "3m" }
`, product))
	addr := "gantry_workspace.phi"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("worker_nodes"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(name)})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resource").AtMapKey("partition").AtMapKey("profile"), knownvalue.StringExact("1g.10gb")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("inference").AtMapKey("volumes").AtSliceIndex(0).AtMapKey("empty_dir"), knownvalue.Bool(true)),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: func(*terraform.State) error {
					d, err := c.Core.AppsV1().Deployments(ns).Get(context.Background(), "workspace-phi", metav1.GetOptions{})
					if err != nil {
						return err
					}
					return checkKAITOPodSpec(d.Spec.Template.Spec)
				},
			},
			{Config: cfg, PlanOnly: true},
			{
				// 8 replicas, 7 slices on the node: Stalled, naming the MIG resource.
				Config:      strings.Replace(cfg, "count       = 2", "count       = 8", 1),
				ExpectError: regexp.MustCompile(`(?s)8\s+replica\(s\)\s+of\s+1\s+nvidia.com/mig-1g.10gb\s+each.*7\s+of\s+7\s+nvidia.com/mig-1g.10gb\s+free`),
			},
		},
	})
}

// checkKAITOPodSpec checks the pod template of TestAccWorkspace_kaitoExamples.
func checkKAITOPodSpec(spec corev1.PodSpec) error {
	ct := spec.Containers[0]
	var problems []string
	if q := ct.Resources.Limits["nvidia.com/mig-1g.10gb"]; q.Value() != 1 {
		problems = append(problems, fmt.Sprintf("limits %v: want nvidia.com/mig-1g.10gb 1", ct.Resources.Limits))
	}
	if _, ok := ct.Resources.Limits["nvidia.com/gpu"]; ok {
		problems = append(problems, "a MIG replica requests nvidia.com/gpu")
	}
	if !slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool {
		return t.Key == "nvidia.com/mig-1g.10gb" && t.Operator == corev1.TolerationOpExists
	}) {
		problems = append(problems, fmt.Sprintf("tolerations %v lack nvidia.com/mig-1g.10gb", spec.Tolerations))
	}
	if ct.Image != "registry.example/kaito/phi-3-mini-4k-instruct:private" || !reflect.DeepEqual(spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
		problems = append(problems, fmt.Sprintf("image %s pull secrets %v", ct.Image, spec.ImagePullSecrets))
	}
	args := strings.Join(ct.Args, " ")
	if !strings.HasSuffix(args, "--kaito-config-file=/mnt/config/inference_config.yaml --performance-mode=throughput") {
		problems = append(problems, "args "+args)
	}
	if len(ct.Command) != 4 || ct.Command[0] != "/bin/sh" {
		problems = append(problems, fmt.Sprintf("command %v", ct.Command))
	}
	if p := ct.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.InitialDelaySeconds != 5 {
		problems = append(problems, fmt.Sprintf("readiness probe %+v", p))
	}
	if p := ct.LivenessProbe; p == nil || p.Exec == nil || p.PeriodSeconds != 30 {
		problems = append(problems, fmt.Sprintf("liveness probe %+v", p))
	}
	mounts := map[string]string{}
	for _, m := range ct.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if want := map[string]string{"config": "/mnt/config", "scratch": "/scratch", "extra": "/etc/extra"}; !reflect.DeepEqual(mounts, want) {
		problems = append(problems, fmt.Sprintf("mounts %v, want %v", mounts, want))
	}
	if len(problems) > 0 {
		return fmt.Errorf("pod template: %s", strings.Join(problems, "; "))
	}
	return nil
}

// The KAITO attributes' mistakes fail the plan naming the attribute.
func TestWorkspace_kaitoAtPlan(t *testing.T) {
	requireTerraform(t)
	for name, c := range map[string]struct{ body, err string }{
		"unknown MIG profile": {`
  resource  = { partition = { mode = "mig", profile = "1g.11gb" } }
  inference = { preset = "phi-2" }
`, `(?s)Unknown MIG Profile.*resource.partition.profile.*1g.10gb`},
		"malformed MIG profile": {`
  resource  = { partition = { mode = "mig", profile = "1g10gb" } }
  inference = { preset = "phi-2" }
`, `(?s)resource.partition.profile.*must be a MIG profile such as 1g.10gb`},
		"accelerator mode": {`
  resource  = { partition = { mode = "accelerator", profile = "1g.10gb" } }
  inference = { preset = "phi-2" }
`, `(?s)resource.partition.mode.*mig`},
		"partition with gpu_count": {`
  resource  = { gpu_count = 1, partition = { mode = "mig", profile = "1g.10gb" } }
  inference = { preset = "phi-2" }
`, `(?s)Invalid GPU Partition.*remove\s+resource.gpu_count`},
		"partition on provisioned nodes": {`
  resource  = { instance_type = "Standard_NC24ads_A100_v4", partition = { mode = "mig", profile = "1g.10gb" } }
  inference = { preset = "phi-2" }
`, `(?s)Invalid GPU Partition.*provision_nodes\s+=\s+false`},
		"partition for tuning": {`
  resource = { partition = { mode = "mig", profile = "1g.10gb" } }
  tuning   = { method = "lora", preset = "phi-2", input_image = "d", output_image = "o" }
`, `(?s)Invalid GPU Partition.*inference\s+only`},
		"private without image": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", access_mode = "private" }
`, `(?s)Private Preset Needs an Image.*inference.image`},
		"performance mode": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", performance_mode = "fast" }
`, `(?s)inference.performance_mode.*balanced`},
		"performance mode annotation": {`
  annotations = { "kaito.sh/performance-mode" = "fast" }
  resource    = { gpu_count = 1 }
  inference   = { preset = "phi-2" }
`, `(?s)Invalid Performance Mode.*"fast".*balanced,\s+interactivity,\s+throughput`},
		"volume with two sources": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", volumes = [{ name = "v", mount_path = "/v", config_map = "c", secret = "s" }] }
`, `(?s)inference.volumes\[0\].config_map.*inference.volumes\[0\].secret`},
		"private tuning without image": {`
  resource = { gpu_count = 1 }
  tuning   = { method = "qlora", preset = "falcon-7b", access_mode = "private", image_pull_secrets = ["regcred"], input_urls = ["https://example.com/d"], output_image = "o" }
`, `(?s)Private Preset Needs an Image.*tuning.access_mode.*set\s+tuning.image`},
		"tuning access mode": {`
  resource = { gpu_count = 1 }
  tuning   = { method = "lora", preset = "falcon-7b", access_mode = "internal", input_urls = ["https://example.com/d"], output_image = "o" }
`, `(?s)tuning.access_mode.*public`},
		"tuning model access secret": {`
  resource = { gpu_count = 1 }
  tuning   = { method = "lora", preset = "falcon-7b", model_access_secret = "HF_Token", input_urls = ["https://example.com/d"], output_image = "o" }
`, `(?s)tuning.model_access_secret.*must be a Secret name`},
		"medium without empty_dir": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", volumes = [{ name = "v", mount_path = "/v", config_map = "c", medium = "Memory" }] }
`, `(?s)Medium or Size Limit Without an Empty Dir.*inference.volumes\[0\].medium.*inference.volumes\[0\].empty_dir`},
		"medium other than Memory": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", volumes = [{ name = "dshm", mount_path = "/dev/shm", empty_dir = true, medium = "HugePages" }] }
`, `(?s)inference.volumes\[0\].medium.*Memory`},
		"size limit not a quantity": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", volumes = [{ name = "dshm", mount_path = "/dev/shm", empty_dir = true, medium = "Memory", size_limit = "8GB" }] }
`, `(?s)Invalid Size Limit.*inference.volumes\[0\].size_limit.*"8GB"`},
		"size limit zero": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", volumes = [{ name = "dshm", mount_path = "/dev/shm", empty_dir = true, size_limit = "0Gi" }] }
`, `(?s)Invalid Size Limit.*inference.volumes\[0\].size_limit.*above\s+0`},
		"size limit without empty_dir": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", volumes = [{ name = "v", mount_path = "/v", secret = "s", size_limit = "1Gi" }] }
`, `(?s)Medium or Size Limit Without an Empty Dir.*inference.volumes\[0\].size_limit`},
		"two volumes at one mount path": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", volumes = [{ name = "a", mount_path = "/dev/shm", empty_dir = true, medium = "Memory" }, { name = "b", mount_path = "/dev/shm", empty_dir = true }] }
`, `(?s)Duplicate Mount Path.*inference.volumes\[1\].mount_path.*"/dev/shm"`},
		"container name": {`
  resource  = { gpu_count = 1 }
  inference = { model = "m", image = "i", container_name = "Custom_LLM" }
`, `(?s)inference.container_name.*must be a DNS label`},
		"probe with both": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "phi-2", readiness_probe = { http_path = "/health", exec = ["true"] } }
`, `(?s)inference.readiness_probe.http_path.*inference.readiness_probe.exec`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: workspaceConfig("default", "w", c.body), PlanOnly: true, ExpectError: regexp.MustCompile(c.err)}},
			})
		})
	}
}
