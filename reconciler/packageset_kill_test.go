package reconciler

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// reconcilerProc is the real gantry-reconciler binary running as a separate process against
// the test cluster, restricted to the test namespace (so its stage Jobs go there too).
type reconcilerProc struct {
	bin, kubeconfig, ns, logPath string
	cmd                          *exec.Cmd
	log                          *os.File
	starts                       int
}

func (p *reconcilerProc) start(t *testing.T) {
	t.Helper()
	if p.log == nil {
		f, err := os.Create(p.logPath)
		if err != nil {
			t.Fatal(err)
		}
		p.log = f
	}
	p.starts++
	fmt.Fprintf(p.log, "=== start %d\n", p.starts)
	cmd := exec.Command(p.bin, "--kubeconfig="+p.kubeconfig, "--namespaces="+p.ns, "--skip-crd-install",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.bin, err)
	}
	p.cmd = cmd
}

// kill sends SIGKILL (no graceful shutdown: reconciles in flight stop wherever they are) and
// reaps the process.
func (p *reconcilerProc) kill(t *testing.T) {
	t.Helper()
	if p.cmd == nil {
		return
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Errorf("kill: %v", err)
	}
	_ = p.cmd.Wait()
	if code := p.cmd.ProcessState.ExitCode(); code != -1 { // -1: ended by the signal
		t.Errorf("gantry-reconciler exited on its own (code %d) before the kill (log %s)", code, p.logPath)
	}
	fmt.Fprintf(p.log, "=== killed (%d)\n", p.starts)
	p.cmd = nil
}

// jobRecorder watches the test namespace's Jobs of one package set and records the UID of every
// Job it sees per node/package/stage, so a Job deleted and created again counts twice.
type jobRecorder struct {
	mu     sync.Mutex
	uids   map[string]map[types.UID]bool
	closed bool
}

func (e *testEnv) recordJobs(t *testing.T, set string) *jobRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &corev1.PodList{}, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelPackageSet: set})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &jobRecorder{uids: map[string]map[types.UID]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			j, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			k := j.Labels[v1alpha1.LabelNode] + "/" + j.Labels[v1alpha1.LabelPackage] + "/" + j.Labels[v1alpha1.LabelStage]
			r.mu.Lock()
			if r.uids[k] == nil {
				r.uids[k] = map[types.UID]bool{}
			}
			r.uids[k][j.UID] = true
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return r
}

