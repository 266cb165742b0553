package provider

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/echoprovider"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// The acceptance tests of gantry_port_forward. The ephemeral result reaches the state only
// through terraform-plugin-testing's echo provider (its configuration takes the ephemeral
// value, its echo resource stores it), the documented way to test an ephemeral resource.

// echoFactories are the provider factories plus the echo provider.
var echoFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"gantry": testAccProtoV6ProviderFactories["gantry"],
	"echo":   echoprovider.NewProviderServer(),
}

// skipWithoutEphemeral skips unless the CLI has ephemeral resources: Terraform 1.10 or
// OpenTofu 1.11 and later.
func skipWithoutEphemeral(t *testing.T) {
	t.Helper()
	v, tofu := cliVersion(t)
	minVersion, cli := "1.10.0", "Terraform"
	if tofu {
		minVersion, cli = "1.11.0", "OpenTofu"
	}
	if v.LessThan(version.Must(version.NewVersion(minVersion))) {
		t.Skipf("ephemeral resources need Terraform 1.10 or OpenTofu 1.11 or later; this CLI is %s %s", cli, v)
	}
}

// portForwardNamespace is testNamespace for a test that forwards to pods there: with
// GANTRY_TEST_RUNNER_SA (the least-privilege runner's pass) it also binds the runner's optional
// ClusterRole gantry-terraform-runner-port-forward (config/terraform-runner) there, as a
// platform team does for a configuration that uses gantry_port_forward.
func portForwardNamespace(t *testing.T, c *kube.Clients, prefix string) string {
	t.Helper()
	ns := testNamespace(t, c, prefix)
	sa := os.Getenv("GANTRY_TEST_RUNNER_SA")
	if sa == "" {
		return ns
	}
	saNS, saName, _ := strings.Cut(sa, "/")
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gantry-terraform-runner-port-forward", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gantry-terraform-runner-port-forward"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: saNS, Name: saName}},
	}
	if _, err := c.Core.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// portForwardEcho is a gantry_port_forward "p" with body, whose result the echo resource
// echoName stores.
func portForwardEcho(body, echoName string) string {
	return fmt.Sprintf(`
ephemeral "gantry_port_forward" "p" {
%s
}
provider "echo" {
  data = ephemeral.gantry_port_forward.p
}
resource "echo" %q {}
`, body, echoName)
}

