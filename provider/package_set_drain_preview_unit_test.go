package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// The rollout preview honours drain: over three GPU nodes, gpu-0 runs a pod without a
// controller, gpu-1 a pod behind a PodDisruptionBudget that allows 0 disruptions but labelled
// to be skipped, gpu-2 a ReplicaSet's pod with an emptyDir volume. With force = false,
// skip_pod_labels matching the PDB's pod and a 30m timeout under Continue: gpu-0 is blocked now
// (the unmanaged pod, and for how long), gpu-1 is not (its pod is never drained), gpu-2 is not
// (delete_empty_dir_data unset: true), and the rollout completes even with what blocks now.
// With on_timeout Fail instead, today's rollout would stop at gpu-0, failed at its timeout.
func TestPackageSetPreview_drainSettings(t *testing.T) {
	var objs []runtime.Object
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2"} {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"nvidia.com/gpu.present": "true"}}})
	}
	running := corev1.PodStatus{Phase: corev1.PodRunning}
	app := map[string]string{"app": "inference"}
	one := intstr.FromInt32(1)
	objs = append(objs,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "ml"}, Spec: corev1.PodSpec{NodeName: "gpu-0"}, Status: running},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "inference-0", Namespace: "ml", Labels: app,
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "inference", Controller: boolPtr(true)}}}, Spec: corev1.PodSpec{NodeName: "gpu-1"}, Status: running},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cache-0", Namespace: "ml", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "cache", Controller: boolPtr(true)}}},
			Spec: corev1.PodSpec{NodeName: "gpu-2", Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}, Status: running},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "inference", Namespace: "ml"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: app}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, DesiredHealthy: 1, CurrentHealthy: 1}})
	for _, tc := range []struct {
		onTimeout string
		want      []string
		not       []string
	}{
		{"Continue", []string{
			"3 of 3 selected nodes run stages, in 3 waves of at most 1 nodes; 3 cordoned, 3 drained, 3 rebooted.",
			"Blocked now: gpu-0: drain refused: pod ml/bare: declares no controller (drain.force is false) (for up to drain.timeout 30m0s, then the interrupt runs with them: onTimeout Continue).",
		}, []string{"gpu-1:", "gpu-2:", "would stop"}},
		{"Fail", []string{
			"Blocked now: gpu-0: drain refused: pod ml/bare: declares no controller (drain.force is false) (for up to drain.timeout 30m0s, then the node fails: onTimeout Fail).",
			"With what blocks now, the rollout would stop after starting 1 of the 3 nodes (node gpu-0 package dcgm-tool stage interrupt: drain timed out after 30m0s; " +
				"pods left: ml/bare (declares no controller (drain.force is false)))",
		}, []string{"gpu-1:", "gpu-2:"}},
	} {
		t.Run(tc.onTimeout, func(t *testing.T) {
			clients := &kube.Clients{Core: kubefake.NewSimpleClientset(objs...),
				Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{wait.PackageSet.GVR: "PackageSetList"})}
			r := &packageSetResource{kindResource[packageSetModel]{ops: packageSetOps, data: newProviderData(kube.NewLazy(func() (*kube.Clients, error) { return clients, nil }))}}
			m := psFieldsModel()
			m.PodNonInterruptLabels = nil
			m.NodeSelector = map[string]string{"nvidia.com/gpu.present": "true"}
			m.InterruptionBudget = &budgetModel{Count: types.Int64Value(1), Percent: types.Int64Null()}
			m.Packages[0].Interrupt = &interruptModel{Type: types.StringValue("reboot")}
			m.Drain = &drainModel{GracePeriod: types.StringNull(), Timeout: types.StringValue("30m"), DeleteEmptyDirData: types.BoolNull(),
				Force: types.BoolValue(false), SkipPodLabels: app, OnTimeout: types.StringValue(tc.onTimeout)}
			planned, err := expandPackageSet(m)
			if err != nil {
				t.Fatal(err)
			}
			p, _, summary, why := r.preview(context.Background(), planned)
			if why != "" {
				t.Fatalf("preview skipped: %s", why)
			}
			if p.Selected != 3 || len(p.Nodes) != 3 || p.Rebooted != 3 || !p.Complete {
				t.Errorf("shape %+v, want 3 nodes rebooted, complete", p)
			}
			for _, want := range tc.want {
				if !strings.Contains(summary, want) {
					t.Errorf("warning lacks %q:\n%s", want, summary)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(summary, not) {
					t.Errorf("warning says %q:\n%s", not, summary)
				}
			}
		})
	}
}
