package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Interrupted runs converge. The real CLI runs as a subprocess with the
// provider built from this tree (dev_overrides), applying five performers pinned to a node of
// their own that no kubelet runs yet (kwok does not manage it: capacity that is not there yet),
// so their Pods are bound but never start, the performers stay Creating and the apply is
// waiting when it is interrupted:
//   - SIGINT to the process group (what Ctrl-C does): the apply ends with every performer in
//     state, none tainted;
//   - SIGKILL to the process group: the objects exist, the state has none of them.
//
// Then kwok takes the node over (its Pods turn Running) and a plain re-apply of each directory
// converges: no replacement (same UIDs), no "Already Exists", every performer Running, and a
// following plan is empty. A kubectl-created performer of a configured name is still refused,
// naming it and the import command.
func TestAccPerformer_interruptedApplyConverges(t *testing.T) {
	skipUnlessAcc(t)
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-intr")
	pool := "acc-slow-" + rand.String(5)
	slowNode(t, c, pool)
	cli := newCLI(t)

	const n = 5
	dirs := map[string]string{}
	for _, set := range []string{"int", "kill"} {
		dirs[set] = cli.workdir(t, interruptConfig(ns, pool, set, n))
	}

	// SIGINT mid-apply: state saved, nothing tainted.
	out := cli.interruptApply(t, c, dirs["int"], ns, "int", n, syscall.SIGINT)
	t.Logf("interrupted apply (SIGINT):\n%s", out)
	st := readState(t, dirs["int"])
	if len(st) != n {
		t.Fatalf("after SIGINT the state holds %d performers, want %d: %v", len(st), n, st)
	}
	for addr, status := range st {
		if status == "tainted" {
			t.Errorf("after SIGINT %s is tainted; an interrupted wait must not taint", addr)
		}
	}
	if !regexp.MustCompile(`Performer Apply Interrupted`).MatchString(out) {
		t.Errorf("the interrupted apply does not warn \"Performer Apply Interrupted\"")
	}

	// While they are still not Running, the plan is an in-place update of all five that waits
	// again: exit code 2, no replacement.
	out, code := cli.run(t, dirs["int"], "plan", "-detailed-exitcode", "-input=false", "-no-color")
	if code != 2 || !strings.Contains(out, fmt.Sprintf("Plan: 0 to add, %d to change, 0 to destroy.", n)) {
		t.Errorf("plan after SIGINT: exit %d, want 2 and %d in-place updates:\n%s", code, n, out)
	}

	// SIGKILL mid-apply: objects written, not in state.
	out = cli.interruptApply(t, c, dirs["kill"], ns, "kill", n, syscall.SIGKILL)
	t.Logf("killed apply (SIGKILL):\n%s", out)
	if st := readState(t, dirs["kill"]); len(st) != 0 {
		t.Logf("after SIGKILL the state holds %v (the CLI had persisted some)", st)
	}
	uids := performerUIDs(t, c, ns, n)

	// Capacity appears: the node is replaced by one kwok simulates (kwok does not take over a
	// node it skipped when the annotation is added later); the Pods bound to the old one are
	// garbage-collected, the reconciler re-creates them and they turn Running there. The
	// performers are touched so the reconciler passes at once.
	if err := c.Core.CoreV1().Nodes().Delete(context.Background(), pool, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kwait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Core.CoreV1().Nodes().Get(ctx, pool, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("node %s not gone: %v", pool, err)
	}
	createNode(t, c, pool, true)
	for name := range uids {
		patch := []byte(`{"metadata":{"annotations":{"gantry.dev/acc-nudge":"1"}}}`)
		if _, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, set := range []string{"int", "kill"} {
		out, code := cli.run(t, dirs[set], "apply", "-auto-approve", "-input=false", "-no-color")
		t.Logf("re-apply %s:\n%s", set, out)
		if code != 0 {
			t.Fatalf("re-apply of %s exited %d", set, code)
		}
		if strings.Contains(out, "Already Exists") {
			t.Errorf("re-apply of %s reports Already Exists", set)
		}
		if m := regexp.MustCompile(`(\d+) added, (\d+) changed, (\d+) destroyed`).FindStringSubmatch(out); m == nil || m[3] != "0" {
			t.Errorf("re-apply of %s: want nothing destroyed, got %v", set, m)
		}
		if _, code := cli.run(t, dirs[set], "plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
			t.Errorf("plan after the re-apply of %s exited %d, want 0 (no changes)", set, code)
		}
	}
	after := performerUIDs(t, c, ns, n)
	for name, uid := range uids {
		if after[name] != uid {
			t.Errorf("performer %s was replaced: UID %s, want %s", name, after[name], uid)
		}
	}
	for _, set := range []string{"int", "kill"} {
		for i := 0; i < n; i++ {
			u, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), fmt.Sprintf("%s-%d", set, i), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ph, _, _ := unstructured.NestedString(u.Object, "status", "phase"); ph != "Running" {
				t.Errorf("performer %s is %v, want Running", u.GetName(), ph)
			}
		}
	}

	// An object of a configured name that Terraform did not write is refused, naming it.
	fdir := cli.workdir(t, interruptConfig(ns, pool, "foreign", 1))
	obj := map[string]interface{}{"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer",
		"metadata": map[string]interface{}{"name": "foreign-0", "namespace": ns},
		"spec":     map[string]interface{}{"image": "ghcr.io/layr-labs/hello-performer:v1.0.0"}}
	if _, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	out, code = cli.run(t, fdir, "apply", "-auto-approve", "-input=false", "-no-color")
	if code == 0 || !regexp.MustCompile(`(?s)Performer Already Exists.*`+ns+`/foreign-0.*terraform import`).MatchString(out) {
		t.Errorf("apply over a kubectl-created performer: exit %d, want an Already Exists error naming it:\n%s", code, out)
	}
}

// slowNode creates a node of its own for the test's performers (tainted so that only they,
// which tolerate the taint, land there), without kwok's kwok.x-k8s.io/node annotation: no
// simulated kubelet runs it (hack/cluster/kwokctl.yaml), so Pods bound to it do not start.
// Deleted at cleanup.
func slowNode(t *testing.T, c *kube.Clients, pool string) string {
	t.Helper()
	createNode(t, c, pool, false)
	t.Cleanup(func() { _ = c.Core.CoreV1().Nodes().Delete(context.Background(), pool, metav1.DeleteOptions{}) })
	return pool
}

// createNode creates the tainted node pool (see slowNode), simulated by kwok when simulated.
func createNode(t *testing.T, c *kube.Clients, pool string, simulated bool) {
	t.Helper()
	alloc := corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("64"), corev1.ResourceMemory: k8sresource.MustParse("512Gi"), corev1.ResourcePods: k8sresource.MustParse("110")}
	ann := map[string]string{"node.alpha.kubernetes.io/ttl": "0"}
	if simulated {
		ann["kwok.x-k8s.io/node"] = "fake"
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: pool, Annotations: ann,
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": pool, "gantry.dev/test-pool": pool}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "gantry.dev/test-pool", Value: pool, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}
	if _, err := c.Core.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", pool, err)
	}
}

