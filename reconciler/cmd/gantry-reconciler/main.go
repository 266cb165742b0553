// Command gantry-reconciler runs the Gantry controllers (Performer, ...) against a cluster.
//
// Configuration: --kubeconfig (registered by controller-runtime), else $KUBECONFIG, else the
// in-cluster service account, else ~/.kube/config (ctrl.GetConfig). At start it applies the
// embedded CRDs with server-side apply (field manager gantry-reconciler) and waits for them to
// be Established, unless --skip-crd-install. Logs are structured (zap; --zap-devel,
// --zap-log-level, --zap-encoder, ...).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/reconciler"
)

func main() {
	o := reconciler.DefaultOptions()
	var (
		skipCRDInstall bool
		crdTimeout     time.Duration
		namespaces     string
		qps            float64
		burst          int
	)
	flag.BoolVar(&skipCRDInstall, "skip-crd-install", false, "do not apply the embedded CRDs at start (they must already be installed)")
	flag.DurationVar(&crdTimeout, "crd-install-timeout", time.Minute, "how long to wait for the applied CRDs to be Established")
	flag.BoolVar(&o.LeaderElection, "leader-elect", false, "enable leader election (Lease "+reconciler.LeaderElectionID+") so only one replica reconciles")
	flag.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (required out of cluster with --leader-elect)")
	flag.StringVar(&o.LeaderElectionIdentity, "leader-election-identity", os.Getenv("POD_NAME"), "this replica's identity in the Lease, stable across restarts and unique per replica (default $POD_NAME, else <hostname>_<random UUID>): a replica restarted after losing the Lease takes it back at once")
	flag.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, `address of the Prometheus metrics endpoint; "0" disables it`)
	flag.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, `address of /healthz and /readyz; "0" disables it`)
	flag.StringVar(&o.PprofBindAddress, "pprof-bind-address", "", `address of net/http/pprof (/debug/pprof/); empty or "0" disables it (default: off; do not expose it beyond loopback)`)
	flag.DurationVar(&o.PackageSetPassGap, "packageset-pass-gap", reconciler.DefaultPassGap, "at most this long between two passes over one PackageSet started by Job, Pod or Node events (the wait is as long as the last pass took; negative: none)")
	flag.StringVar(&o.RuntimeRequiredTaint, "runtime-required-taint", v1alpha1.DefaultRuntimeRequiredTaint, "the runtime-required taint (key=value:Effect) of package sets with runtimeRequired: every stage pod tolerates it, the reconciler removes it from a node once every runtimeRequired set selecting the node is complete there (and adds it to new nodes of sets with autoTaintNewNodes)")
	flag.StringVar(&o.NodeClass, "node-class", "", "the Karpenter node class (GROUP/KIND/NAME, e.g. karpenter.k8s.aws/EC2NodeClass/default) of the NodeClaims workspaces with an instance type create when too few nodes are free (spec.resource.provisionNodes, as KAITO provisions); empty: none are created")
	flag.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "objects of one kind reconciled in parallel")
	flag.StringVar(&namespaces, "namespaces", "", "comma-separated namespaces to reconcile; empty means all")
	// 100/200 (client-go's default is 5/10): a PackageSet pass writes one record and creates
	// one Job per node it advances, so at 50/100 a few hundred nodes spend seconds per pass
	// waiting on the client's rate limiter; lower these on a shared API server.
	flag.Float64Var(&qps, "kube-api-qps", 100, "client requests per second to the API server")
	flag.IntVar(&burst, "kube-api-burst", 200, "client request burst to the API server")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	logger := ctrl.Log.WithName("gantry-reconciler")

	if err := run(o, skipCRDInstall, crdTimeout, namespaces, float32(qps), burst); err != nil {
		logger.Error(err, "exiting")
		fmt.Fprintln(os.Stderr, "gantry-reconciler:", err)
		os.Exit(1)
	}
}

func run(o reconciler.Options, skipCRDInstall bool, crdTimeout time.Duration, namespaces string, qps float32, burst int) error {
	logger := ctrl.Log.WithName("gantry-reconciler")
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = reconciler.FieldManager
	for _, ns := range strings.Split(namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			o.Namespaces = append(o.Namespaces, ns)
		}
	}

	ctx := ctrl.SetupSignalHandler()
	if !skipCRDInstall {
		logger.Info("installing CRDs", "fieldManager", reconciler.FieldManager)
		if err := reconciler.InstallCRDs(ctx, cfg, crdTimeout); err != nil {
			return fmt.Errorf("install CRDs: %w", err)
		}
	}
	mgr, err := reconciler.NewManager(cfg, o)
	if err != nil {
		return err
	}
	logger.Info("starting", "host", cfg.Host, "namespaces", o.Namespaces, "leaderElection", o.LeaderElection,
		"metrics", o.MetricsBindAddress, "healthProbe", o.HealthProbeBindAddress, "maxConcurrentReconciles", o.MaxConcurrentReconciles)
	return mgr.Start(ctx)
}
