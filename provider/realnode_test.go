package provider

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// The acceptance tests of this file run on the local cluster's real node (hack/realnode.sh: a
// real kubelet with containerd and runc, labelled gantry.dev/node-pool=real and tainted
// gantry.dev/real-node=true:NoSchedule) with the test images hack/images builds and imports
// there: package scripts really write the host's filesystem, performer and model servers really
// serve. They skip, naming the reason, where the machine cannot run the node.

// realNodeName is the real node's name (hack/realnode.sh).
const realNodeName = "gantry-real"

// realNodeToleration tolerates the real node's taint (HCL object).
const realNodeToleration = `{ key = "gantry.dev/real-node", operator = "Exists", effect = "NoSchedule" }`

// The test images hack/images builds and imports into the real node's containerd.
const (
	testPackageImage     = "ghcr.io/gantry-dev/test-package"
	testPerformerImage   = "ghcr.io/gantry-dev/test-performer:1.0.0"
	testModelServerImage = "ghcr.io/gantry-dev/test-model-server:1.0.0"
)

// realNode skips the test unless the local cluster's real node is Ready, naming why not (the
// reason hack/realnode.sh wrote beside the kubeconfig); it returns the node's InternalIP.
//
// make test runs the real-node tests on one of its acceptance passes only (their outcome does
// not depend on the CLI, and they are the slowest): hack/test.sh sets
// GANTRY_TEST_REAL_NODE_PASS on the others to the pass that runs them, and realNode skips there.
func realNode(t *testing.T, c *kube.Clients) string {
	t.Helper()
	if p := os.Getenv("GANTRY_TEST_REAL_NODE_PASS"); p != "" {
		t.Skipf("real-node test: make test runs it on its %s pass only (the CLI does not change what it tests)", p)
	}
	return realNodeReady(t, c)
}

// realNodeReady is realNode on every pass, for the real-node tests whose outcome depends on
// the CLI (ephemeral resources need Terraform 1.10 or OpenTofu 1.11, so the first pass skips
// them).
func realNodeReady(t *testing.T, c *kube.Clients) string {
	t.Helper()
	n, err := c.Core.CoreV1().Nodes().Get(context.Background(), realNodeName, metav1.GetOptions{})
	if err != nil {
		why := "node " + realNodeName + " not found"
		if b, rerr := os.ReadFile(filepath.Join(filepath.Dir(os.Getenv("GANTRY_TEST_KUBECONFIG")), "realnode", "unavailable")); rerr == nil {
			why = strings.TrimSpace(string(b))
		}
		t.Skipf("no real node in this cluster: %s", why)
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		t.Skipf("the real node %s is not Ready", realNodeName)
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	t.Fatalf("the real node %s has no InternalIP: %v", realNodeName, n.Status.Addresses)
	return ""
}

// hostScratch is a per-test directory on the host (the real node's filesystem), removed after.
func hostScratch(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "gantry-acc-"+rand.String(6))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// hostFile is the content of name in dir, "" when it does not exist.
func hostFile(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return string(b)
}

func checkHostFile(dir, name, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := hostFile(dir, name); !strings.Contains(got, want) {
			return fmt.Errorf("host file %s/%s = %q, want it to contain %q", dir, name, got, want)
		}
		return nil
	}
}

func realPackageSetConfig(set, dir, version, cfg, extraEnv string) string {
	return realPackageSetConfigWith(set, dir, version, cfg, extraEnv, "")
}