func interruptConfig(ns, pool, set string, n int) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

provider "gantry" {}

resource "gantry_performer" "p" {
  count         = %[4]d
  name          = "%[3]s-${count.index}"
  namespace     = %[1]q
  image         = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  node_selector = { "gantry.dev/test-pool" = %[2]q }
  tolerations = [
    { key = "gantry.dev/test-pool", operator = "Exists" },
    { key = "node.kubernetes.io/not-ready", operator = "Exists" },
    { key = "node.kubernetes.io/unreachable", operator = "Exists" },
  ]
  timeouts = { create = "10m", update = "10m" }
}
`, ns, pool, set, n)
}

// cli runs the Terraform CLI of TF_ACC_TERRAFORM_PATH with the provider built from this tree.
type cli struct {
	terraform string
	env       []string
}

// newCLI builds the provider from this tree into a temporary directory and writes a CLI
// configuration whose dev_overrides point registry.terraform.io/gantry-dev/gantry at it (no
// terraform init, no registry).
func newCLI(t *testing.T) *cli {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "terraform-provider-gantry"), ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rc := filepath.Join(bin, "terraformrc")
	// Both registry hosts: the source gantry-dev/gantry resolves to registry.terraform.io under
	// Terraform and to registry.opentofu.org under OpenTofu.
	cfg := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"registry.terraform.io/gantry-dev/gantry\" = %[1]q\n    \"registry.opentofu.org/gantry-dev/gantry\" = %[1]q\n  }\n  direct {}\n}\n", bin)
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_LOG=")
	return &cli{terraform: os.Getenv("TF_ACC_TERRAFORM_PATH"), env: env}
}

// workdir writes config as main.tf into a new directory and destroys what it holds at cleanup.
func (c *cli) workdir(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, code := c.run(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color"); code != 0 {
			t.Logf("destroy in %s exited %d:\n%s", dir, code, out)
		}
	})
	return dir
}

func (c *cli) command(dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(c.terraform, args...)
	cmd.Dir, cmd.Env = dir, c.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// run runs terraform args in dir and returns its output and exit code.
func (c *cli) run(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd, out := c.command(dir, args...)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("terraform %v: %v", args, err)
	}
	return out.String(), 0
}

// interruptApply starts terraform apply in dir, waits until the n performers <set>-<i> exist
// and the reconciler has reported on each (the apply is then waiting on them), sends sig to
// the CLI's process group (the provider plugin included, as a terminal's Ctrl-C or a killed
// CI job does) and waits for it to exit. It returns the CLI's output.
func (c *cli) interruptApply(t *testing.T, kc *kube.Clients, dir, ns, set string, n int, sig syscall.Signal) string {
	t.Helper()
	cmd, out := c.command(dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Whatever happens to the test, no terraform or provider process of this group survives it.
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		seen := 0
		for i := 0; i < n; i++ {
			u, err := kc.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), fmt.Sprintf("%s-%d", set, i), metav1.GetOptions{})
			if err == nil {
				if _, ok, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); ok {
					seen++
				}
			}
		}
		if seen == n {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("terraform apply ended (%v) before it could be interrupted:\n%s", err, out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("the %d performers of %s were not all written and reconciled within 5m:\n%s", n, set, out.String())
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("terraform exited after %v: %v", sig, err) // an interrupted apply exits non-zero
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("terraform did not exit within 3m of %v:\n%s", sig, out.String())
	}
	return out.String()
}

// readState returns address → status ("" or "tainted") of every resource instance in dir's
// local state.
func readState(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
	if os.IsNotExist(err) {
		return map[string]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]string{} // the CLI was killed before it wrote any state
	}
	var st struct {
		Resources []struct {
			Type, Name string
			Instances  []struct {
				IndexKey interface{} `json:"index_key"`
				Status   string      `json:"status"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range st.Resources {
		for _, i := range r.Instances {
			out[fmt.Sprintf("%s.%s[%v]", r.Type, r.Name, i.IndexKey)] = i.Status
		}
	}
	return out
}

// performerUIDs returns name → UID of the performers int-<i> and kill-<i> in ns.
func performerUIDs(t *testing.T, c *kube.Clients, ns string, n int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, set := range []string{"int", "kill"} {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-%d", set, i)
			u, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("performer %s: %v", name, err)
			}
			out[name] = string(u.GetUID())
		}
	}
	return out
}
