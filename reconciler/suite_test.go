package reconciler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The controller tests run against a real API server: the local kwok cluster (make cluster /
// hack/cluster.sh up), whose kubeconfig path is in GANTRY_TEST_KUBECONFIG. Without it they
// skip, so `go test ./...` works anywhere. One manager (the same NewManager and InstallCRDs the
// binary uses; metrics and probes off, no leader election) runs in-process for the whole
// package, restricted to a namespace created for this run, which is deleted at the end.

const envKubeconfig = "GANTRY_TEST_KUBECONFIG"

// envLog names a file for the in-process reconciler's logs, kept after the run; by default they
// go to a temporary file that is removed unless a test fails.
const envLog = "GANTRY_TEST_LOG"

// waitTimeout bounds every wait; kwok makes Pods Ready within a second, so this is generous.
const waitTimeout = 90 * time.Second

type testEnv struct {
	cfg     *rest.Config
	c       client.WithWatch
	ns      string
	logPath string
}

var (
	envOnce sync.Once
	env     *testEnv
	envErr  error
	stopMgr context.CancelFunc
	mgrDone chan error
)

// setup returns the shared environment, starting it on first use; it skips the test when no
// cluster is configured.
func setup(t *testing.T) *testEnv {
	t.Helper()
	path := os.Getenv(envKubeconfig)
	if path == "" {
		t.Skipf("%s is not set: controller tests need a cluster (make cluster; then %s=.cache/cluster/kubeconfig)", envKubeconfig, envKubeconfig)
	}
	envOnce.Do(func() { env, envErr = start(path) })
	if envErr != nil {
		t.Fatalf("test environment: %v", envErr)
	}
	return env
}

func start(kubeconfig string) (*testEnv, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	logPath := os.Getenv(envLog)
	if logPath == "" {
		logPath = filepath.Join(os.TempDir(), fmt.Sprintf("gantry-reconciler-test-%d.log", os.Getpid()))
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logFile)))

	ctx := context.Background()
	if err := InstallCRDs(ctx, cfg, time.Minute); err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		return nil, err
	}
	ns := fmt.Sprintf("gantry-test-%d", rand.IntN(1_000_000))
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"gantry.dev/test": "reconciler"}}}); err != nil {
		return nil, err
	}
	// Pods need the namespace's default ServiceAccount (made by kube-controller-manager).
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("default ServiceAccount in %s: %w", ns, err)
	}

	if err := startManager(cfg, ns); err != nil {
		return nil, err
	}
	return &testEnv{cfg: cfg, c: c, ns: ns, logPath: logPath}, nil
}

// startManager starts a new in-process manager watching ns (stopMgr stops it, mgrDone
// reports its end).
func startManager(cfg *rest.Config, ns string) error {
	o := DefaultOptions()
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.Namespaces = []string{ns}
	o.SkipNameValidation = true
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(context.Background())
	stopMgr = cancel
	mgrDone = make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mctx) }()
	return nil
}

// restartManager stops the running manager (its reconciles in flight are abandoned at their
// next API call: the context is cancelled) and starts a fresh one with empty caches.
func (e *testEnv) restartManager(t *testing.T) {
	t.Helper()
	stopMgr()
	if err := <-mgrDone; err != nil {
		t.Logf("suite manager stopped: %v", err)
	}
	if err := startManager(e.cfg, e.ns); err != nil {
		t.Fatalf("restart manager: %v", err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		teardown(env)
		if code != 0 || os.Getenv(envLog) != "" {
			fmt.Fprintf(os.Stderr, "reconciler logs: %s\n", env.logPath)
		} else {
			os.Remove(env.logPath)
		}
	}
	os.Exit(code)
}

// teardown deletes the Performers while the manager still runs (so their finalizers are
// handled), then stops the manager and deletes the namespace.
func teardown(e *testEnv) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = e.c.DeleteAllOf(ctx, &v1alpha1.Executor{}, client.InNamespace(e.ns))
	_ = e.c.DeleteAllOf(ctx, &v1alpha1.Aggregator{}, client.InNamespace(e.ns))
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var list v1alpha1.ExecutorList
		var aggs v1alpha1.AggregatorList
		return e.c.List(ctx, &list, client.InNamespace(e.ns)) == nil && len(list.Items) == 0 &&
			e.c.List(ctx, &aggs, client.InNamespace(e.ns)) == nil && len(aggs.Items) == 0, nil
	})
	_ = e.c.DeleteAllOf(ctx, &v1alpha1.Performer{}, client.InNamespace(e.ns))
	_ = e.c.DeleteAllOf(ctx, &v1alpha1.Workspace{}, client.InNamespace(e.ns))
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var list v1alpha1.PerformerList
		if err := e.c.List(ctx, &list, client.InNamespace(e.ns)); err != nil {
			return false, nil
		}
		var wl v1alpha1.WorkspaceList
		if err := e.c.List(ctx, &wl, client.InNamespace(e.ns)); err != nil {
			return false, nil
		}
		return len(list.Items) == 0 && len(wl.Items) == 0, nil
	})
	stopMgr()
	if err := <-mgrDone; err != nil {
		fmt.Fprintf(os.Stderr, "suite manager stopped: %v\n", err)
	}
	_ = e.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
}

// seq makes object names unique within the run (go test -count=N reuses the namespace) and,
// from a random start, across runs against the same cluster (cluster-scoped nodes and sets a
// killed run left behind would otherwise share a later run's names).
var seq atomic.Int64

