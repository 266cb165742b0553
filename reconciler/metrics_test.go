package reconciler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// seriesOf counts the series of every gantry_packageset_* metric labelled packageset=set in
// the manager's registry (what its metrics endpoint serves).
func seriesOf(t *testing.T, set string) int {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "packageset" && l.GetValue() == set {
					n++
				}
			}
		}
	}
	return n
}

// A complete set's metrics: its nodes by status, no cordon held, one apply and one config Job
// created per node; deleting the set drops every series labelled with it.
func TestPackageSetMetrics(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-met-%d", seq.Add(1))
	e.gpuNodes(t, pool, 2)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:     []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, set)
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	// The gauges are set by the pass that wrote the status (possibly a moment before the
	// status is visible): poll briefly.
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(packageSetNodes.WithLabelValues(pool, string(v1alpha1.StatusComplete))) == 2, nil
	})
	if err != nil {
		t.Errorf("gantry_packageset_nodes{status=complete} = %v, want 2", testutil.ToFloat64(packageSetNodes.WithLabelValues(pool, string(v1alpha1.StatusComplete))))
	}
	for stage, want := range map[string]float64{"apply": 2, "config": 2} {
		if got := testutil.ToFloat64(packageSetJobs.WithLabelValues(pool, stage)); got != want {
			t.Errorf("gantry_packageset_stage_jobs_created_total{stage=%s} = %v, want %v", stage, got, want)
		}
	}
	if got := testutil.ToFloat64(packageSetCordoned.WithLabelValues(pool)); got != 0 {
		t.Errorf("gantry_packageset_cordoned_nodes = %v", got)
	}
	if err := e.c.Delete(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		gone := apierrors.IsNotFound(e.c.Get(ctx, types.NamespacedName{Name: pool}, &v1alpha1.PackageSet{}))
		return gone && seriesOf(t, pool) == 0, nil
	})
	if err != nil {
		t.Errorf("%d series of the deleted set remain", seriesOf(t, pool))
	}
}
