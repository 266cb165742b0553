package packageset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// previewSet is a driver package with a reboot interrupt over the nodes labelled gpu=true.
func previewSet(budget int32) *v1alpha1.PackageSet {
	return &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "gpu-driver"},
		Spec: v1alpha1.PackageSetSpec{
			NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}},
			InterruptionBudget: &v1alpha1.InterruptionBudget{Count: ptr(budget)},
			Packages: []v1alpha1.Package{{Name: "driver", Version: "560.35.3", Image: "nvcr.io/nvidia/driver",
				Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}}},
		}}
}

func previewNodes(n int, lbl func(i int) map[string]string) []corev1.Node {
	var out []corev1.Node
	for i := 0; i < n; i++ {
		l := map[string]string{"gpu": "true"}
		if lbl != nil {
			for k, v := range lbl(i) {
				l[k] = v
			}
		}
		out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-%02d", i), Labels: l}})
	}
	out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0", Labels: map[string]string{"gpu": "false"}}})
	return out
}

func waveNames(p Preview) [][]string {
	var out [][]string
	for _, n := range p.Nodes {
		for len(out) <= n.Wave {
			out = append(out, nil)
		}
		out[n.Wave] = append(out[n.Wave], n.Name)
	}
	return out
}

func TestPreviewRollout_rebootOneAtATime(t *testing.T) {
	p, err := PreviewRollout(PreviewFacts{Set: previewSet(1), Nodes: previewNodes(3, nil), Now: time.Unix(1_700_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Complete || p.Selected != 3 || len(p.Nodes) != 3 || p.Waves != 3 || p.MaxWave != 1 || p.Rebooted != 3 || p.Cordoned != 3 || p.Drained != 3 {
		t.Fatalf("preview = %+v, want 3 nodes in 3 waves of 1, each cordoned, drained, rebooted", p)
	}
	if got := fmt.Sprint(waveNames(p)); got != "[[gpu-00] [gpu-01] [gpu-02]]" {
		t.Errorf("waves %s", got)
	}
	s := p.Summary(5)
	for _, want := range []string{"3 of 3 selected nodes run stages, in 3 waves of at most 1 nodes", "3 cordoned, 3 drained, 3 rebooted", "interruption budget 1 nodes at a time"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// A node whose drain a PodDisruptionBudget refuses is blocked now, and with a budget of one
// the rollout stops there (as the reconciler would: the node holds the only slot).
func TestPreviewRollout_pdbBlocksTheRollout(t *testing.T) {
	pf := PreviewFacts{Set: previewSet(1), Nodes: previewNodes(3, nil), Now: time.Unix(1_700_000_000, 0),
		Refusals: map[string]string{"gpu-01": "pod default/web-0: PodDisruptionBudget default/web allows 0 disruptions"}}
	p, err := PreviewRollout(pf)
	if err != nil {
		t.Fatal(err)
	}
	if p.Complete || len(p.Blocked) != 1 || p.Blocked[0].Node != "gpu-01" || !strings.Contains(p.Blocked[0].Reason, "PodDisruptionBudget default/web") {
		t.Fatalf("preview = %+v, want gpu-01 blocked by its PDB and the rollout incomplete", p)
	}
	if got := fmt.Sprint(waveNames(p)); got != "[[gpu-00] [gpu-01]]" {
		t.Errorf("waves %s, want gpu-00 then gpu-01 (held, cordoned), gpu-02 never started", got)
	}
	if p.Rebooted != 1 {
		t.Errorf("rebooted %d, want 1 (gpu-01 is never drained)", p.Rebooted)
	}
}

// Node edges order the nodes: gpu-00 waits for gpu-02; the summary names the edge's reason.
func TestPreviewRollout_nodeEdges(t *testing.T) {
	set := previewSet(3)
	set.Spec.Rollout = &v1alpha1.Rollout{NodeEdges: []v1alpha1.NodeEdge{{Before: "gpu-02", After: "gpu-00", Reason: "canary first"}}}
	p, err := PreviewRollout(PreviewFacts{Set: set, Nodes: previewNodes(3, nil), Now: time.Unix(1_700_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(waveNames(p)); got != "[[gpu-01 gpu-02] [gpu-00]]" || !p.Complete {
		t.Fatalf("waves %s complete %v, want [[gpu-01 gpu-02] [gpu-00]]", got, p.Complete)
	}
	if !strings.Contains(p.Summary(5), "node gpu-00 after node gpu-02 (canary first)") {
		t.Errorf("summary lacks the edge:\n%s", p.Summary(5))
	}
}

// A fleet budget the other sets fill holds every node: nothing starts.
func TestPreviewRollout_fleetBudgetHeld(t *testing.T) {
	set := previewSet(3)
	set.Spec.Rollout = &v1alpha1.Rollout{FleetBudget: &v1alpha1.FleetBudget{Name: "gpu", MaxInFlight: 1}}
	other := previewSet(3)
	other.Name, other.Spec.Rollout = "firmware", &v1alpha1.Rollout{FleetBudget: &v1alpha1.FleetBudget{Name: "gpu", MaxInFlight: 1}}
	other.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"pool": "b"}}
	nodes := append(previewNodes(2, nil), corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b-0", Labels: map[string]string{"pool": "b"},
		Annotations: map[string]string{v1alpha1.AnnotationNodeStatePrefix + "firmware": `{"rollout":"Activating","since":"2026-01-01T00:00:00Z","flows":1}`}}})
	p, err := PreviewRollout(PreviewFacts{Set: set, Sets: []v1alpha1.PackageSet{*other}, Nodes: nodes, Now: time.Unix(1_700_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 0 || p.Complete || len(p.Blocked) != 2 || !strings.Contains(p.Blocked[0].Reason, "fleet budget gpu is full: 1/1 nodes in flight for the other sets (firmware)") {
		t.Fatalf("preview = %+v, want nothing started and gpu-00, gpu-01 blocked by the fleet budget", p)
	}
}

// Compartments: each compartment has its own budget; the preview's waves follow them.
func TestPreviewRollout_compartments(t *testing.T) {
	set := previewSet(1)
	set.Spec.InterruptionBudget = nil // the API server refuses it beside a deployment policy
	set.Spec.DeploymentPolicy = &v1alpha1.DeploymentPolicy{Compartments: []v1alpha1.Compartment{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}, Budget: v1alpha1.InterruptionBudget{Count: ptr(int32(1))}},
		{Name: "rest", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "rest"}}, Budget: v1alpha1.InterruptionBudget{Count: ptr(int32(2))}},
	}}
	nodes := previewNodes(5, func(i int) map[string]string {
		if i == 0 {
			return map[string]string{"ring": "canary"}
		}
		return map[string]string{"ring": "rest"}
	})
	p, err := PreviewRollout(PreviewFacts{Set: set, Nodes: nodes, Now: time.Unix(1_700_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Complete || len(p.Nodes) != 5 || p.MaxWave != 3 {
		t.Fatalf("preview = %+v, want 5 nodes complete, at most 3 at once", p)
	}
	if got := fmt.Sprint(waveNames(p)[0]); got != "[gpu-00 gpu-01 gpu-02]" {
		t.Errorf("first wave %s, want the canary's one node and two of the rest", got)
	}
}

// 1,000 nodes, ten compartments of 100, 10 per compartment at once: the preview's cost.
func BenchmarkPreviewRollout1000(b *testing.B) {
	set := previewSet(1)
	var comps []v1alpha1.Compartment
	for c := 0; c < 10; c++ {
		comps = append(comps, v1alpha1.Compartment{Name: fmt.Sprintf("rack-%d", c),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rack": fmt.Sprint(c)}}, Budget: v1alpha1.InterruptionBudget{Count: ptr(int32(10))}})
	}
	set.Spec.DeploymentPolicy = &v1alpha1.DeploymentPolicy{Compartments: comps}
	set.Spec.InterruptionBudget = nil // the compartments' budgets alone (the set's budget bounds cordons too)
	nodes := previewNodes(1000, func(i int) map[string]string { return map[string]string{"rack": fmt.Sprint(i % 10)} })
	for i := 0; i < b.N; i++ {
		p, err := PreviewRollout(PreviewFacts{Set: set, Nodes: nodes, Now: time.Unix(1_700_000_000, 0)})
		if err != nil || !p.Complete {
			b.Fatalf("err %v complete %v", err, p.Complete)
		}
		b.ReportMetric(float64(p.Passes), "passes")
		b.ReportMetric(float64(p.Waves), "waves")
	}
}

// The shape of a rollout ignores what blocks now: the PDB-held node's rollout completes in the
// shape, and the blocked list still names it.
func TestPreviewRollout_shape(t *testing.T) {
	pf := PreviewFacts{Set: previewSet(1), Nodes: previewNodes(3, nil), Now: time.Unix(1_700_000_000, 0), Shape: true,
		Refusals: map[string]string{"gpu-01": "pod default/web-0: PodDisruptionBudget default/web allows 0 disruptions"}}
	p, err := PreviewRollout(pf)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Complete || p.Waves != 3 || len(p.Blocked) != 1 || p.Blocked[0].Node != "gpu-01" {
		t.Fatalf("shape preview = %+v, want complete in 3 waves with gpu-01 listed as blocked now", p)
	}
}

// The preview honours spec.drain.timeout: a drain a PodDisruptionBudget refuses ends at the
// timeout. onTimeout Continue: the rollout goes on past the blocked node and completes (the
// blocked line says for how long it holds); Fail: it stops there, the node failed at its
// timeout, naming the pod and the budget.
func TestPreviewRollout_drainTimeout(t *testing.T) {
	refusals := map[string]string{"gpu-01": "pod default/web-0: PodDisruptionBudget default/web allows 0 disruptions"}
	for _, tc := range []struct {
		onTimeout v1alpha1.DrainTimeoutAction
		complete  bool
		blocked   string
	}{
		{v1alpha1.DrainTimeoutContinue, true, "(for up to drain.timeout 1h0m0s, then the interrupt runs with them: onTimeout Continue)"},
		{v1alpha1.DrainTimeoutFail, false, "(for up to drain.timeout 1h0m0s, then the node fails: onTimeout Fail)"},
	} {
		t.Run(string(tc.onTimeout), func(t *testing.T) {
			set := previewSet(1)
			set.Spec.Drain = &v1alpha1.Drain{Timeout: &metav1.Duration{Duration: time.Hour}, OnTimeout: tc.onTimeout}
			p, err := PreviewRollout(PreviewFacts{Set: set, Nodes: previewNodes(3, nil), Now: time.Unix(1_700_000_000, 0), Refusals: refusals})
			if err != nil {
				t.Fatal(err)
			}
			if p.Complete != tc.complete || len(p.Blocked) != 1 || !strings.HasSuffix(p.Blocked[0].Reason, tc.blocked) {
				t.Fatalf("complete %v, blocked %+v, stuck %q", p.Complete, p.Blocked, p.Stuck)
			}
			if tc.complete && (len(p.Nodes) != 3 || p.Rebooted != 3) {
				t.Errorf("Continue: %d nodes started, %d rebooted", len(p.Nodes), p.Rebooted)
			}
			if !tc.complete && !strings.Contains(p.Stuck, "node gpu-01 package driver stage interrupt: drain timed out after 1h0m0s; pods left: default/web-0 (PodDisruptionBudget default/web allows 0 disruptions)") {
				t.Errorf("Fail: stuck %q", p.Stuck)
			}
		})
	}
	// Without a timeout the preview is as before: the node holds the rollout.
	p, err := PreviewRollout(PreviewFacts{Set: previewSet(1), Nodes: previewNodes(3, nil), Now: time.Unix(1_700_000_000, 0), Refusals: refusals})
	if err != nil || p.Complete || strings.Contains(p.Blocked[0].Reason, "drain.timeout") {
		t.Fatalf("no timeout: %v %+v", err, p)
	}
}