func init() { seq.Store(rand.Int64N(900) * 1000) }

// newPerformer returns a Performer in the test namespace named <name>-<n>.
func (e *testEnv) newPerformer(name string, spec v1alpha1.PerformerSpec) *v1alpha1.Performer {
	name = fmt.Sprintf("%s-%d", name, seq.Add(1))
	return &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: spec}
}

func (e *testEnv) create(t *testing.T, p *v1alpha1.Performer) {
	t.Helper()
	if err := e.c.Create(context.Background(), p); err != nil {
		t.Fatalf("create performer %s: %v", p.Name, err)
	}
}

// waitFor polls the Performer until cond holds; on timeout it fails with the last status and
// the Performer's events.
func (e *testEnv) waitFor(t *testing.T, name, what string, cond func(*v1alpha1.Performer) bool) *v1alpha1.Performer {
	t.Helper()
	var last v1alpha1.Performer
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &last); err != nil {
			return false, nil
		}
		return cond(&last), nil
	})
	if err != nil {
		t.Fatalf("performer %s: timed out waiting for %s\nlast status: %s\nevents:\n%s", name, what, describeStatus(&last.Status), e.events(name))
	}
	return &last
}

// waitGone polls until obj does not exist any more.
func (e *testEnv) waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, key, obj)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%T %s still exists", obj, key)
	}
}

// updateLatest re-reads the object at key into a fresh T, applies mod and updates it, again on
// a conflict (the reconciler writes the status meanwhile), until waitTimeout; what names the
// object in the failure.
func updateLatest[T any, P interface {
	*T
	client.Object
}](t *testing.T, e *testEnv, key types.NamespacedName, what string, mod func(P)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		o := P(new(T))
		if err := e.c.Get(ctx, key, o); err != nil {
			return false, err
		}
		mod(o)
		err := e.c.Update(ctx, o)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("update %s %s: %v", what, key.Name, err)
	}
}

// update re-reads the Performer and applies mod, retrying on conflicts.
func (e *testEnv) update(t *testing.T, name string, mod func(*v1alpha1.Performer)) {
	t.Helper()
	updateLatest(t, e, types.NamespacedName{Namespace: e.ns, Name: name}, "performer", mod)
}

// phaseRecorder records every status.phase a watch sees for one Performer, in order,
// collapsing repeats.
type phaseRecorder struct {
	mu     sync.Mutex
	phases []v1alpha1.PerformerPhase
	stop   context.CancelFunc
}

func (e *testEnv) recordPhases(t *testing.T, name string) *phaseRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &v1alpha1.PerformerList{}, client.InNamespace(e.ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		cancel()
		t.Fatalf("watch: %v", err)
	}
	r := &phaseRecorder{stop: func() { cancel(); w.Stop() }}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1alpha1.Performer)
			if !ok {
				continue
			}
			r.mu.Lock()
			if n := len(r.phases); p.Status.Phase != "" && (n == 0 || r.phases[n-1] != p.Status.Phase) {
				r.phases = append(r.phases, p.Status.Phase)
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *phaseRecorder) seen() []v1alpha1.PerformerPhase {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]v1alpha1.PerformerPhase(nil), r.phases...)
}

// events lists the Performer's events, oldest first, one per line.
func (e *testEnv) events(name string) string { return e.eventsOf("Performer", name) }

// waitEvent polls (generous timeout: events are recorded asynchronously) until one event of
// the kind/name object (its eventsOf line) contains every one of want, and fails the test
// otherwise.
func (e *testEnv) waitEvent(t *testing.T, kind, name string, want ...string) {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		got = e.eventsOf(kind, name)
		return slices.ContainsFunc(strings.Split(got, "\n"), func(line string) bool {
			return !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(line, w) })
		}), nil
	})
	if err != nil {
		t.Fatalf("no event on %s %s containing %q; events:\n%s", kind, name, want, got)
	}
}

// eventsOf lists the events of the kind/name object in the test's namespace, or of a
// cluster-scoped object (a PackageSet: its events are in the default namespace, with no
// involvedObject namespace), oldest first, one per line as "<type> <reason>: <message>".
func (e *testEnv) eventsOf(kind, name string) string {
	var list corev1.EventList
	if err := e.c.List(context.Background(), &list); err != nil {
		return err.Error()
	}
	// A PackageSet by UID: a set of the same name from an earlier run on the same cluster
	// left its own events.
	var uid types.UID
	if kind == "PackageSet" {
		var ps v1alpha1.PackageSet
		if err := e.c.Get(context.Background(), client.ObjectKey{Name: name}, &ps); err != nil {
			return err.Error()
		}
		uid = ps.UID
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) })
	var b strings.Builder
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name && (ev.InvolvedObject.Namespace == e.ns || ev.InvolvedObject.Namespace == "") &&
			(uid == "" || ev.InvolvedObject.UID == uid) {
			fmt.Fprintf(&b, "  %s %s: %s\n", ev.Type, ev.Reason, ev.Message)
		}
	}
	return b.String()
}

func describeStatus(s *v1alpha1.PerformerStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s image=%s node=%s endpoint=%s observedGeneration=%d\n", s.Phase, s.Image, s.NodeName, s.GRPCEndpoint, s.ObservedGeneration)
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func condition(p *v1alpha1.Performer, typ string) metav1.Condition {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// running: Running for the current generation.
func running(p *v1alpha1.Performer) bool {
	return p.Status.Phase == v1alpha1.PerformerRunning && p.Status.ObservedGeneration == p.Generation
}
