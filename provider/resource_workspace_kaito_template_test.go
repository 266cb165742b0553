package provider

import (
	"context"
	"fmt"
	"reflect"
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
)

// kaitoCustomModel is KAITO's examples/custom-model-integration/custom-model-deployment.yaml
// as a gantry_workspace: its inference.template's named container, command, args, port and
// probes, and the in-memory emptyDir at /dev/shm, here with a sizeLimit.
const kaitoCustomModel = `
  resource = {
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
  }
  inference = {
    model          = "custom-llm"
    image          = "mcr.microsoft.com/aks/kaito/kaito-base:0.2.0"
    container_name = "custom-llm-container"
    port           = 5000
    command        = ["accelerate"]
    args           = ["launch", "--num_processes", "1", "--num_machines", "1", "--gpu_ids", "all", "tfs/inference_api.py", "--pipeline", "text-generation",
                      "--trust_remote_code", "--allow_remote_files", "--pretrained_model_name_or_path", "tiiuae/falcon-7b", "--torch_dtype", "float16"]
    readiness_probe = { http_path = "/health", initial_delay_seconds = 30 }
    liveness_probe  = { http_path = "/health", initial_delay_seconds = 600 }
    volumes = [
      { name = "dshm", mount_path = "/dev/shm", empty_dir = true, medium = "Memory", size_limit = "16Gi" },
    ]
  }
  timeouts = { create = "3m" }
`

// KAITO's custom model template end to end: the Deployment's pod runs the container under
// KAITO's name (not Gantry's default "model") and mounts an emptyDir with medium Memory and
// the size limit at /dev/shm; the workspace is Ready, a second plan is empty and an import
// reads the same attributes back. Renaming the container and changing the size limit update
// the workspace in place and roll the pod template.
func TestAccWorkspace_kaitoCustomTemplate(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-kaito-tpl")
	addr := "gantry_workspace.custom"
	cfg := workspaceConfig(ns, "custom", kaitoCustomModel)
	renamed := strings.NewReplacer(`container_name = "custom-llm-container"`, `container_name = "vllm"`, `size_limit = "16Gi"`, `size_limit = "8Gi"`).Replace(cfg)
	podSpec := func(name, size string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			d, err := c.Core.AppsV1().Deployments(ns).Get(context.Background(), "workspace-custom", metav1.GetOptions{})
			if err != nil {
				return err
			}
			return checkKAITOCustomPodSpec(d.Spec.Template.Spec, name, size)
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("inference").AtMapKey("container_name"), knownvalue.StringExact("custom-llm-container")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("inference").AtMapKey("volumes").AtSliceIndex(0).AtMapKey("medium"), knownvalue.StringExact("Memory")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("inference").AtMapKey("volumes").AtSliceIndex(0).AtMapKey("size_limit"), knownvalue.StringExact("16Gi")),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            podSpec("custom-llm-container", "16Gi"),
			},
			{ResourceName: addr, ImportState: true, ImportStateId: ns + "/custom", ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"}},
			{
				Config: renamed,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready"))},
				Check:             podSpec("vllm", "8Gi"),
			},
		},
	})
}

// checkKAITOCustomPodSpec checks the pod template of TestAccWorkspace_kaitoCustomTemplate.
func checkKAITOCustomPodSpec(spec corev1.PodSpec, container, size string) error {
	var problems []string
	if len(spec.Containers) != 1 {
		return fmt.Errorf("pod template: %d containers, want 1", len(spec.Containers))
	}
	ct := spec.Containers[0]
	if ct.Name != container || ct.Image != "mcr.microsoft.com/aks/kaito/kaito-base:0.2.0" || !slices.Equal(ct.Command, []string{"accelerate"}) {
		problems = append(problems, fmt.Sprintf("container %q image %s command %v, want %q", ct.Name, ct.Image, ct.Command, container))
	}
	if len(ct.Ports) != 1 || ct.Ports[0].ContainerPort != 5000 {
		problems = append(problems, fmt.Sprintf("ports %v", ct.Ports))
	}
	limit := k8sresource.MustParse(size)
	want := []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &limit}}}}
	if len(spec.Volumes) != 1 || spec.Volumes[0].Name != "dshm" || spec.Volumes[0].EmptyDir == nil || spec.Volumes[0].EmptyDir.Medium != corev1.StorageMediumMemory ||
		spec.Volumes[0].EmptyDir.SizeLimit == nil || spec.Volumes[0].EmptyDir.SizeLimit.Cmp(limit) != 0 {
		problems = append(problems, fmt.Sprintf("volumes %+v, want %+v", spec.Volumes, want))
	}
	if wantMounts := []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}; !reflect.DeepEqual(ct.VolumeMounts, wantMounts) {
		problems = append(problems, fmt.Sprintf("mounts %+v, want %+v", ct.VolumeMounts, wantMounts))
	}
	if p := ct.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.InitialDelaySeconds != 600 {
		problems = append(problems, fmt.Sprintf("liveness probe %+v", p))
	}
	if len(problems) > 0 {
		return fmt.Errorf("pod template: %s", strings.Join(problems, "; "))
	}
	return nil
}

