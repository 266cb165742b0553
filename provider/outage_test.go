package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// etcdOutage is how long TestAccApplyWhileEtcdDown keeps etcd stopped: longer than the API
// server's own wait on etcd (a write then fails with "Timeout: request did not complete within
// requested timeout", after about 34 s), so the apply must retry a failed write to succeed.
const etcdOutage = 50 * time.Second

// localEtcd returns the pid of the local cluster's etcd (hack/cluster.sh, kwokctl's binary
// runtime keeps it in kwok/clusters/<name>/pids/etcd.pid beside the kubeconfig); the test is
// skipped against any other cluster.
func localEtcd(t *testing.T) int {
	t.Helper()
	kc := os.Getenv("GANTRY_TEST_KUBECONFIG")
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(kc), "kwok", "clusters", "*", "pids", "etcd.pid"))
	if kc == "" || len(files) != 1 {
		t.Skip("not the local cluster (hack/cluster.sh): its etcd cannot be stopped")
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		t.Skipf("etcd pid file %s: %q is not a running process", files[0], b)
	}
	return pid
}

// An apply that starts while etcd is down (issue 14 §1): etcd is stopped (SIGSTOP: it answers
// nothing, as a crashed or partitioned etcd) before `terraform apply` of two performers starts
// and resumed etcdOutage later. The API server answers the provider's first request
// (/version needs no etcd) but every write fails after ~34 s with its Timeout error; the provider
// retries the writes within the create timeout and the apply succeeds, both performers Running.
// The time from etcd's return to the apply's end is logged (make bench measures the resume).
// Run on one CLI only (Terraform 1.14): the retry is the provider's, not the CLI's.
func TestAccApplyWhileEtcdDown(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.14.0", "etcd outage (run on one CLI)")
	testAccPreCheck(t)
	pid := localEtcd(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-etcd")
	cli := newCLI(t)
	dir := cli.workdir(t, requiredGantry+fmt.Sprintf(`
provider "gantry" {}

resource "gantry_performer" "p" {
  for_each  = toset(["a", "b"])
  name      = each.key
  namespace = %q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  timeouts  = { create = "5m" }
}
`, ns))

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("resuming etcd: %v", err)
			}
		}
	}
	t.Cleanup(resume) // never leave the cluster's etcd stopped
	cmd, out := cli.command(dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		resume()
		t.Fatalf("the apply ended while etcd was stopped (%v):\n%s", err, out)
	case <-time.After(etcdOutage):
	}
	resume()
	back := time.Now()
	err := <-done
	t.Logf("apply ended %.1fs after etcd was back (etcd stopped %s); exit %v\n%s", time.Since(back).Seconds(), etcdOutage, err, out)
	if err != nil {
		t.Fatalf("apply with etcd down for %s failed: %v", etcdOutage, err)
	}
	for _, name := range []string{"a", "b"} {
		u, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Running" {
			t.Errorf("performer %s phase %q, want Running", name, phase)
		}
	}
}
