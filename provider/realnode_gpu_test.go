package provider

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// The real node's fake GPUs (hack/realnode.sh runs the test device plugin,
// hack/images/deviceplugin, as a DaemonSet there): an H200 node with 2 × nvidia.com/gpu,
// 1 × nvidia.com/h200 and 7 × nvidia.com/mig-1g.18gb, and SEV-SNP through the kata-qemu-snp
// RuntimeClass (a runc alias in its containerd).
const (
	realGPUProduct = "NVIDIA-H200"
	realGPUs       = 2
)

// gpuDeviceRe and migDeviceRe are device IDs as nvidia's device plugin hands them over.
var (
	gpuDeviceRe = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	migDeviceRe = regexp.MustCompile(`^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// realGPUNode skips the test unless the real node is Ready with its fake GPUs allocatable.
func realGPUNode(t *testing.T, c *kube.Clients) {
	t.Helper()
	realNode(t, c)
	n, err := c.Core.CoreV1().Nodes().Get(context.Background(), realNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := n.Status.Allocatable[corev1.ResourceName("nvidia.com/gpu")]
	if q.Value() != realGPUs || n.Labels["nvidia.com/gpu.product"] != realGPUProduct {
		t.Fatalf("the real node has allocatable nvidia.com/gpu %s and product %q: want %d and %s (hack/realnode.sh up runs the test device plugin)",
			q.String(), n.Labels["nvidia.com/gpu.product"], realGPUs, realGPUProduct)
	}
}

// devicesOf GETs /devices from every Running Pod of namespace ns (each a test image's server on
// port) and returns, per Pod, the device IDs of NVIDIA_VISIBLE_DEVICES and the device nodes.
func devicesOf(t *testing.T, c *kube.Clients, ns string, port int) (map[string][]string, map[string][]string, error) {
	t.Helper()
	pods, err := c.Core.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "status.phase=Running"})
	if err != nil {
		return nil, nil, err
	}
	ids, nodes := map[string][]string{}, map[string][]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != realNodeName || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		body, err := httpGet(net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)), "/devices")
		if err != nil {
			return nil, nil, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		t.Logf("pod %s GET /devices:\n%s", p.Name, body)
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			if v, ok := strings.CutPrefix(line, "NVIDIA_VISIBLE_DEVICES="); ok {
				if v != "" {
					ids[p.Name] = strings.Split(v, ",")
				}
			} else {
				nodes[p.Name] = append(nodes[p.Name], line)
			}
		}
	}
	return ids, nodes, nil
}

// checkDevices returns a check that every Running Pod of ns (want of them) was handed exactly
// perPod devices matching re, the device nodes for them, and no device twice.
func checkDevices(t *testing.T, c *kube.Clients, ns string, port, want, perPod int, re *regexp.Regexp, node string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ids, nodes, err := devicesOf(t, c, ns, port)
		if err != nil {
			return err
		}
		if len(nodes) != want {
			return fmt.Errorf("%d Running pods on %s answered with device nodes, want %d (ids: %v)", len(nodes), realNodeName, want, ids)
		}
		seen := map[string]string{}
		for pod, list := range ids {
			if len(list) != perPod {
				return fmt.Errorf("pod %s got devices %v, want %d", pod, list, perPod)
			}
			for _, id := range list {
				if !re.MatchString(id) {
					return fmt.Errorf("pod %s got device %q, not of the form %s", pod, id, re)
				}
				if other, dup := seen[id]; dup {
					return fmt.Errorf("device %s handed to both %s and %s", id, other, pod)
				}
				seen[id] = pod
			}
			if !strings.Contains(strings.Join(nodes[pod], " "), node) {
				return fmt.Errorf("pod %s has device nodes %v, want %s among them", pod, nodes[pod], node)
			}
		}
		if len(ids) != want {
			return fmt.Errorf("%d pods have NVIDIA_VISIBLE_DEVICES, want %d", len(ids), want)
		}
		return nil
	}
}

// A GPU performer runs on the real node through the kubelet's device manager: the container is
// handed one GPU (NVIDIA_VISIBLE_DEVICES with nvidia's UUID form, its /dev/nvidiaN); asked as
// the per-type resource (Hourglass's nvidia.com/<type>) it gets that resource's GPU; asking
// for more GPUs than the node has fails the apply with the scheduler's words.
func TestAccRealNode_GPUPerformer(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realGPUNode(t, c)
	ns := testNamespace(t, c, "acc-realgpu")
	name := "gpu-" + rand.String(5)
	addr := "gantry_performer.real"
	hw := func(extra string) string {
		return fmt.Sprintf("  hardware_requirements = { gpu_count = %s, gpu_type = %q }\n", extra, realGPUProduct)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: realPerformerConfig(ns, name, testPerformerImage, hw("1")),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_name"), knownvalue.StringExact(realNodeName)),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkDevices(t, c, ns, 9090, 1, 1, gpuDeviceRe, "/dev/nvidia"),
					checkPodLimits(t, c, ns, "nvidia.com/gpu", 1),
				),
			},
			{
				Config: realPerformerConfig(ns, name, testPerformerImage,
					fmt.Sprintf("  hardware_requirements = { gpu_count = 1, gpu_type = %q, gpu_resource = \"nvidia.com/h200\" }\n", realGPUProduct)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
				// The per-type GPU is the node's third (GPUs 0 and 1 are nvidia.com/gpu).
				Check: resource.ComposeAggregateTestCheckFunc(
					checkDevices(t, c, ns, 9090, 1, 1, gpuDeviceRe, "/dev/nvidia2"),
					checkPodLimits(t, c, ns, "nvidia.com/h200", 1),
				),
			},
			{
				// Hourglass's own example shape: nvidia.com/gpu in resources beside the per-type GPU
				// hardware_requirements asks for. Hourglass's operator keeps both; so does Gantry:
				// the kubelet allocates one GPU of each resource and the container gets both
				// device nodes (/dev/nvidia2 is the h200; NVIDIA_VISIBLE_DEVICES is one plugin's,
				// as with nvidia's plugins: two plugins set the same variable).
				Config: realPerformerConfig(ns, name, testPerformerImage,
					fmt.Sprintf("  hardware_requirements = { gpu_count = 1, gpu_type = %q, gpu_resource = \"nvidia.com/h200\" }\n", realGPUProduct)+
						"  resources = { requests = { \"nvidia.com/gpu\" = \"1\" }, limits = { \"nvidia.com/gpu\" = \"1\" } }\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkDevices(t, c, ns, 9090, 1, 1, gpuDeviceRe, "/dev/nvidia2"),
					func(*terraform.State) error {
						_, nodes, err := devicesOf(t, c, ns, 9090)
						for pod, list := range nodes {
							if !slices.Contains(list, "/dev/nvidia0") && !slices.Contains(list, "/dev/nvidia1") {
								return fmt.Errorf("pod %s has device nodes %v: no nvidia.com/gpu device beside the h200", pod, list)
							}
						}
						return err
					},
					checkPodLimits(t, c, ns, "nvidia.com/h200", 1),
					checkPodLimits(t, c, ns, "nvidia.com/gpu", 1),
				),
			},
			{
				Config:      realPerformerConfig(ns, name, testPerformerImage, hw("3")),
				ExpectError: regexp.MustCompile(`(?s)Insufficient nvidia\.com/gpu`),
			},
		},
	})
}

// checkPodLimits checks that the Running Pods of ns request and limit n of resource (the
// device manager admits extended resources only with requests equal to limits).
func checkPodLimits(t *testing.T, c *kube.Clients, ns, res string, n int64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pods, err := c.Core.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "status.phase=Running"})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			r := p.Spec.Containers[0].Resources
			lim, req := r.Limits[corev1.ResourceName(res)], r.Requests[corev1.ResourceName(res)]
			if lim.Value() != n || req.Value() != n {
				return fmt.Errorf("pod %s: %s limit %s request %s, want %d", p.Name, res, lim.String(), req.String(), n)
			}
		}
		return nil
	}
}

// A TEE performer (SEV-SNP) runs on the real node through its RuntimeClass: the RuntimeClass
// admission adds its node selector, the kubelet resolves the kata-qemu-snp handler in containerd
// (an alias of runc here) and the server answers.
func TestAccRealNode_TEEPerformer(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realGPUNode(t, c)
	ns := testNamespace(t, c, "acc-realtee")
	name := "tee-" + rand.String(5)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: realPerformerConfig(ns, name, testPerformerImage, "  hardware_requirements = { tee_required = true, tee_type = \"sev-snp\" }\n"),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gantry_performer.real", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				statecheck.ExpectKnownValue("gantry_performer.real", tfjsonpath.New("node_name"), knownvalue.StringExact(realNodeName)),
			},
			Check: func(*terraform.State) error {
				pods, err := c.Core.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "status.phase=Running"})
				if err != nil || len(pods.Items) != 1 {
					return fmt.Errorf("pods: %v %v", pods, err)
				}
				p := pods.Items[0]
				if p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "kata-qemu-snp" {
					return fmt.Errorf("pod %s runtimeClassName %v, want kata-qemu-snp", p.Name, p.Spec.RuntimeClassName)
				}
				body, err := httpGet(net.JoinHostPort(p.Status.PodIP, "9090"), "/")
				if err != nil || !strings.Contains(body, "gantry test performer") {
					return fmt.Errorf("the TEE performer answered %q, %v", body, err)
				}
				return nil
			},
		}},
	})
}

// Inference workspaces on the real node's GPUs: a replica with one whole GPU is handed one GPU
// by the device manager; a MIG workspace of two replicas (KAITO's partition, mode mig) gets one
// distinct 1g.18gb slice per replica.
func TestAccRealNode_GPUWorkspaces(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realGPUNode(t, c)
	ws := func(ns, name, res string, count int) string {
		return fmt.Sprintf(`
resource "gantry_workspace" "real" {
  name      = %q
  namespace = %q
  resource = {
    count          = %d
    gpu_product    = %q
    label_selector = { "gantry.dev/node-pool" = "real" }
%s
  }
  tolerations = [%s]
  inference = {
    model = "gantry-echo"
    image = %q
    port  = 8000
  }
  timeouts = { create = "3m", update = "3m", delete = "2m" }
}
`, name, ns, count, realGPUProduct, res, realNodeToleration, testModelServerImage)
	}
	t.Run("gpu", func(t *testing.T) {
		ns := testNamespace(t, c, "acc-realgpuw")
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { testAccPreCheck(t) },
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps: []resource.TestStep{{
				Config: ws(ns, "gpu-"+rand.String(5), "    gpu_count = 1", 1),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_workspace.real", tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkDevices(t, c, ns, 8000, 1, 1, gpuDeviceRe, "/dev/nvidia"),
					checkPodLimits(t, c, ns, "nvidia.com/gpu", 1),
				),
			}},
		})
	})
	t.Run("mig", func(t *testing.T) {
		ns := testNamespace(t, c, "acc-realmigw")
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { testAccPreCheck(t) },
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps: []resource.TestStep{{
				Config: ws(ns, "mig-"+rand.String(5), `    partition = { mode = "mig", profile = "1g.18gb" }`, 2),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_workspace.real", tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkDevices(t, c, ns, 8000, 2, 1, migDeviceRe, "/dev/nvidia-caps/nvidia-cap"),
					checkPodLimits(t, c, ns, "nvidia.com/mig-1g.18gb", 1),
				),
			}},
		})
	})
}

// nodeSample is the real node seen at one moment: cordoned, and its allocatable nvidia.com/gpu.
type nodeSample struct {
	unschedulable bool
	gpus          int64
}

// sampleNode polls the real node every 200 ms until stop is closed and returns the samples
// (through the returned function, which waits for the poller to end).
func sampleNode(c *kube.Clients, stop <-chan struct{}) func() []nodeSample {
	var out []nodeSample
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if n, err := c.Core.CoreV1().Nodes().Get(context.Background(), realNodeName, metav1.GetOptions{}); err == nil {
				q := n.Status.Allocatable[corev1.ResourceName("nvidia.com/gpu")]
				out = append(out, nodeSample{n.Spec.Unschedulable, q.Value()})
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() []nodeSample { <-done; return out }
}

// waitGPUs waits until the real node's allocatable nvidia.com/gpu is want (1 minute).
func waitGPUs(t *testing.T, c *kube.Clients, want int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := c.Core.CoreV1().Nodes().Get(context.Background(), realNodeName, metav1.GetOptions{})
		if err == nil {
			if q := n.Status.Allocatable[corev1.ResourceName("nvidia.com/gpu")]; q.Value() == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the real node's allocatable nvidia.com/gpu did not become %d: %v", want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The device plugin restarts under a running GPU performer (its Pod deleted, the DaemonSet
// makes a new one): the node's GPUs leave its allocatable and come back, the performer's Pod
// keeps running (same Pod, no restart) and the next plan is empty. Then a driver-style package
// whose service interrupt restarts the plugin (SIGTERM to it from the interrupt Pod): the node
// is cordoned, its GPUs drop, and the set does not release the cordon before both GPUs are
// allocatable again; it completes with the node schedulable and its GPUs back.
func TestAccRealNode_DevicePluginRestart(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realGPUNode(t, c)
	ctx := context.Background()
	ns := testNamespace(t, c, "acc-realdp")
	name := "gpu-" + rand.String(5)
	perf := realPerformerConfig(ns, name, testPerformerImage, fmt.Sprintf("  hardware_requirements = { gpu_count = 1, gpu_type = %q }\n", realGPUProduct))
	var podUID string
	dir := hostScratch(t)
	set := "acc-realdp-" + rand.String(5)
	var samples func() []nodeSample
	stop := make(chan struct{})
	stopSampling := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(stopSampling)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: perf,
				Check: func(*terraform.State) error {
					pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
					if err != nil || len(pods.Items) != 1 {
						return fmt.Errorf("performer pods: %v %v", pods, err)
					}
					podUID = string(pods.Items[0].UID)
					return nil
				},
			},
			{
				PreConfig: func() {
					err := c.Core.CoreV1().Pods("kube-system").DeleteCollection(ctx, metav1.DeleteOptions{},
						metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=gantry-fake-gpu-device-plugin"})
					if err != nil {
						t.Fatal(err)
					}
					waitGPUs(t, c, 0)
					t.Log("the device plugin's Pod was deleted: nvidia.com/gpu 0 allocatable")
					waitGPUs(t, c, realGPUs)
					t.Log("the new device plugin Pod registered: nvidia.com/gpu 2 allocatable")
				},
				Config:             perf,
				PlanOnly:           true,
				ExpectNonEmptyPlan: false,
				Check: func(*terraform.State) error {
					pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
					if err != nil || len(pods.Items) != 1 || string(pods.Items[0].UID) != podUID || pods.Items[0].Status.Phase != corev1.PodRunning {
						return fmt.Errorf("the performer's Pod did not survive the device plugin's restart: %v %v", pods, err)
					}
					return nil
				},
			},
			{
				PreConfig: func() { samples = sampleNode(c, stop) },
				// The performer goes (the drain would evict it, and its replacement would wait for
				// the cordon), the package set comes: a driver-style package, privileged in the
				// host's PID namespace, whose interrupt sends SIGTERM to the device plugin.
				Config: fmt.Sprintf(`
resource "gantry_package_set" "real" {
  name                   = %q
  node_selector          = { "gantry.dev/node-pool" = "real" }
  additional_tolerations = [%s]
  packages = [{
    name          = "tool"
    version       = "1.0.0"
    image         = "%s:1.0.0"
    env           = { GANTRY_MARKER_DIR = "/host%s", GANTRY_INTERRUPT_KILL = "device-plugin" }
    host          = { root_mount_path = "/host", host_pid = true, privileged = true }
    interrupt     = { type = "service", services = ["nvidia-device-plugin"] }
    stage_timeout = "2m"
  }]
  timeouts = { create = "4m", update = "4m", delete = "4m" }
}
`, set, realNodeToleration, testPackageImage, dir),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_package_set.real", tfjsonpath.New("status"), knownvalue.StringExact("complete")),
				},
				Check: func(*terraform.State) error {
					stopSampling()
					got := samples()
					cordoned, dropped := false, false
					for i, s := range got {
						cordoned = cordoned || s.unschedulable
						dropped = dropped || (s.unschedulable && s.gpus < realGPUs)
						if cordoned && !s.unschedulable && s.gpus < realGPUs {
							return fmt.Errorf("sample %d of %d: the node was uncordoned with %d of %d GPUs allocatable", i, len(got), s.gpus, realGPUs)
						}
					}
					t.Logf("%d samples: cordoned %v, GPUs dropped while cordoned %v", len(got), cordoned, dropped)
					if !cordoned || !dropped {
						return fmt.Errorf("the interrupt did not cordon the node (%v) or take its GPUs away (%v)", cordoned, dropped)
					}
					n, err := c.Core.CoreV1().Nodes().Get(ctx, realNodeName, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if q := n.Status.Allocatable[corev1.ResourceName("nvidia.com/gpu")]; n.Spec.Unschedulable || q.Value() != realGPUs {
						return fmt.Errorf("after the set completed: unschedulable %v, %s GPUs", n.Spec.Unschedulable, q.String())
					}
					if !strings.Contains(hostFile(dir, "tool.interrupts"), "interrupt service nvidia-device-plugin") {
						return fmt.Errorf("no interrupt recorded: %q", hostFile(dir, "tool.interrupts"))
					}
					return nil
				},
			},
		},
	})
}