// realPackageSetConfigWith is realPackageSetConfig with extra attributes of the package.
func realPackageSetConfigWith(set, dir, version, cfg, extraEnv, extraPkg string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "real" {
  name                   = %[1]q
  node_selector          = { "gantry.dev/node-pool" = "real" }
  additional_tolerations = [%[6]s]
  packages = [{
    name              = "tool"
    version           = %[3]q
    image             = "%[7]s:%[3]s"
    env               = { GANTRY_MARKER_DIR = "/host%[2]s"%[5]s }
    host              = { root_mount_path = "/host" }
    config            = { mode = %[4]q }
    uninstall_enabled = true
    stage_timeout     = "2m"
%[8]s
  }]
  timeouts = { create = "4m", update = "4m", delete = "4m" }
}
`, set, dir, version, cfg, extraEnv, realNodeToleration, testPackageImage, extraPkg)
}

// A package set over the real node, with the test package image (Skyhook's layout) and the
// host's / at /host: the install really runs apply and config and their checks, which write
// files on the host (under a per-test scratch directory); a config change runs config again; an
// upgrade runs upgrade; the destroy runs uninstall and the files are gone; the stage log on
// the host shows the order.
func TestAccRealNode_PackageSetLifecycle(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNode(t, c)
	dir := hostScratch(t)
	set := "acc-real-" + rand.String(5)
	addr := "gantry_package_set.real"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			for _, f := range []string{"tool.installed", "tool.config"} {
				if got := hostFile(dir, f); got != "" {
					return fmt.Errorf("host file %s/%s still exists after destroy (uninstall did not run): %q", dir, f, got)
				}
			}
			if !strings.Contains(hostFile(dir, "tool.log"), "uninstall ") {
				return fmt.Errorf("no uninstall in the stage log %q", hostFile(dir, "tool.log"))
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: realPackageSetConfig(set, dir, "1.0.0", "a", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("complete_nodes"), knownvalue.StringExact("1/1")),
				},
				Check: resource.ComposeTestCheckFunc(
					checkHostFile(dir, "tool.installed", "version=1.0.0"),
					checkHostFile(dir, "tool.installed", realNodeName),
					checkHostFile(dir, "tool.config", "mode=a"),
					checkHostFile(dir, "tool.log", "apply 1.0.0\napply-check 1.0.0\nconfig 1.0.0\nconfig-check 1.0.0\n"),
				),
			},
			{
				Config: realPackageSetConfig(set, dir, "1.0.0", "b", ""),
				Check: resource.ComposeTestCheckFunc(
					checkHostFile(dir, "tool.config", "mode=b"),
					checkHostFile(dir, "tool.log", "config-check 1.0.0\nconfig 1.0.0\nconfig-check 1.0.0\n"),
				),
			},
			{
				Config: realPackageSetConfig(set, dir, "1.1.0", "b", ""),
				Check: resource.ComposeTestCheckFunc(
					checkHostFile(dir, "tool.installed", "version=1.1.0"),
					checkHostFile(dir, "tool.log", "upgrade 1.1.0\nupgrade-check 1.1.0\n"),
				),
			},
		},
	})
}

// A stage script that exits 2 on the real node fails the apply quoting its last stderr line
// (the container's termination message: the kubelet keeps the log tail, the status quotes
// it); the destroy after it still removes the set.
func TestAccRealNode_PackageStageFailureQuotesScript(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNode(t, c)
	dir := hostScratch(t)
	set := "acc-realf-" + rand.String(5)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      realPackageSetConfig(set, dir, "1.0.0", "a", `, GANTRY_FAIL_STAGE = "apply"`),
			ExpectError: regexp.MustCompile(`(?s)stage\s+apply.*exited\s+2.*apply:\s+failing\s+on\s+purpose\s+\(GANTRY_FAIL_STAGE=apply\)`),
		}},
	})
}

// endpointAddress resolves a Service's port as the cluster would (its EndpointSlices, ready
// addresses) to host:port the host can dial (the real node's pod network is routed on the host).
func endpointAddress(t *testing.T, c *kube.Clients, ns, service string) string {
	t.Helper()
	var last string
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		l, err := c.Core.DiscoveryV1().EndpointSlices(ns).List(context.Background(),
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err == nil {
			for _, s := range l.Items {
				for _, ep := range s.Endpoints {
					if ep.Conditions.Ready != nil && *ep.Conditions.Ready && len(ep.Addresses) > 0 && len(s.Ports) > 0 && s.Ports[0].Port != nil {
						return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*s.Ports[0].Port)))
					}
				}
			}
			last = fmt.Sprintf("%d slices, none with a ready address", len(l.Items))
		} else {
			last = err.Error()
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("Service %s/%s has no ready endpoint: %s", ns, service, last)
	return ""
}

func httpGet(addr, path string) (string, error) {
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s%s: %s", addr, path, resp.Status)
	}
	return string(b), err
}

func realPerformerConfig(ns, name, image, extra string) string {
	return fmt.Sprintf(`
resource "gantry_performer" "real" {
  name              = %q
  namespace         = %q
  image             = %q
  image_pull_policy = "IfNotPresent"
  node_selector     = { "gantry.dev/node-pool" = "real" }
  tolerations       = [%s]
%s
  timeouts = { create = "2m", update = "2m", delete = "2m" }
}
output "endpoint" { value = gantry_performer.real.grpc_endpoint }
`, name, ns, image, realNodeToleration, extra)
}

// A performer on the real node is Running only once its server listens (the readiness probe
// is real), its endpoint's Service answers from the host with the server's own reply, and
// the Pod is on the real node.
func TestAccRealNode_Performer(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNode(t, c)
	ns := testNamespace(t, c, "acc-realp")
	name := "real-" + rand.String(5)
	addr := "gantry_performer.real"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: realPerformerConfig(ns, name, testPerformerImage, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_name"), knownvalue.StringExact(realNodeName)),
				statecheck.ExpectKnownOutputValue("endpoint", knownvalue.StringExact(fmt.Sprintf("performer-%s.%s.svc.cluster.local:9090", name, ns))),
			},
			Check: func(*terraform.State) error {
				ep := endpointAddress(t, c, ns, "performer-"+name)
				body, err := httpGet(ep, "/")
				if err != nil || !strings.Contains(body, "gantry test performer") {
					return fmt.Errorf("performer endpoint %s answered %q, %v", ep, body, err)
				}
				return nil
			},
		}},
	})
}

// An image the real node does not have (and cannot pull: there is no registry) fails the apply
// with the kubelet's own reason; a memory limit below what the server needs fails with
// OOMKilled in status.
func TestAccRealNode_PerformerFailures(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNode(t, c)
	ns := testNamespace(t, c, "acc-realpf")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      realPerformerConfig(ns, "real-noimage-"+rand.String(4), "ghcr.io/gantry-dev/not-built-here:0.0.1", ""),
				ExpectError: regexp.MustCompile(`(?s)(ErrImagePull|ImagePullBackOff).*not-built-here`),
			},
			{
				Config: realPerformerConfig(ns, "real-oom-"+rand.String(4), testPerformerImage,
					`  env = { PERFORMER_ALLOC_MB = "96" }
  resources = { limits = { memory = "32Mi" }, requests = { memory = "32Mi" } }`),
				ExpectError: regexp.MustCompile(`(?s)OOMKilled`),
			},
		},
	})
}

// A CPU-only inference workspace on the real node with the test model server: Ready once the
// server listens, and the endpoint Terraform outputs serves an OpenAI-compatible /v1/models
// naming the model, and /v1/chat/completions echoes.
func TestAccRealNode_WorkspaceModelServer(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNode(t, c)
	ns := testNamespace(t, c, "acc-realw")
	name := "real-" + rand.String(5)
	cfg := realNodeEchoWorkspace(name, ns) + `output "endpoint" { value = gantry_workspace.real.endpoint }
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gantry_workspace.real", tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
			},
			Check: func(s *terraform.State) error {
				out := s.RootModule().Outputs["endpoint"]
				if out == nil {
					return fmt.Errorf("no endpoint output")
				}
				svc := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(fmt.Sprint(out.Value), "http://"), "https://"), ".", 2)[0]
				ep := endpointAddress(t, c, ns, svc)
				body, err := httpGet(ep, "/v1/models")
				if err != nil || !strings.Contains(body, `"gantry-echo"`) {
					return fmt.Errorf("GET %s/v1/models (endpoint %v) answered %q, %v", ep, out.Value, body, err)
				}
				resp, err := http.Post("http://"+ep+"/v1/chat/completions", "application/json",
					strings.NewReader(`{"model":"gantry-echo","messages":[{"role":"user","content":"hello from terraform"}]}`))
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(b), "hello from terraform") {
					return fmt.Errorf("chat completion did not echo: %s %s", resp.Status, b)
				}
				return nil
			},
		}},
	})
}

