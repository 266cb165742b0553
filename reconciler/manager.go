// Package reconciler is the gantry-reconciler: controller-runtime wiring (this file), the
// embedded CRD installer (crds.go) and one thin controller per kind (performer_controller.go).
// Decisions live in the pure machines under internal/; controllers gather facts, call the
// machine, act and write status once per pass.
package reconciler

import (
	"fmt"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// FieldManager is the field manager (server-side apply) and event source of the reconciler.
const FieldManager = "gantry-reconciler"

// LeaderElectionID is the name of the Lease the reconciler replicas elect a leader with.
const LeaderElectionID = "gantry-reconciler.gantry.dev"

// Options configure NewManager. The zero value is not useful; start from DefaultOptions.
type Options struct {
	// MetricsBindAddress is the Prometheus metrics address, e.g. ":8080"; "0" disables it.
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz, e.g. ":8081"; "0" disables it.
	HealthProbeBindAddress string
	// PprofBindAddress serves net/http/pprof (/debug/pprof/...), e.g. "127.0.0.1:6060";
	// "" or "0" disables it (the default).
	PprofBindAddress string
	// LeaderElection enables leader election (Lease LeaderElectionID) for running replicas.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease; required when running outside a cluster with
	// LeaderElection (in-cluster it defaults to the Pod's namespace).
	LeaderElectionNamespace string
	// LeaderElectionIdentity is this replica's identity in the Lease; empty means
	// controller-runtime's "<hostname>_<random UUID>". Give each replica a stable one (its Pod's
	// name: the Helm chart passes it) so that a replica restarted after losing its Lease (an API
	// server or etcd outage longer than the renew deadline makes it exit) takes the Lease back
	// at once instead of waiting for it to expire (15 s). It must differ between replicas.
	LeaderElectionIdentity string
	// MaxConcurrentReconciles is the number of objects of one kind reconciled in parallel
	// (>= 1). A pass spends most of its time waiting on the API server (one to three round
	// trips), so a pool smaller than the objects changing at once queues them: with 4 workers
	// and Terraform's default 10 resources in flight a performer waited about 0.5 s per pass
	// for a worker. Default 16.
	MaxConcurrentReconciles int
	// Namespaces restricts the reconciler to these namespaces; empty means all namespaces.
	Namespaces []string
	// SkipNameValidation allows several managers with the same controller names in one
	// process (tests).
	SkipNameValidation bool
	// JobNamespace holds PackageSet stage Jobs; default the first of Namespaces, else
	// DefaultJobNamespace (gantry-system).
	JobNamespace string
	// PackageSetPassGap is PackageSetReconciler.PassGap (0: DefaultPassGap; negative: none).
	PackageSetPassGap time.Duration
	// RuntimeRequiredTaint is the runtime-required taint, "key=value:Effect" (empty:
	// v1alpha1.DefaultRuntimeRequiredTaint), as Skyhook's RUNTIME_REQUIRED_TAINT.
	RuntimeRequiredTaint string
	// NodeClass is the Karpenter node class of the NodeClaims workspaces provision nodes with,
	// "GROUP/KIND/NAME" (workspace.ParseNodeClass), e.g. karpenter.k8s.aws/EC2NodeClass/default;
	// empty: workspaces never create NodeClaims (their status says so).
	NodeClass string
}

// DefaultOptions are the defaults of gantry-reconciler's flags.
func DefaultOptions() Options {
	return Options{
		MetricsBindAddress:      ":8080",
		HealthProbeBindAddress:  ":8081",
		MaxConcurrentReconciles: 16,
	}
}

// NewScheme returns a scheme with the built-in kinds, apiextensions/v1 and gantry.dev/v1alpha1.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

// NewManager builds the controller-runtime manager with every Gantry controller registered.
// It does not install CRDs (InstallCRDs) and does not start (call Start on the result).
//
// The informer caches of Pods, Services, Deployments, ConfigMaps, Jobs, NetworkPolicies and
// HorizontalPodAutoscalers only hold objects labelled
// app.kubernetes.io/managed-by=gantry-reconciler (the ones the reconciler creates), so the
// reconciler's memory does not grow with the cluster's Pods; controllers read anything else
// (e.g. a foreign Pod squatting on a performer's name) with the uncached API reader.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.MaxConcurrentReconciles < 1 {
		return nil, fmt.Errorf("max concurrent reconciles must be >= 1, got %d", o.MaxConcurrentReconciles)
	}
	scheme := NewScheme()
	managed := labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy})
	cacheOpts := cache.Options{
		// No cached object keeps its managedFields; PackageSet stage Jobs and Pods keep only
		// what the controllers read (cache_transforms.go).
		DefaultTransform: stripManagedFields,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:     {Label: managed, Transform: transformStagePod},
			&corev1.Service{}: {Label: managed},
			// Deployments: executors' and workspaces'; ConfigMaps: executors'; Jobs: package
			// set stages and tuning workspaces.
			&appsv1.Deployment{}:  {Label: managed},
			&appsv1.StatefulSet{}: {Label: managed},
			&corev1.ConfigMap{}:   {Label: managed},
			// An Executor's ServiceAccount, Role and RoleBinding (spec.managePerformers).
			&corev1.ServiceAccount{}: {Label: managed},
			&rbacv1.Role{}:           {Label: managed},
			&rbacv1.RoleBinding{}:    {Label: managed},
			&batchv1.Job{}:           {Label: managed, Transform: transformStageJob},
			// Performers' NetworkPolicies (spec.networkPolicy).
			&networkingv1.NetworkPolicy{}: {Label: managed},
			// Workspaces' HorizontalPodAutoscalers (spec.autoscaling).
			&autoscalingv2.HorizontalPodAutoscaler{}: {Label: managed},
		},
	}
	if len(o.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mopts := ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		PprofBindAddress:              o.PprofBindAddress,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
	if o.LeaderElection && o.LeaderElectionIdentity != "" {
		lock, err := leaseLock(cfg, o.LeaderElectionNamespace, o.LeaderElectionIdentity)
		if err != nil {
			return nil, err
		}
		mopts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	copts := controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}
	if o.SkipNameValidation {
		skip := true
		copts.SkipNameValidation = &skip
	}
	if err := NewPerformerReconciler(mgr).SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("performer controller: %w", err)
	}
	if err := NewExecutorReconciler(mgr).SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("executor controller: %w", err)
	}
	if err := NewAggregatorReconciler(mgr).SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("aggregator controller: %w", err)
	}
	jobNS := o.JobNamespace
	if jobNS == "" && len(o.Namespaces) > 0 {
		jobNS = o.Namespaces[0]
	}
	if jobNS == "" {
		jobNS = DefaultJobNamespace
	}
	psr := NewPackageSetReconciler(mgr, jobNS)
	psr.PassGap = o.PackageSetPassGap
	if o.RuntimeRequiredTaint != "" {
		t, err := packageset.ParseTaint(o.RuntimeRequiredTaint)
		if err != nil {
			return nil, fmt.Errorf("runtime-required taint: %w", err)
		}
		psr.RuntimeRequiredTaint = t
	}
	if err := psr.SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("packageset controller: %w", err)
	}
	wsr := NewWorkspaceReconciler(mgr)
	if wsr.NodeClass, err = workspace.ParseNodeClass(o.NodeClass); err != nil {
		return nil, fmt.Errorf("--node-class: %w", err)
	}
	if err := wsr.SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("workspace controller: %w", err)
	}
	return mgr, nil
}

// leaseLock is the Lease LeaderElectionID in namespace (default: the Pod's namespace, from the
// ServiceAccount mount) held under identity (Options.LeaderElectionIdentity).
func leaseLock(cfg *rest.Config, namespace, identity string) (resourcelock.Interface, error) {
	if namespace == "" {
		b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		if err != nil {
			return nil, fmt.Errorf("leader election: no namespace given and not in a cluster: %w", err)
		}
		namespace = strings.TrimSpace(string(b))
	}
	c, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election"))
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, LeaderElectionID, c.CoreV1(), c.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: identity})
}