// The literal variant of TestPackageSetRestartMidRollout: the real gantry-reconciler binary,
// run as a separate process, is SIGKILLed mid-rollout at moments chosen by watching the
// cluster (right after the first stage Job appears, while a node is cordoned, while a node's
// reboot interrupt has run but not its post-interrupt, when a second node is cordoned, when the
// last untouched node gets its first Job) and started again each time. The set must end
// complete on every node with exactly one Job ever created per node/package/stage, never more
// nodes cordoned than the budget, no cordon left and consistent node annotations.
//
// PackageSets are cluster-scoped, so the suite's in-process manager would reconcile this set
// too; it is stopped for the duration of the test (and started again at the end) so that only
// the process under test acts on the set.
func TestPackageSetKillMidRollout(t *testing.T) {
	e := setup(t)
	proc := e.startKillable(t)

	pool := fmt.Sprintf("ps-kill-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 4)
	const budget = 1
	sampler := e.sampleCordons(t, pool)
	jobs := e.recordJobs(t, pool)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:           []v1alpha1.Package{pkgDriver("550.1.0"), pkgTool("3.0.0")},
		InterruptionBudget: &v1alpha1.InterruptionBudget{Count: ptrTo(int32(budget))}, AdditionalTolerations: gpuToleration}}
	proc.start(t)
	e.createSet(t, set) // its cleanup (delete, finalizer) runs while the process still runs

	for i, kp := range killPoints(len(nodes)) {
		var last killObserved
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 3*waitTimeout, true, func(ctx context.Context) (bool, error) {
			o, err := e.observeKill(ctx, pool)
			if err != nil {
				return false, nil
			}
			last = o
			return o.complete || kp.at(o), nil
		})
		if err != nil {
			t.Fatalf("kill %d (%s): never observed: %v; last jobs %v cordoned %v", i+1, kp.name, err, last.jobs, last.cordoned)
		}
		if last.complete {
			t.Fatalf("kill %d (%s): set complete first: not mid-rollout (jobs %v)", i+1, kp.name, last.jobs)
		}
		proc.kill(t)
		t.Logf("kill %d: %s (jobs on %d nodes, cordoned %v)", i+1, kp.name, len(last.jobs), last.cordoned)
		proc.start(t)
	}

	got := e.waitSet(t, pool, "complete after kills", statusIs(v1alpha1.StatusComplete))
	if got.Status.CompleteNodes != fmt.Sprintf("%d/%d", len(nodes), len(nodes)) {
		t.Errorf("complete nodes %s", got.Status.CompleteNodes)
	}
	stages := []string{"dcgm-tool/apply", "dcgm-tool/config", "gpu-driver/apply", "gpu-driver/config", "gpu-driver/interrupt", "gpu-driver/post-interrupt"}
	e.checkOneJobPerStage(t, pool, nodes, stages, jobs)
	sampler.mu.Lock()
	maxCordoned := sampler.max
	sampler.mu.Unlock()
	if maxCordoned > budget {
		t.Errorf("%d nodes cordoned at once, budget %d", maxCordoned, budget)
	}
	for _, n := range nodes {
		if ps := got.Status.NodeState[n]["gpu-driver"]; ps.Stage != v1alpha1.StagePostInterrupt || ps.State != v1alpha1.StateComplete || ps.Version != "550.1.0" {
			t.Errorf("%s driver %+v", n, ps)
		}
		if ps := got.Status.NodeState[n]["dcgm-tool"]; ps.Stage != v1alpha1.StageConfig || ps.State != v1alpha1.StateComplete || ps.Version != "3.0.0" {
			t.Errorf("%s tool %+v", n, ps)
		}
		if got.Status.NodeRollout[n] != v1alpha1.RolloutConverged {
			t.Errorf("%s rollout %s", n, got.Status.NodeRollout[n])
		}
		e.checkNodeReleased(t, pool, n)
	}
}

// startKillable builds the gantry-reconciler binary and stops the suite's manager (started
// again at the end of the test) so that only the returned process, once started, reconciles
// package sets. The process is killed at the end; its log's tail is logged when t failed.
func (e *testEnv) startKillable(t *testing.T) *reconcilerProc {
	t.Helper()
	kubeconfig := os.Getenv(envKubeconfig)
	if abs, err := filepath.Abs(kubeconfig); err == nil {
		kubeconfig = abs
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gantry-reconciler")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gantry-reconciler")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// Only the process under test may reconcile package sets from here on.
	stopMgr()
	if err := <-mgrDone; err != nil {
		t.Logf("suite manager stopped: %v", err)
	}
	t.Cleanup(func() {
		if err := startManager(e.cfg, e.ns); err != nil {
			t.Errorf("restart the suite manager: %v", err)
			mgrDone = make(chan error, 1)
			mgrDone <- err
		}
	})
	proc := &reconcilerProc{bin: bin, kubeconfig: kubeconfig, ns: e.ns, logPath: filepath.Join(dir, "gantry-reconciler.log")}
	t.Cleanup(func() {
		proc.kill(t)
		if t.Failed() {
			if b, err := os.ReadFile(proc.logPath); err == nil {
				lines := strings.Split(string(b), "\n")
				t.Logf("gantry-reconciler log (last 60 lines):\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
			}
		}
		if proc.log != nil {
			proc.log.Close()
		}
	})
	return proc
}

// killObserved is what a kill point looks at: the set's Jobs (by node) and the pool's nodes.
type killObserved struct {
	jobs     map[string]map[string]bool // node -> package/stage
	cordoned []string
	complete bool
}

// observeKill reads the set pool's Jobs, the pool's cordoned nodes and whether the set is
// complete at its generation.
func (e *testEnv) observeKill(ctx context.Context, pool string) (killObserved, error) {
	o := killObserved{jobs: map[string]map[string]bool{}}
	var jl corev1.PodList
	if err := e.c.List(ctx, &jl, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelPackageSet: pool}); err != nil {
		return o, err
	}
	for _, j := range jl.Items {
		n := j.Labels[v1alpha1.LabelNode]
		if o.jobs[n] == nil {
			o.jobs[n] = map[string]bool{}
		}
		o.jobs[n][j.Labels[v1alpha1.LabelPackage]+"/"+j.Labels[v1alpha1.LabelStage]] = true
	}
	var nl corev1.NodeList
	if err := e.c.List(ctx, &nl, client.MatchingLabels{"gantry.dev/test-pool": pool}); err != nil {
		return o, err
	}
	for _, n := range nl.Items {
		if n.Spec.Unschedulable {
			o.cordoned = append(o.cordoned, n.Name)
		}
	}
	var s v1alpha1.PackageSet
	if err := e.c.Get(ctx, types.NamespacedName{Name: pool}, &s); err != nil {
		return o, err
	}
	o.complete = s.Status.Status == v1alpha1.StatusComplete && s.Status.ObservedGeneration == s.Generation
	return o, nil
}

