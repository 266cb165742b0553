package workspace

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// A fixed-count workspace of 4 replicas rolls a new template out as the Deployment
// controller's default strategy does (maxSurge 1, maxUnavailable 1: 25% of 4): it stays
// NotReady until the rollout is over and all new pods are Ready, then Ready, never Ready in
// between. Before WorkloadFacts looked for old pods, step 4 (all 4 new pods created, one not
// Ready, one old pod still Ready) was Ready and step 5 (the old pod gone) NotReady again.
func TestRolloutOfFourNeverReadyEarly(t *testing.T) {
	w := &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "four", Namespace: "ns"}, Spec: v1alpha1.WorkspaceSpec{
		Resource: v1alpha1.WorkspaceResource{Count: 4, GPUCount: 1}, Inference: &v1alpha1.WorkspaceInference{Model: "m", Image: "i"}}}
	want, err := DesiredDeployment(w)
	if err != nil {
		t.Fatal(err)
	}
	starting := func(name string) Pod { p := readyPod(name, "gpu-"+name); p.Ready = false; return p }
	going := func(name string) Pod { p := readyPod(name, "gpu-"+name); p.Deleting = true; return p }
	ready := func(names ...string) []Pod {
		var out []Pod
		for _, n := range names {
			out = append(out, readyPod(n, "gpu-"+n))
		}
		return out
	}
	for i, step := range []struct {
		replicas, updated int32 // the Deployment's status
		pods              []Pod
		want              State
	}{
		{4, 1, append(ready("o1", "o2", "o3"), going("o4"), starting("n1")), sNotReady},
		{4, 2, append(ready("o1", "o2", "n1"), going("o3"), starting("n2")), sNotReady},
		{4, 3, append(ready("o1", "n1", "n2"), going("o2"), starting("n3")), sNotReady},
		{5, 4, append(ready("o1", "n1", "n2", "n3"), starting("n4")), sNotReady}, // was Ready
		{4, 4, append(ready("n1", "n2", "n3"), going("o1"), starting("n4")), sNotReady},
		{4, 4, ready("n1", "n2", "n3", "n4"), sReady},
	} {
		live := controlled(want.DeepCopy())
		live.Generation = 2
		live.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: step.replicas, UpdatedReplicas: step.updated}
		f := infFacts(sNotReady, func(f *Facts) {
			f.Replicas, f.Workload, f.Pods = 4, WorkloadFacts(live, want, "uid-1"), step.pods
		})
		d, err := Decide(f)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != step.want {
			t.Errorf("step %d (status.replicas %d, updated %d, pods %v): %s, want %s: %s", i+1, step.replicas, step.updated, names(step.pods), d.State, step.want, condOf(d, ConditionInferenceReady).Message)
		}
	}
	// Scaling a Deployment of one template leaves it rolled out.
	live := controlled(want.DeepCopy())
	live.Status = appsv1.DeploymentStatus{ObservedGeneration: live.Generation, Replicas: 4, UpdatedReplicas: 4}
	if !WorkloadFacts(live, want, "uid-1").RolledOut {
		t.Error("a Deployment of 4 updated replicas and nothing else is not rolled out")
	}
}

func names(pods []Pod) []string {
	var out []string
	for _, p := range pods {
		s := p.Name
		switch {
		case p.Deleting:
			s += "(going)"
		case p.Phase == corev1.PodRunning && !p.Ready:
			s += "(starting)"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