// A package with a service interrupt on the real node: the node is cordoned, a real Pod running
// there (not the reconciler's own, not tolerating the cordon) is evicted, the interrupt stage
// runs (its script records the type and services on the host), then post-interrupt, and the
// node is uncordoned once the set is complete.
func TestAccRealNode_InterruptDrainsAndUncordons(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNode(t, c)
	dir := hostScratch(t)
	ns := testNamespace(t, c, "acc-realdrain")
	set := "acc-reali-" + rand.String(5)
	ctx := context.Background()
	victim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:    realNodeName,
			Tolerations: []corev1.Toleration{{Key: "gantry.dev/real-node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "sleep", Image: "docker.io/library/busybox:1.36", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", "3600"}}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	cfg := realPackageSetConfigWith(set, dir, "1.0.0", "a", "", `    interrupt = { type = "service", services = ["gantry-demo"] }`)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				if _, err := c.Core.CoreV1().Pods(ns).Create(ctx, victim, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(time.Minute)
				for {
					p, err := c.Core.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
					if err == nil && p.Status.Phase == corev1.PodRunning {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("the victim Pod did not run on the real node: %v %+v", err, p.Status)
					}
					time.Sleep(500 * time.Millisecond)
				}
			},
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gantry_package_set.real", tfjsonpath.New("status"), knownvalue.StringExact("complete")),
			},
			Check: resource.ComposeTestCheckFunc(
				checkHostFile(dir, "tool.interrupts", "interrupt service gantry-demo"),
				checkHostFile(dir, "tool.log", "config-check 1.0.0\n"),
				checkHostFile(dir, "tool.post-interrupt", ""),
				func(*terraform.State) error {
					if !strings.Contains(hostFile(dir, "tool.log"), "post-interrupt 1.0.0") {
						return fmt.Errorf("no post-interrupt in the stage log %q", hostFile(dir, "tool.log"))
					}
					p, err := c.Core.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
					if err == nil && p.DeletionTimestamp == nil {
						return fmt.Errorf("the victim Pod was not drained from the real node: phase %s", p.Status.Phase)
					}
					n, err := c.Core.CoreV1().Nodes().Get(ctx, realNodeName, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if n.Spec.Unschedulable {
						return fmt.Errorf("the real node is still cordoned after the set completed")
					}
					return nil
				},
			),
		}},
	})
}

