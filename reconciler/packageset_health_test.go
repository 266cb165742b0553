package reconciler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// Health checks (NixFleet's health gates): an exec check runs as a Job on each node in the
// soak rounds (stage label health-dcgm, NODE_IP from the pod's status); the set completes while
// it passes. Then dcgm-tool 1.1.0 with the check failing (kwok's chaos label on the check's
// pod only: the package's own stages and checks pass): the nodes roll back to 1.0.0,
// dcgm-tool@1.1.0 is quarantined and the condition names the health check and the round.
func TestPackageSetHealthCheck(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-health-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
		Rollout: &v1alpha1.Rollout{SoakDuration: &metav1.Duration{Duration: 2 * time.Second}, SoakCheckInterval: &metav1.Duration{Duration: time.Second},
			OnHealthFailure: v1alpha1.HealthFailureRollback,
			HealthChecks: []v1alpha1.HealthCheck{{Name: "dcgm", Image: "ghcr.io/gantry-dev/dcgm-probe:1",
				Command: []string{"/probe", "--endpoint", "http://$(NODE_IP):9400/health"}}}},
	}}
	e.createSet(t, set)
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	probed := map[string]int{}
	for _, j := range e.setPods(t, pool) {
		if j.Labels[v1alpha1.LabelStage] != "health-dcgm" {
			continue
		}
		probed[j.Labels[v1alpha1.LabelNode]]++
		c := j.Spec.Containers[0]
		if c.Image != "ghcr.io/gantry-dev/dcgm-probe:1" || !slices.Equal(c.Command, []string{"/probe", "--endpoint", "http://$(NODE_IP):9400/health"}) ||
			j.Spec.NodeName != j.Labels[v1alpha1.LabelNode] || j.Status.Phase != corev1.PodSucceeded {
			t.Errorf("health check Pod %s: image %s command %v node %s phase %s", j.Name, c.Image, c.Command, j.Spec.NodeName, j.Status.Phase)
		}
		var nodeIP bool
		for _, ev := range c.Env {
			nodeIP = nodeIP || ev.Name == "NODE_IP" && ev.ValueFrom != nil && ev.ValueFrom.FieldRef.FieldPath == "status.hostIP"
		}
		if !nodeIP {
			t.Errorf("health check Job %s has no NODE_IP", j.Name)
		}
	}
	for _, n := range nodes {
		if probed[n] < 2 {
			t.Errorf("node %s: %d health check runs in a 2s soak with 1s rounds, want at least 2 (%v)", n, probed[n], probed)
		}
	}

	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) {
		s.Spec.Packages[0].Version = "1.1.0"
		s.Spec.Rollout.HealthChecks[0].PodLabels = map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}
	})
	bad := e.waitToolRolledBack(t, pool, nodes)
	stalled := setCondition(bad, v1alpha1.ConditionStalled)
	if stalled.Reason != "VersionQuarantined" || !strings.Contains(stalled.Message, "dcgm-tool@1.1.0") {
		t.Errorf("Stalled %+v", stalled)
	}
	// The failure reached the set's events (status erroring, naming the check) on its way;
	// the recorder writes them asynchronously, after the status the wait above saw.
	e.waitEvent(t, "PackageSet", pool, "health check dcgm failed in round")
}

