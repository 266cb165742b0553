package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	kwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// etcdOutage is how long TestAccApplyWhileEtcdDown keeps etcd stopped: longer than the API
// server's own wait on etcd (a write then fails with "Timeout: request did not complete within
// requested timeout", after about 34 s), so the apply must retry a failed write to succeed.
const etcdOutage = 50 * time.Second

// localComponent returns the pid file of a local cluster component (hack/cluster.sh, kwokctl's
// binary runtime keeps them in kwok/clusters/<name>/pids/<component>.pid beside the
// kubeconfig) and its pid; the test is skipped against any other cluster.
func localComponent(t *testing.T, component string) (string, int) {
	t.Helper()
	kc := os.Getenv("GANTRY_TEST_KUBECONFIG")
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(kc), "kwok", "clusters", "*", "pids", component+".pid"))
	if kc == "" || len(files) != 1 {
		t.Skipf("not the local cluster (hack/cluster.sh): its %s cannot be stopped", component)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		t.Skipf("%s pid file %s: %q is not a running process", component, files[0], b)
	}
	return files[0], pid
}

// localEtcd returns the pid of the local cluster's etcd (hack/cluster.sh, kwokctl's binary
// runtime keeps it in kwok/clusters/<name>/pids/etcd.pid beside the kubeconfig); the test is
// skipped against any other cluster.
func localEtcd(t *testing.T) int {
	t.Helper()
	_, pid := localComponent(t, "etcd")
	return pid
}

// An apply that starts while etcd is down: etcd is stopped (SIGSTOP: it answers
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
	clusterRecovered(t, c)
}

// apiServerOutage is how long TestAccWaitResumesAfterAPIServerRestart keeps kube-apiserver
// down: long enough that the shared informer's re-list backoff has grown (and the reconciler,
// with --leader-elect, has lost its Lease and restarted).
const apiServerOutage = 25 * time.Second

// restartable is a process killed by the test and started again with the same command line,
// environment and working directory (read from /proc before the kill).
type restartable struct {
	argv, env    []string
	dir, pidFile string
	logFile      string
}

func snapshotProcess(t *testing.T, pidFile string, pid int) restartable {
	t.Helper()
	read := func(name string) []string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(filepath.Dir(filepath.Dir(pidFile)), "logs", "kube-apiserver.log")
	return restartable{argv: read("cmdline"), env: read("environ"), dir: dir, pidFile: pidFile, logFile: logFile}
}

// start runs the process again, detached, its output appended to its log, and records its pid.
func (r restartable) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(r.logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = r.env, r.dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("restart %s: %v", r.argv[0], err)
	}
	if err := os.WriteFile(r.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Release()
}

// startPod marks the Pod ns/name Running and Ready as a kubelet reports it.
func startPod(t *testing.T, c *kube.Clients, ns, name string) {
	t.Helper()
	// The reconciler may not have (re)created the Pod yet: it too lost the API server (and,
	// with leader election, restarts). Wait for it.
	if err := kwait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Core.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("pod %s/%s was not created within 2 minutes of the API server's return", ns, name)
	}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p, err := c.Core.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		p.Status.Phase, p.Status.PodIP, p.Status.HostIP, p.Status.StartTime = corev1.PodRunning, "10.244.9.9", "10.0.9.9", &now
		p.Status.Conditions = nil
		for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		p.Status.ContainerStatuses = nil
		for _, ctr := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ctr.Name, Image: ctr.Image, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
		_, err = c.Core.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("start pod %s/%s: %v", ns, name, err)
	}
}