// killPoint is a moment of the rollout at which the process is killed.
type killPoint struct {
	name string
	at   func(o killObserved) bool
}

// killPoints are the moments, in order, of a rollout over nodes nodes.
func killPoints(nodes int) []killPoint {
	var firstCordoned string
	return []killPoint{
		{"first stage Job created", func(o killObserved) bool { return len(o.jobs) > 0 }},
		{"a node cordoned", func(o killObserved) bool {
			if len(o.cordoned) > 0 {
				firstCordoned = o.cordoned[0]
				return true
			}
			return false
		}},
		{"reboot interrupt Job created, post-interrupt not yet", func(o killObserved) bool {
			for _, st := range o.jobs {
				if st["gpu-driver/interrupt"] && !st["gpu-driver/post-interrupt"] {
					return true
				}
			}
			return false
		}},
		{"another node cordoned", func(o killObserved) bool {
			for _, n := range o.cordoned {
				if n != firstCordoned {
					return true
				}
			}
			return false
		}},
		{"last node's first Job created", func(o killObserved) bool { return len(o.jobs) == nodes }},
	}
}

// checkOneJobPerStage: exactly one Job exists and was ever created (jobs' watch) for every
// node/stage, and no other.
func (e *testEnv) checkOneJobPerStage(t *testing.T, pool string, nodes, stages []string, jobs *jobRecorder) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range nodes {
		for _, s := range stages {
			want[n+"/"+s] = true
		}
	}
	// Jobs that exist now, by label.
	count := map[string]int{}
	for _, j := range e.setPods(t, pool) {
		count[j.Labels[v1alpha1.LabelNode]+"/"+j.Labels[v1alpha1.LabelPackage]+"/"+j.Labels[v1alpha1.LabelStage]]++
	}
	// Jobs ever created (distinct UIDs seen by the watch), by label.
	jobs.mu.Lock()
	ever := map[string]int{}
	for k, u := range jobs.uids {
		ever[k] = len(u)
	}
	watchClosed := jobs.closed
	jobs.mu.Unlock()
	if watchClosed {
		t.Errorf("the Job watch ended early: creations may have been missed")
	}
	keys := map[string]bool{}
	for _, m := range []map[string]int{count, ever} {
		for k := range m {
			keys[k] = true
		}
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		switch {
		case !want[k]:
			t.Errorf("unexpected stage Job %s (%d now, %d ever)", k, count[k], ever[k])
		case count[k] != 1 || ever[k] != 1:
			t.Errorf("%s: %d Jobs now, %d ever created, want exactly 1", k, count[k], ever[k])
		}
	}
}

// checkNodeReleased: node n of the set pool is not cordoned, keeps no cordon annotation and
// has the set's complete status and its state annotations.
func (e *testEnv) checkNodeReleased(t *testing.T, pool, n string) {
	t.Helper()
	var node corev1.Node
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: n}, &node); err != nil {
		t.Fatal(err)
	}
	if node.Spec.Unschedulable {
		t.Errorf("%s still cordoned", n)
	}
	for k := range node.Annotations {
		if strings.HasPrefix(k, v1alpha1.AnnotationCordonPrefix) {
			t.Errorf("%s keeps cordon annotation %s", n, k)
		}
	}
	if node.Annotations[v1alpha1.AnnotationNodeStatusPrefix+pool] != string(v1alpha1.StatusComplete) || node.Annotations[v1alpha1.AnnotationNodeStatePrefix+pool] == "" {
		t.Errorf("%s annotations %v", n, node.Annotations)
	}
}
