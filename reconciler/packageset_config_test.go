package reconciler

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// jobConfigMap checks that every container of the stage Pod mounts one ConfigMap
// read-only at /etc/gantry/config with GANTRY_CONFIG_DIR set, and that the config is not
// copied anywhere else (annotation, GANTRY_CONFIG env); it returns the ConfigMap's name.
func jobConfigMap(t *testing.T, j *corev1.Pod) string {
	t.Helper()
	ps := j.Spec
	if len(ps.Volumes) != 1 || ps.Volumes[0].ConfigMap == nil {
		t.Fatalf("job %s volumes %+v, want one ConfigMap volume", j.Name, ps.Volumes)
	}
	vol := ps.Volumes[0]
	if _, ok := j.Annotations["gantry.dev/config"]; ok {
		t.Errorf("job %s still carries the config annotation", j.Name)
	}
	for _, c := range append(append([]corev1.Container(nil), ps.InitContainers...), ps.Containers...) {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != vol.Name || c.VolumeMounts[0].MountPath != packageset.ConfigMountPath || !c.VolumeMounts[0].ReadOnly {
			t.Errorf("job %s container %s mounts %+v", j.Name, c.Name, c.VolumeMounts)
		}
		dir := ""
		for _, e := range c.Env {
			if e.Name == "GANTRY_CONFIG" {
				t.Errorf("job %s container %s still has GANTRY_CONFIG", j.Name, c.Name)
			}
			if e.Name == packageset.EnvConfigDir {
				dir = e.Value
			}
		}
		if dir != packageset.ConfigMountPath {
			t.Errorf("job %s container %s %s=%q", j.Name, c.Name, packageset.EnvConfigDir, dir)
		}
	}
	return vol.ConfigMap.Name
}

// checkConfigMap: the ConfigMap holds exactly data, is immutable, labelled with the set and
// package, and owned by the set.
func (e *testEnv) checkConfigMap(t *testing.T, name string, set *v1alpha1.PackageSet, pkg string, data map[string]string) {
	t.Helper()
	var cm corev1.ConfigMap
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &cm); err != nil {
		t.Fatalf("config ConfigMap %s: %v", name, err)
	}
	if !maps.Equal(cm.Data, data) || cm.Immutable == nil || !*cm.Immutable {
		t.Errorf("ConfigMap %s data %v immutable %v, want %v immutable", name, cm.Data, cm.Immutable, data)
	}
	if cm.Labels[v1alpha1.LabelPackageSet] != set.Name || cm.Labels[v1alpha1.LabelPackage] != pkg {
		t.Errorf("ConfigMap %s labels %v", name, cm.Labels)
	}
	owned := false
	for _, ref := range cm.OwnerReferences {
		owned = owned || ref.Kind == "PackageSet" && ref.Name == set.Name && ref.UID == set.UID
	}
	if !owned {
		t.Errorf("ConfigMap %s owner references %+v, want the PackageSet %s (%s)", name, cm.OwnerReferences, set.Name, set.UID)
	}
}

func (e *testEnv) waitConfigMapGone(t *testing.T, name, why string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("ConfigMap %s not deleted (%s)", name, why)
	}
}

// Package config as a mounted ConfigMap on the cluster: config {a: 1, b: 2} → the apply and
// config Jobs mount one immutable ConfigMap holding exactly it, owned by the set; a config
// change → the new config Job mounts a new ConfigMap with the new content, and the old one is
// pruned once the set is complete; deleting the set deletes the ConfigMap (owner reference,
// Kubernetes garbage collector).
func TestPackageSetConfigMap(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-cfg-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 1)
	tool := pkgTool("1.0.0")
	tool.Config = map[string]string{"a": "1", "b": "2"}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:           []v1alpha1.Package{tool},
		InterruptionBudget: &v1alpha1.InterruptionBudget{Percent: ptrTo(int32(100))}, AdditionalTolerations: gpuToleration}}
	// Keys that are not file names are refused by the CRD, before any ConfigMap is tried.
	bad := set.DeepCopy()
	bad.Spec.Packages[0].Config = map[string]string{"a/b": "1", "..c": "2"}
	if err := e.c.Create(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "config keys must be ConfigMap keys") {
		t.Fatalf("create with config keys a/b, ..c: %v", err)
	}
	e.createSet(t, set)
	got := e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	jobs := e.setPods(t, pool)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2 (apply, config)", len(jobs))
	}
	first := ""
	before := map[string]bool{}
	for i := range jobs {
		before[jobs[i].Name] = true
		cm := jobConfigMap(t, &jobs[i])
		if first != "" && cm != first {
			t.Errorf("apply and config mount different ConfigMaps %s, %s", first, cm)
		}
		first = cm
	}
	e.checkConfigMap(t, first, got, "dcgm-tool", map[string]string{"a": "1", "b": "2"})

	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) { s.Spec.Packages[0].Config = map[string]string{"a": "1", "b": "3"} })
	got = e.waitSet(t, pool, "complete after the config change", statusIs(v1alpha1.StatusComplete))
	var second string
	jobs = e.setPods(t, pool)
	for i := range jobs {
		j := &jobs[i]
		if before[j.Name] {
			continue
		}
		if j.Labels[v1alpha1.LabelStage] != "config" || second != "" {
			t.Fatalf("job %s (stage %s) after the config change, want one config Job", j.Name, j.Labels[v1alpha1.LabelStage])
		}
		second = jobConfigMap(t, j)
	}
	if second == "" || second == first {
		t.Fatalf("config Job after the change mounts %q (before: %q), want a new ConfigMap", second, first)
	}
	e.checkConfigMap(t, second, got, "dcgm-tool", map[string]string{"a": "1", "b": "3"})
	if got.Status.NodeState[nodes[0]]["dcgm-tool"].Stage != v1alpha1.StageConfig {
		t.Errorf("node state %+v", got.Status.NodeState)
	}
	e.waitConfigMapGone(t, first, "no record or package refers to it once the set is complete")

	if err := e.c.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(e.c.Get(ctx, types.NamespacedName{Name: pool}, &v1alpha1.PackageSet{})), nil
	})
	if err != nil {
		t.Fatalf("package set %s not gone", pool)
	}
	e.waitConfigMapGone(t, second, "owner reference to the deleted set")
}
