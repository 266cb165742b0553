package reconciler

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
)

// Serial (Skyhook's serial): two independent packages on one node run one at a time, the
// first listed first; the same set without serial runs them side by side (the sampler sees
// both packages' Jobs unfinished at once), so the check can fail.
func TestPackageSetSerial(t *testing.T) {
	e := setup(t)
	t.Parallel()
	for _, serial := range []bool{true, false} {
		t.Run(fmt.Sprintf("serial=%v", serial), func(t *testing.T) {
			pool := fmt.Sprintf("ps-serial-%d", seq.Add(1))
			e.gpuNodes(t, pool, 1)
			slow := map[string]string{"pod-complete.stage.kwok.x-k8s.io/delay": "2s"}
			tuning := v1alpha1.Package{Name: "nvme-tuning", Version: "1.0.0", Image: "ghcr.io/gantry-dev/nvme-tuning:1.0.0", PodAnnotations: slow}
			tool := pkgTool("1.0.0")
			tool.PodAnnotations = slow
			set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
				Serial:                serial,
				NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
				Packages:              []v1alpha1.Package{tuning, tool},
				AdditionalTolerations: gpuToleration,
			}}
			e.createSet(t, set)
			most, firstSeen := 0, map[string]time.Time{}
			err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*waitTimeout, true, func(ctx context.Context) (bool, error) {
				open := map[string]bool{}
				for _, j := range e.setPods(t, pool) {
					pkg := j.Labels[v1alpha1.LabelPackage]
					if _, ok := firstSeen[pkg]; !ok {
						firstSeen[pkg] = time.Now()
					}
					if done, failed, _, _, _ := failure.PodOutcome(&j, time.Now()); !done && !failed {
						open[pkg] = true
					}
				}
				most = max(most, len(open))
				var s v1alpha1.PackageSet
				if err := e.c.Get(ctx, types.NamespacedName{Name: pool}, &s); err != nil {
					return false, nil
				}
				return s.Status.Status == v1alpha1.StatusComplete && s.Status.ObservedGeneration == s.Generation, nil
			})
			if err != nil {
				t.Fatalf("set not complete: %v", err)
			}
			var order []string
			for pkg := range firstSeen {
				order = append(order, pkg)
			}
			sort.Slice(order, func(a, b int) bool { return firstSeen[order[a]].Before(firstSeen[order[b]]) })
			switch {
			case serial && most != 1:
				t.Errorf("serial: %d packages with stage Jobs unfinished at once, want 1", most)
			case serial && (len(order) != 2 || order[0] != "nvme-tuning"):
				t.Errorf("serial: packages started in order %v, want nvme-tuning first (the spec's order)", order)
			case !serial && most != 2:
				t.Errorf("not serial: at most %d packages with stage Jobs unfinished at once, want 2 (independent packages run side by side)", most)
			}
		})
	}
}
