package reconciler

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// Package set metrics, served with controller-runtime's own (reconcile counts and durations,
// workqueue depth, client requests) on the manager's metrics endpoint (--metrics-bind-address).
var (
	// packageSetNodes: nodes of a set by their Skyhook node status (complete, in_progress,
	// erroring, waiting, blocked, paused, disabled, unknown), after each pass.
	packageSetNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gantry_packageset_nodes",
		Help: "Nodes a PackageSet holds a record on, by node status (as Skyhook defines them: complete, in_progress, erroring, waiting, blocked, paused, disabled, unknown).",
	}, []string{"packageset", "status"})
	// packageSetCordoned: nodes whose cordon the set holds (gantry.dev/cordon_<set>).
	packageSetCordoned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gantry_packageset_cordoned_nodes",
		Help: "Nodes cordoned by a PackageSet for an interrupt (never above its interruption budget).",
	}, []string{"packageset"})
	// packageSetQuarantined: versions a rollback quarantined (status.quarantinedVersions).
	packageSetQuarantined = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gantry_packageset_quarantined_versions",
		Help: "Package versions a PackageSet's rollback quarantined.",
	}, []string{"packageset"})
	// packageSetJobs: stage Jobs created (AlreadyExists not counted), by stage; a soak check
	// counts as "<check>-soak".
	packageSetJobs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gantry_packageset_stage_jobs_created_total",
		Help: "Stage Pods a PackageSet created (the name predates stage Pods, which replaced stage Jobs), by stage (apply, config, upgrade, uninstall, interrupt, post-interrupt, <check>-soak).",
	}, []string{"packageset", "stage"})
)

func init() {
	metrics.Registry.MustRegister(packageSetNodes, packageSetCordoned, packageSetQuarantined, packageSetJobs)
}

// recordPackageSetMetrics sets the set's gauges from one pass: its decision's node statuses
// and the nodes as acted on (cordon annotations after the pass's writes).
func recordPackageSetMetrics(set string, d packageset.Decision, nodes map[string]*corev1.Node) {
	counts := map[v1alpha1.PackageSetStatusValue]int{}
	for _, np := range d.Nodes {
		if np.Record != nil {
			counts[np.Status]++
		}
	}
	packageSetNodes.DeletePartialMatch(prometheus.Labels{"packageset": set})
	for s, n := range counts {
		packageSetNodes.WithLabelValues(set, string(s)).Set(float64(n))
	}
	cordoned := 0
	for _, n := range nodes {
		if _, ok := n.Annotations[v1alpha1.AnnotationCordonPrefix+set]; ok && n.Spec.Unschedulable {
			cordoned++
		}
	}
	packageSetCordoned.WithLabelValues(set).Set(float64(cordoned))
	packageSetQuarantined.WithLabelValues(set).Set(float64(len(d.Quarantined)))
}

// forgetPackageSetMetrics drops every series of a deleted set.
func forgetPackageSetMetrics(set string) {
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{packageSetNodes, packageSetCordoned, packageSetQuarantined, packageSetJobs} {
		v.DeletePartialMatch(prometheus.Labels{"packageset": set})
	}
}