// Observe mode and the systemd gate (NixFleet's observe mode and
// healthGate.systemdFailedUnits): an observe-mode check whose pod fails (kwok's chaos label)
// does not hold the rollout: the set completes, HealthChecksObserved is True naming each node
// and the check, and a HealthCheckObserved Warning event says so. The systemdFailedUnits
// check runs busybox's nsenter into the host's namespaces from a privileged pod in the host
// PID namespace (on kwok nodes its pod only completes: the script's own test is a unit test).
func TestPackageSetHealthCheckObserveAndSystemd(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-observe-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
		Rollout: &v1alpha1.Rollout{SoakDuration: &metav1.Duration{Duration: 2 * time.Second}, SoakCheckInterval: &metav1.Duration{Duration: time.Second},
			HealthChecks: []v1alpha1.HealthCheck{
				{Name: "cis", Image: "ghcr.io/gantry-dev/cis-probe:1", Command: []string{"/probe"}, Mode: v1alpha1.HealthCheckObserve,
					PodLabels: map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}},
				{Name: "units", SystemdFailedUnits: &v1alpha1.SystemdFailedUnitsCheck{Max: 1}},
			}},
	}}
	e.createSet(t, set)
	done := e.waitSet(t, pool, "complete with observed failures", func(s *v1alpha1.PackageSet) bool {
		c := setCondition(s, packageset.ConditionHealthChecksObserved)
		return s.Status.Status == v1alpha1.StatusComplete && c.Status == metav1.ConditionTrue
	})
	obs := setCondition(done, packageset.ConditionHealthChecksObserved)
	for _, n := range nodes {
		if !strings.Contains(obs.Message, n+": health check cis failed in round") {
			t.Errorf("HealthChecksObserved %q does not name node %s and the check", obs.Message, n)
		}
	}
	var units int
	for _, j := range e.setPods(t, pool) {
		if j.Labels[v1alpha1.LabelStage] != "health-units" {
			continue
		}
		units++
		ps := j.Spec
		c := ps.Containers[0]
		if !ps.HostPID || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged ||
			c.Image != packageset.DefaultHealthCheckImage || len(c.Command) != 3 || !strings.Contains(c.Command[2], "nsenter -t 1") || !strings.Contains(c.Command[2], `-le 1 ]`) {
			t.Errorf("systemd check Job %s: hostPID %v securityContext %+v image %s command %q", j.Name, ps.HostPID, c.SecurityContext, c.Image, c.Command)
		}
	}
	if units == 0 {
		t.Errorf("no systemdFailedUnits check Job ran")
	}
	e.waitEvent(t, "PackageSet", pool, "Warning HealthCheckObserved: ", "health check cis failed")
}

// Health gates at soak 0 (NixFleet's healthGate with soakMinutes = 0): with no soakDuration,
// the exec check runs once on each node after its last stage (one health-dcgm Pod per node,
// round 0, and no package soak check) and the set completes. Then dcgm-tool 1.1.0 with the
// check failing (kwok's chaos label on the check's pod only): the nodes roll back to 1.0.0,
// dcgm-tool@1.1.0 is quarantined, and the set's events name the check, failed "after the
// last stage".
func TestPackageSetHealthCheckNoSoak(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-hgate-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
		Rollout: &v1alpha1.Rollout{OnHealthFailure: v1alpha1.HealthFailureRollback,
			HealthChecks: []v1alpha1.HealthCheck{{Name: "dcgm", Image: "ghcr.io/gantry-dev/dcgm-probe:1", Command: []string{"/probe"}}}},
	}}
	e.createSet(t, set)
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	probed := map[string]int{}
	for _, p := range e.setPods(t, pool) {
		switch st := p.Labels[v1alpha1.LabelStage]; {
		case st == "health-dcgm":
			probed[p.Labels[v1alpha1.LabelNode]]++
			if p.Annotations["gantry.dev/soak-round"] != "0" || p.Status.Phase != corev1.PodSucceeded {
				t.Errorf("health check Pod %s: round %q phase %s", p.Name, p.Annotations["gantry.dev/soak-round"], p.Status.Phase)
			}
		case strings.HasSuffix(st, "-soak"):
			t.Errorf("package soak check Pod %s (%s) with no soak window", p.Name, st)
		}
	}
	for _, n := range nodes {
		if probed[n] != 1 {
			t.Errorf("node %s: %d health check runs with no soak, want 1 (%v)", n, probed[n], probed)
		}
	}

	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) {
		s.Spec.Packages[0].Version = "1.1.0"
		s.Spec.Rollout.HealthChecks[0].PodLabels = map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}
	})
	e.waitToolRolledBack(t, pool, nodes)
	e.waitEvent(t, "PackageSet", pool, "health check dcgm failed after the last stage")
}

// waitToolRolledBack waits until dcgm-tool@1.1.0 is quarantined in pool and every one of nodes
// is back at dcgm-tool 1.0.0 with its rollout Reverted (a failed health check under
// onHealthFailure rollback), and returns the set.
func (e *testEnv) waitToolRolledBack(t *testing.T, pool string, nodes []string) *v1alpha1.PackageSet {
	t.Helper()
	return e.waitSet(t, pool, "rolled back and quarantined", func(s *v1alpha1.PackageSet) bool {
		if !slices.Contains(s.Status.QuarantinedVersions, "dcgm-tool@1.1.0") {
			return false
		}
		for _, n := range nodes {
			if s.Status.NodeState[n]["dcgm-tool"].Version != "1.0.0" || s.Status.NodeRollout[n] != v1alpha1.RolloutReverted {
				return false
			}
		}
		return true
	})
}