// A performer on the real node and a forward to it: the forward opens during apply (its
// pod_name is known only then), check_path's GET through it gets the test performer's own
// answer naming its pod, and once the apply is over the forward is gone: its port refuses
// connections and no goroutine of it is left in the provider (which runs in this test
// process). A second step pins local_port. A forward opened beside the run re-opens on the
// same local port when its pod is deleted and the reconciler replaces it.
func TestAccPortForward_Performer(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNodeReady(t, c)
	skipWithoutEphemeral(t)
	ns := portForwardNamespace(t, c, "acc-pf")
	name := "pf-" + rand.String(5)
	pod := "performer-" + name
	forward := `  performer = {
    name      = gantry_performer.real.name
    namespace = gantry_performer.real.namespace
  }
  pod_name   = gantry_performer.real.pod_name
  check_path = "/"`
	fixed := freeLocalPort(t)
	data := tfjsonpath.New("data")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: echoFactories,
		Steps: []resource.TestStep{
			{
				Config: realPerformerConfig(ns, name, testPerformerImage, "") + portForwardEcho(forward, "forward"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("pod_name"), knownvalue.StringExact(pod)),
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("remote_port"), knownvalue.Int64Exact(9090)),
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("local_address"), knownvalue.StringRegexp(regexp.MustCompile(`^127\.0\.0\.1:[0-9]+$`))),
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("url"), knownvalue.StringRegexp(regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+$`))),
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("check_response").AtMapKey("status_code"), knownvalue.Int64Exact(200)),
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("check_response").AtMapKey("body"),
						knownvalue.StringExact(fmt.Sprintf("gantry test performer %s version 1.0.0\n", pod))),
				},
				Check: resource.ComposeTestCheckFunc(checkForwardClosed(t, "echo.forward"), checkForwardReopens(t, c, ns, name)),
			},
			{
				Config: realPerformerConfig(ns, name, testPerformerImage, "") + portForwardEcho(forward+fmt.Sprintf("\n  local_port = %d", fixed), "fixed"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("echo.fixed", data.AtMapKey("local_address"), knownvalue.StringExact(fmt.Sprintf("127.0.0.1:%d", fixed))),
					statecheck.ExpectKnownValue("echo.fixed", data.AtMapKey("check_response").AtMapKey("status_code"), knownvalue.Int64Exact(200)),
				},
				Check: checkForwardClosed(t, "echo.fixed"),
			},
		},
	})
}

// An inference workspace on the real node with the test model server, then a forward to it
// (the workspace exists by then, so the forward opens during plan and apply): the Service's
// named port resolves to the model server's, and check_path's GET of /v1/models answers with
// the model.
func TestAccPortForward_Workspace(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNodeReady(t, c)
	skipWithoutEphemeral(t)
	ns := portForwardNamespace(t, c, "acc-pfw")
	name := "pfw-" + rand.String(5)
	ws := realNodeEchoWorkspace(name, ns)
	data := tfjsonpath.New("data")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: echoFactories,
		Steps: []resource.TestStep{
			{Config: ws},
			{
				Config: ws + portForwardEcho(fmt.Sprintf(`  workspace  = { name = %q, namespace = %q }
  check_path = "/v1/models"`, name, ns), "forward"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("pod_name"), knownvalue.StringRegexp(regexp.MustCompile("^workspace-"+name+"-"))),
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("remote_port"), knownvalue.Int64Exact(8000)),
					statecheck.ExpectKnownValue("echo.forward", data.AtMapKey("check_response").AtMapKey("body"), knownvalue.StringRegexp(regexp.MustCompile(`"gantry-echo"`))),
				},
				Check: checkForwardClosed(t, "echo.forward"),
			},
		},
	})
}

// freeLocalPort is a port on 127.0.0.1 nothing listens on now.
func freeLocalPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a TCP listener's address
}

// checkForwardClosed checks, after the run, that the forward whose result echo resource addr
// stored is closed: its port refuses connections, the provider holds no open forward and no
// goroutine of one is left.
func checkForwardClosed(t *testing.T, addr string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs := s.RootModule().Resources[addr]
		if rs == nil {
			return fmt.Errorf("no %s in state", addr)
		}
		local := rs.Primary.Attributes["data.local_address"]
		if local == "" {
			return fmt.Errorf("%s has no data.local_address: %v", addr, rs.Primary.Attributes)
		}
		if conn, err := net.DialTimeout("tcp", local, 2*time.Second); err == nil {
			conn.Close()
			return fmt.Errorf("%s still accepts connections after the run: the forward was not closed", local)
		}
		if n := openPortForwards(); n != 0 {
			return fmt.Errorf("%d port forwards are still open after the run", n)
		}
		var left []string
		_ = kwait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
			left = portForwardGoroutines()
			return len(left) == 0, nil
		})
		if len(left) > 0 {
			return fmt.Errorf("%d goroutines of the port forward are left after the run:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
		t.Logf("the forward %s is closed: connection refused, no goroutine left", local)
		return nil
	}
}

// portForwardGoroutines are the stacks of this process's goroutines that belong to a port
// forward: client-go's forwarder, its SPDY and WebSocket connections, the provider's own.
func portForwardGoroutines() []string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, mark := range []string{"k8s.io/client-go/tools/portforward.", "github.com/moby/spdystream.", "github.com/gorilla/websocket.",
			"k8s.io/apimachinery/pkg/util/httpstream/", "provider.(*portForward)."} {
			if strings.Contains(g, mark) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// checkForwardReopens opens a forward to the performer beside the run, deletes its pod and
// requires the same local port to answer again from the pod the reconciler creates in its
// place; then waits until the performer is Running again, so the step's next plan is empty.
func checkForwardReopens(t *testing.T, c *kube.Clients, ns, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		f, pod, _, err := openForward(ctx, c, pfTarget{kind: "Performer", name: name, namespace: ns}, 0)
		if err != nil {
			return fmt.Errorf("open a forward beside the run: %w", err)
		}
		defer f.close()
		addr := localAddress(f.local)
		if _, body, err := checkThrough(ctx, addr, "/"); err != nil || !strings.Contains(body, "gantry test performer") {
			return fmt.Errorf("GET / through %s: %q, %v", addr, body, err)
		}
		old, err := c.Core.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := c.Core.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
			return err
		}
		var last string
		var uid string
		if err := kwait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, body, err := checkThrough(ctx, addr, "/")
			last = fmt.Sprintf("answer %q, error %v, re-opened %d times", body, err, f.reopenCount())
			if err != nil || f.reopenCount() == 0 {
				return false, nil
			}
			p, err := c.Core.CoreV1().Pods(ns).Get(ctx, f.currentPod(), metav1.GetOptions{})
			if err == nil {
				uid = string(p.UID)
			}
			return err == nil && p.UID != old.UID && strings.Contains(body, "gantry test performer"), nil
		}); err != nil {
			return fmt.Errorf("the forward on %s did not answer from the new pod after its pod was deleted: %s", addr, last)
		}
		t.Logf("deleted pod %s (uid %s); the forward on %s answers from its replacement (uid %s) after %d re-open(s)",
			pod, old.UID, addr, uid, f.reopenCount())
		waitPerformerRunning(t, c, ns, name)
		return nil
	}
}

// A forward to a target that does not exist, or has no Ready pod, fails Open with an error
// naming the target; without a Ready pod it lists the pods and why each is not Ready (kwok's
// image-pull-failed stage: the kubelet's ErrImagePull / ImagePullBackOff). Both a Performer
// and a pod selector.
func TestAccPortForward_NoReadyPod(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	skipWithoutEphemeral(t)
	ns := portForwardNamespace(t, c, "acc-pfneg")
	name := "pfneg-" + rand.String(4)
	ctx := context.Background()
	// A Performer whose pod never turns Ready (created here: gantry_performer would fail its apply).
	perf := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer",
		"metadata": map[string]interface{}{"name": name, "namespace": ns, "labels": map[string]interface{}{"image-pull-failed.stage.gantry.dev": "true"}},
		"spec":     map[string]interface{}{"image": "ghcr.io/layr-labs/hello-performer:v1.0.0"},
	}}
	if _, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Create(ctx, perf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pf-unready", Namespace: ns, Labels: map[string]string{"app": "pf-unready", "image-pull-failed.stage.gantry.dev": "true"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "ghcr.io/gantry-dev/not-built-here:0.0.1"}}},
	}
	if _, err := c.Core.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodWaiting(t, c, ns, "pf-unready")
	waitPodWaiting(t, c, ns, "performer-"+name)
	performer := func(n string) string {
		return portForwardEcho(fmt.Sprintf("  performer = { name = %q, namespace = %q }", n, ns), "forward")
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: echoFactories,
		Steps: []resource.TestStep{
			{
				Config: performer(name),
				ExpectError: regexp.MustCompile(fmt.Sprintf(`(?s)No Ready Pod To Forward To.*Performer %s/%s has no Ready\s+pod to\s+forward to.*`+
					`performer-%s:\s+phase\s+(Pending|Running).*(ErrImagePull|ImagePullBackOff)`, ns, name, name)),
			},
			{
				Config:      performer("nope"),
				ExpectError: regexp.MustCompile(fmt.Sprintf(`(?s)Port Forward Target Not Found.*The cluster has no Performer\s+%s/nope`, ns)),
			},
			{
				Config: portForwardEcho(fmt.Sprintf(`  pod_selector = { namespace = %q, match_labels = { app = "pf-unready" } }
  remote_port  = 8080`, ns), "forward"),
				ExpectError: regexp.MustCompile(`(?s)No Ready Pod To Forward To.*the pods matching app=pf-unready.*pf-unready:\s+phase\s+(Pending|Running).*` +
					`container\s+server\s+waiting\s+\((ErrImagePull|ImagePullBackOff)\)`),
			},
		},
	})
}

// waitPodWaiting waits until a pod's container waits on an image pull (kwok's chaos stage).
func waitPodWaiting(t *testing.T, c *kube.Clients, ns, name string) {
	t.Helper()
	var last string
	if err := kwait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Core.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = podNotReady(p)
		return strings.Contains(last, "ErrImagePull") || strings.Contains(last, "ImagePullBackOff"), nil
	}); err != nil {
		t.Fatalf("pod %s/%s did not wait on an image pull: %s", ns, name, last)
	}
}