// Health checks against a real server on the real node: a test performer server in the node's
// network namespace (hostNetwork, on a port of its own), an httpGet check on
// http://$(NODE_IP):<port>/healthz (the kubelet expands NODE_IP from the pod's host IP) and an
// exec check in the busybox image both pass in every soak round; after an upgrade whose
// httpGet check points at a closed port, the apply fails naming the check, quoting wget.
func TestAccRealNode_HealthChecks(t *testing.T) {
	skipUnlessAcc(t)
	// Its first run on the real node found the test image's wget (Debian 12's busybox 1.35)
	// segfaulting on `-T`, the timeout every httpGet check passes; the image now carries the
	// pinned busybox 1.37 (tools/install.sh busybox).
	c := testClients(t)
	realNode(t, c)
	dir := hostScratch(t)
	ns := testNamespace(t, c, "acc-realhc")
	set := "acc-realh-" + rand.String(5)
	port := 19000 + rand.Intn(900)
	ctx := context.Background()
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "health-server", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: realNodeName, HostNetwork: true,
			Tolerations: []corev1.Toleration{{Key: "gantry.dev/real-node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "server", Image: testPerformerImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Env: []corev1.EnvVar{{Name: "GRPC_PORT", Value: strconv.Itoa(port)}}}},
		},
	}
	if _, err := c.Core.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	checks := func(checkPort int) string {
		return fmt.Sprintf(`
  rollout = {
    soak_duration       = "3s"
    soak_check_interval = "1s"
    health_checks = [
      { name = "http", http_get = { url = "http://$(NODE_IP):%d/healthz" }, timeout = "5s" },
      { name = "exec", image = "docker.io/library/busybox:1.36", command = ["sh", "-c", "test -n \"$NODE_IP\" && test -f /etc/passwd"] },
    ]
  }`, checkPort)
	}
	config := func(version string, checkPort int) string {
		return strings.Replace(realPackageSetConfig(set, dir, version, "a", ""), "  timeouts = {", checks(checkPort)+"\n  timeouts = {", 1)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { endpointReady(t, fmt.Sprintf("%s:%d", realNode(t, c), port)) },
				Config:    config("1.0.0", port),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_package_set.real", tfjsonpath.New("status"), knownvalue.StringExact("complete")),
				},
			},
			{
				Config:      config("1.1.0", port+1),
				ExpectError: regexp.MustCompile(`(?s)health\s+check\s+http\s+failed.*(refused|wget)`),
			},
		},
	})
}

// endpointReady waits until addr answers HTTP (a server just started).
func endpointReady(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := httpGet(addr, "/healthz"); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s did not answer /healthz: %v", addr, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