// A wait that spans an API server restart: `terraform apply` of two performers
// whose Pods are bound to a node no simulated kubelet runs (so the apply is waiting);
// kube-apiserver is killed (SIGKILL), kept down apiServerOutage and started again with the
// same command line. Once /readyz answers, the Pods are reported Running (startPod) and the
// apply must succeed. The resume time (API server ready → apply done) is logged: the waits
// poll while their watch is broken, so it is seconds, not the informer's re-list backoff. Run
// on one CLI only (Terraform 1.14).
func TestAccWaitResumesAfterAPIServerRestart(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.14.0", "API server restart (run on one CLI)")
	testAccPreCheck(t)
	pidFile, pid := localComponent(t, "kube-apiserver")
	c := testClients(t)
	ns := testNamespace(t, c, "acc-apirestart")
	pool := "acc-api-" + rand.String(5)
	slowNode(t, c, pool)
	cli := newCLI(t)
	dir := cli.workdir(t, interruptConfig(ns, pool, "api", 2))
	cmd, out := cli.command(dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Waiting: both performers exist and the reconciler has reported on them.
	if err := kwait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != 2 {
			return false, nil //nolint:nilerr // not there yet
		}
		for _, u := range l.Items {
			if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "" {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the performers were not created and reported on: %v\n%s", err, out)
	}

	proc := snapshotProcess(t, pidFile, pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() { // never leave the cluster without its API server
		if !restarted {
			proc.start(t)
		}
	})
	time.Sleep(apiServerOutage)
	proc.start(t)
	restarted = true
	if err := kwait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return c.Core.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil, nil
	}); err != nil {
		t.Fatalf("kube-apiserver did not come back: %v", err)
	}
	ready := time.Now()
	// The Pods start: written here as a kubelet would (kwok's own watches are still in their
	// re-list backoff after the restart, which is kwok's, not what this test measures).
	for i := 0; i < 2; i++ {
		startPod(t, c, ns, fmt.Sprintf("performer-api-%d", i))
	}
	select {
	case err := <-done:
		t.Logf("apply ended %.1fs after kube-apiserver was ready again (down %s); exit %v\n%s", time.Since(ready).Seconds(), apiServerOutage, err, out)
		if err != nil {
			t.Errorf("apply across an API server restart failed: %v", err)
		}
	case <-time.After(5 * time.Minute):
		t.Errorf("apply did not end within 5 minutes of the API server's return:\n%s", out)
	}
	clusterRecovered(t, c)
	// No kubelet runs the node, so the Pods would never finish terminating and the destroy
	// would wait its whole delete timeout (5 min; handing the node to kwok after the restart
	// did not end them): delete them as a kubelet would once their containers stop, while the
	// destroy runs.
	stop := finishTerminatingPods(c, ns)
	out2, code := cli.run(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
	stop()
	if code != 0 {
		t.Errorf("destroy after the restart exited %d:\n%s", code, out2)
	}
}

// finishTerminatingPods deletes, with grace period 0, every Pod of ns that is terminating,
// until the returned function is called: what a kubelet does once a Pod's containers stop,
// for Pods on a node no kubelet runs.
func finishTerminatingPods(c *kube.Clients, ns string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		zero := int64(0)
		for ctx.Err() == nil {
			if pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil {
						_ = c.Core.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// clusterRecovered waits until the local cluster works again as the next tests expect after an
// outage: kube-controller-manager's and kwok's watches re-list with client-go's backoff (up to
// 30 s) after an API server restart, so it waits until a new namespace gets its default
// ServiceAccount (the controller-manager) and a new Pod runs (kwok), then removes the probe.
func clusterRecovered(t *testing.T, c *kube.Clients) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	ns := "acc-recover-" + rand.String(5)
	if _, err := c.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()
	poll := func(what string, cond func(context.Context) bool) {
		if err := kwait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			return cond(ctx), nil
		}); err != nil {
			t.Fatalf("the cluster did not recover (%s): %v", what, err)
		}
		t.Logf("cluster recovered: %s after %.1fs", what, time.Since(start).Seconds())
	}
	poll("default ServiceAccount created", func(ctx context.Context) bool {
		_, err := c.Core.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kwok-probe", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: "gantry-cpu-0", Containers: []corev1.Container{{Name: "c", Image: "registry.example/probe:1"}}}}
	if _, err := c.Core.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("a new pod running", func(ctx context.Context) bool {
		p, err := c.Core.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	zero := int64(0)
	_ = c.Core.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}
