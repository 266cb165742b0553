// Command preview times the package set rollout preview the provider computes at plan
// (packageset.PreviewRollout, shape and full) over -nodes synthetic nodes: a driver with a reboot
// interrupt in -compartments compartments of a deployment policy, 10 nodes at a time each, and
// the same with an interruption budget of 10% and no policy; one node in ten behind a drain
// refusal for the full preview. It prints the median of -runs runs per variant and records
// them in make bench's table (target: ≤ 300 ms for one changed set over 1,000 nodes). No
// cluster: the provider's one LIST of nodes and PodDisruptionBudgets per plan is not included.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/hack/bench/table"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

func main() {
	nodes := flag.Int("nodes", 1000, "nodes the set selects")
	comps := flag.Int("compartments", 10, "deployment policy compartments")
	runs := flag.Int("runs", 5, "runs per variant (the median is reported)")
	flag.Parse()
	var ns []corev1.Node
	for i := 0; i < *nodes; i++ {
		ns = append(ns, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-%05d", i),
			Labels: map[string]string{"gpu": "true", "rack": fmt.Sprint(i % *comps)}}})
	}
	refusals := map[string]string{}
	for i := 3; i < *nodes; i += 10 {
		refusals[ns[i].Name] = "pod ml/inference: PodDisruptionBudget ml/inference allows 0 disruptions"
	}
	ten := int32(10)
	policy := set()
	for c := 0; c < *comps; c++ {
		policy.Spec.DeploymentPolicy = appendComp(policy.Spec.DeploymentPolicy, fmt.Sprintf("rack-%d", c), fmt.Sprint(c), ten)
	}
	budget := set()
	budget.Spec.InterruptionBudget = &v1alpha1.InterruptionBudget{Percent: &ten}
	fmt.Printf("rollout preview over %d nodes (median of %d runs)\n", *nodes, *runs)
	for _, v := range []struct {
		name  string
		set   *v1alpha1.PackageSet
		shape bool
	}{
		{fmt.Sprintf("%d compartments, 10 at a time each, shape", *comps), policy, true},
		{fmt.Sprintf("%d compartments, blocked nodes, full", *comps), policy, false},
		{"budget 10%, shape", budget, true},
	} {
		d, p := median(*runs, func() packageset.Preview {
			p, err := packageset.PreviewRollout(packageset.PreviewFacts{Set: v.set, Nodes: ns, Now: time.Now(), Refusals: refusals, Shape: v.shape})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			return p
		})
		fmt.Printf("  %-45s %7.1f ms  (%d nodes started, %d waves, %d passes)\n", v.name, float64(d.Microseconds())/1000, len(p.Nodes), p.Waves, p.Passes)
		ms := float64(d.Microseconds()) / 1000
		table.Add(table.Row{Figure: fmt.Sprintf("rollout preview, %d nodes, %s", *nodes, v.name), Value: ms, Unit: "ms",
			Target: "≤ 300 ms", Met: table.Met(ms <= 300)})
	}
}

// set is a driver package with a reboot interrupt over the GPU nodes.
func set() *v1alpha1.PackageSet {
	return &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "gpu-driver"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}},
		Packages: []v1alpha1.Package{{Name: "driver", Version: "560.35.3", Image: "nvcr.io/nvidia/driver",
			Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}}}}}
}

func appendComp(p *v1alpha1.DeploymentPolicy, name, rack string, count int32) *v1alpha1.DeploymentPolicy {
	if p == nil {
		p = &v1alpha1.DeploymentPolicy{}
	}
	p.Compartments = append(p.Compartments, v1alpha1.Compartment{Name: name,
		Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rack": rack}}, Budget: v1alpha1.InterruptionBudget{Count: &count}})
	return p
}

// median runs f n times and returns the median duration and the last result.
func median(n int, f func() packageset.Preview) (time.Duration, packageset.Preview) {
	var ds []time.Duration
	var p packageset.Preview
	for i := 0; i < n; i++ {
		start := time.Now()
		p = f()
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], p
}
