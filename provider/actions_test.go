package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

func actionsConfig(ns, pool string) string {
	return requiredGantry + fmt.Sprintf(`
provider "gantry" {}

resource "gantry_performer" "p" {
  name      = "perf"
  namespace = %[1]q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}

resource "gantry_package_set" "s" {
  name          = %[2]q
  node_selector = { "gantry.dev/test-pool" = %[2]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{ name = "dcgm-tool", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-tool:1" }]
}

action "gantry_performer_restart" "perf" {
  config {
    name      = gantry_performer.p.name
    namespace = %[1]q
    timeout   = "3m"
  }
}

action "gantry_package_set_rerun" "node1" {
  config {
    name    = gantry_package_set.s.name
    nodes   = ["%[2]s-1"]
    timeout = "3m"
  }
}

action "gantry_package_set_rerun" "cpu" {
  config {
    name  = gantry_package_set.s.name
    nodes = ["gantry-cpu-0"]
  }
}

action "gantry_package_set_resume" "s" {
  config {
    name    = gantry_package_set.s.name
    timeout = "3m"
  }
}

action "gantry_performer_restart" "missing" {
  config {
    name      = "no-such-performer"
    namespace = %[1]q
  }
}
`, ns, pool)
}

// Actions (Terraform >= 1.14), each invoked with `terraform apply -invoke` and its
// real effect checked on the cluster: restart replaces the performer's Pod (new UID, Running);
// rerun runs the set again on the chosen node only (its record is new, the other nodes' are
// untouched) and is refused for a node the set has no record on; resume removes the pause
// annotation of a set an operator paused and returns once it is complete. Afterwards the
// configuration plans no change.
func TestAccActions(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.14.0", "actions")
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-act")
	pool := "acc-act-" + rand.String(5)
	accNodes(t, c, pool, 3)
	cli := newCLI(t)
	dir := cli.workdir(t, actionsConfig(ns, pool))
	run := func(args ...string) (string, int) {
		t.Helper()
		out, code := cli.run(t, dir, append(args, "-input=false", "-no-color")...)
		t.Logf("terraform %s: exit %d\n%s", strings.Join(args, " "), code, out)
		return out, code
	}
	if _, code := run("apply", "-auto-approve"); code != 0 {
		t.Fatal("apply failed")
	}

	// Restart.
	pods := c.Core.CoreV1().Pods(ns)
	before, err := pods.Get(context.Background(), performer.ObjectName("perf"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, code := run("apply", "-auto-approve", "-invoke=action.gantry_performer_restart.perf"); code != 0 {
		t.Fatal("restart action failed")
	}
	after, err := pods.Get(context.Background(), performer.ObjectName("perf"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID == before.UID || after.Annotations[v1alpha1.AnnotationRestartedAt] == "" {
		t.Errorf("restart: Pod UID %s → %s, annotation %q: the Pod was not replaced", before.UID, after.UID, after.Annotations[v1alpha1.AnnotationRestartedAt])
	}

	// Rerun on node 1 only.
	record := func(node string) string {
		n, err := c.Core.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Annotations[v1alpha1.AnnotationNodeStatePrefix+pool]
	}
	r0, r1 := record(pool+"-0"), record(pool+"-1")
	if r1 == "" {
		t.Fatalf("node %s-1 has no record of the set", pool)
	}
	time.Sleep(1100 * time.Millisecond) // a new record's timestamps differ (second resolution)
	if _, code := run("apply", "-auto-approve", "-invoke=action.gantry_package_set_rerun.node1"); code != 0 {
		t.Fatal("rerun action failed")
	}
	if got := record(pool + "-1"); got == r1 || got == "" {
		t.Errorf("rerun: node %s-1's record did not change:\n%s", pool, got)
	}
	if got := record(pool + "-0"); got != r0 {
		t.Errorf("rerun touched node %s-0:\n%s\n→\n%s", pool, r0, got)
	}
	out, code := run("apply", "-auto-approve", "-invoke=action.gantry_package_set_rerun.cpu")
	if code == 0 || !strings.Contains(out, "PackageSet Rerun Refused") || !strings.Contains(out, "gantry-cpu-0 holds no record") {
		t.Errorf("rerun on a node outside the set: exit %d, want a refusal naming gantry-cpu-0", code)
	}
	out, code = run("apply", "-auto-approve", "-invoke=action.gantry_performer_restart.missing")
	if code == 0 || !strings.Contains(out, "Performer Not Found") || !strings.Contains(out, ns+"/no-such-performer") {
		t.Errorf("restart of a performer that does not exist: exit %d, want \"Performer Not Found\" naming it", code)
	}

	// Resume a set an operator paused.
	sets := c.Dynamic.Resource(wait.PackageSet.GVR)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, v1alpha1.AnnotationPause)
	if _, err := sets.Patch(context.Background(), pool, k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	if err := kwait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := sets.Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s, _, _ := unstructured.NestedString(u.Object, "status", "status")
		return s == string(v1alpha1.StatusPaused), nil
	}); err != nil {
		t.Fatalf("the set did not report paused after the annotation: %v", err)
	}
	if _, code := run("apply", "-auto-approve", "-invoke=action.gantry_package_set_resume.s"); code != 0 {
		t.Fatal("resume action failed")
	}
	u, err := sets.Get(context.Background(), pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", "status")
	if _, paused := u.GetAnnotations()[v1alpha1.AnnotationPause]; paused || s != string(v1alpha1.StatusComplete) {
		t.Errorf("after resume: annotations %v, status %q; want no pause annotation and complete", u.GetAnnotations(), s)
	}

	if _, code := run("plan", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after the actions: exit %d, want 0 (no changes)", code)
	}
}

func clearQuarantineConfig(pool, version string, chaos bool) string {
	labels := ""
	if chaos { // kwok fails every stage pod with this label
		labels = `pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" }`
	}
	return requiredGantry + fmt.Sprintf(`
provider "gantry" {}

resource "gantry_package_set" "s" {
  name                   = %[1]q
  node_selector          = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  interruption_budget    = { count = 1 }
  rollout                = { on_health_failure = "rollback" }
  packages = [{
    name    = "dcgm-tool"
    version = %[2]q
    image   = "ghcr.io/gantry-dev/dcgm-tool:1"
    %[3]s
  }]
  timeouts = { create = "3m", update = "3m" }
}

action "gantry_package_set_clear_quarantine" "all" {
  config {
    name    = gantry_package_set.s.name
    timeout = "3m"
  }
}

action "gantry_package_set_clear_quarantine" "wrong" {
  config {
    name     = gantry_package_set.s.name
    versions = ["dcgm-tool@9.9.9"]
  }
}
`, pool, version, labels)
}

// gantry_package_set_clear_quarantine (Terraform >= 1.14): version 1.1.0 fails on the first
// node (kwok's chaos label), is rolled back and quarantined, and the apply fails saying so. The
// cause is fixed without changing the version: the apply still fails (quarantined). Asking to
// lift a key the set does not list is refused naming the listed one; lifting every quarantine
// makes the reconciler run 1.1.0 on both nodes, and the action returns once the set is
// complete. The next plan has no changes.
func TestAccActionClearQuarantine(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.14.0", "actions")
	testAccPreCheck(t)
	c := testClients(t)
	pool := "acc-cq-" + rand.String(5)
	accNodes(t, c, pool, 2)
	cli := newCLI(t)
	dir := cli.workdir(t, clearQuarantineConfig(pool, "1.0.0", false))
	run := func(args ...string) (string, int) {
		t.Helper()
		out, code := cli.run(t, dir, append(args, "-input=false", "-no-color")...)
		t.Logf("terraform %s: exit %d\n%s", strings.Join(args, " "), code, out)
		return out, code
	}
	if _, code := run("apply", "-auto-approve"); code != 0 {
		t.Fatal("apply 1.0.0 failed")
	}
	writeMain(t, dir, clearQuarantineConfig(pool, "1.1.0", true))
	if out, code := run("apply", "-auto-approve"); code == 0 || !strings.Contains(out, "dcgm-tool@1.1.0") {
		t.Fatalf("apply of the failing 1.1.0: exit %d, want a failure naming the quarantined dcgm-tool@1.1.0", code)
	}
	writeMain(t, dir, clearQuarantineConfig(pool, "1.1.0", false))
	if out, code := run("apply", "-auto-approve"); code == 0 || !strings.Contains(out, "quarantined") {
		t.Fatalf("apply of the fixed 1.1.0 before the lift: exit %d, want a failure saying it is quarantined", code)
	}
	out, code := run("apply", "-auto-approve", "-invoke=action.gantry_package_set_clear_quarantine.wrong")
	if code == 0 || !strings.Contains(out, "Version Not Quarantined") || !strings.Contains(out, "dcgm-tool@1.1.0") {
		t.Errorf("lifting a key not listed: exit %d, want a refusal naming dcgm-tool@1.1.0", code)
	}
	if _, code := run("apply", "-auto-approve", "-invoke=action.gantry_package_set_clear_quarantine.all"); code != 0 {
		t.Fatal("clear quarantine action failed")
	}
	sets := c.Dynamic.Resource(wait.PackageSet.GVR)
	u, err := sets.Get(context.Background(), pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status, _, _ := unstructured.NestedString(u.Object, "status", "status")
	q, _, _ := unstructured.NestedStringSlice(u.Object, "status", "quarantinedVersions")
	if status != string(v1alpha1.StatusComplete) || len(q) != 0 {
		t.Errorf("after the lift: status %q, quarantined %v; want complete and none", status, q)
	}
	for i := 0; i < 2; i++ {
		nodeState, _, _ := unstructured.NestedString(u.Object, "status", "nodeState", fmt.Sprintf("%s-%d", pool, i), "dcgm-tool", "version")
		if nodeState != "1.1.0" {
			t.Errorf("node %s-%d runs %q, want 1.1.0", pool, i, nodeState)
		}
	}
	if _, code := run("plan", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after the lift: exit %d, want 0 (no changes)", code)
	}
}

// writeMain replaces main.tf in dir with config.
func writeMain(t *testing.T, dir, config string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
}