// KAITO's examples/fine-tuning/kaito_workspace_tuning_falcon_7b_oai.yaml end to end: the
// tuning preset with accessMode private and presetOptions.image (plus the imagePullSecrets
// and modelAccessSecret KAITO's presetOptions also hold). The apply waits until the run
// Succeeded; the Job's pod runs the private image, pulls it with the Secret and gets HF_TOKEN
// from the model access Secret's key (never its value); a second plan is empty and an import
// reads the same attributes back.
func TestAccWorkspace_kaitoPrivateTuning(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ctx := context.Background()
	ns := testNamespace(t, c, "acc-ws-kaito-tune")
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "acr-pull"}, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "acr-push"}, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hf-token"}, Data: map[string][]byte{"HF_TOKEN": []byte("hf_not_a_real_token")}},
	} {
		if _, err := c.Core.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	addr := "gantry_workspace.falcon"
	const image = "aimodelsregistrytest.azurecr.io/kaito-falcon-7b:0.0.4"
	cfg := workspaceConfig(ns, "falcon", fmt.Sprintf(`
  resource = { gpu_product = "NVIDIA-A100-SXM4-80GB" }
  tuning = {
    preset              = "falcon-7b"
    access_mode         = "private"
    image               = %q
    image_pull_secrets  = ["acr-pull"]
    model_access_secret = "hf-token"
    method              = "qlora"
    input_urls          = ["https://huggingface.co/datasets/philschmid/dolly-15k-oai-style/resolve/main/data/train-00000-of-00001-54e3756291ca09c6.parquet?download=true"]
    output_image        = "registry.example/adapters/falcon-7b-oai:0.0.1"
    output_push_secret  = "acr-push"
  }
  timeouts = { create = "3m" }
`, image))
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Succeeded")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("tuning").AtMapKey("access_mode"), knownvalue.StringExact("private")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("tuning").AtMapKey("image_pull_secrets"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("acr-pull")})),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: func(*terraform.State) error {
					j, err := c.Core.BatchV1().Jobs(ns).Get(context.Background(), "workspace-falcon", metav1.GetOptions{})
					if err != nil {
						return err
					}
					return checkKAITOPrivateTuningPodSpec(j.Spec.Template.Spec, image)
				},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: ns + "/falcon", ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"}},
		},
	})
}

// checkKAITOPrivateTuningPodSpec checks the Job pod template of TestAccWorkspace_kaitoPrivateTuning.
func checkKAITOPrivateTuningPodSpec(spec corev1.PodSpec, image string) error {
	var problems []string
	ct := spec.Containers[0]
	if ct.Image != image {
		problems = append(problems, fmt.Sprintf("image %s, want %s", ct.Image, image))
	}
	if want := []corev1.LocalObjectReference{{Name: "acr-pull"}}; !reflect.DeepEqual(spec.ImagePullSecrets, want) {
		problems = append(problems, fmt.Sprintf("image pull secrets %v, want %v", spec.ImagePullSecrets, want))
	}
	want := corev1.EnvVar{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}, Key: "HF_TOKEN"}}}
	if !slices.ContainsFunc(ct.Env, func(e corev1.EnvVar) bool { return reflect.DeepEqual(e, want) }) {
		problems = append(problems, fmt.Sprintf("env %+v lacks HF_TOKEN from the Secret hf-token", ct.Env))
	}
	if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "acr-push" }) {
		problems = append(problems, fmt.Sprintf("volumes %+v lack the push Secret", spec.Volumes))
	}
	if len(problems) > 0 {
		return fmt.Errorf("tuning pod template: %s", strings.Join(problems, "; "))
	}
	return nil
}
