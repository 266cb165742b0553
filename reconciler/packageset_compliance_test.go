package reconciler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// NixFleet's compliance probes (RFC-0007 evidence probes) as compliance health checks: an
// enforce-mode nis2 check (default evidence path) and an observe-mode anssi-bp028 check with
// its own evidence path whose pod fails (kwok's chaos label, as a node whose evidence shows a
// failed control). On kwok nodes the nis2 check's pod only completes (the script's own test is
// TestComplianceEvidenceScript), so the set completes; the failing observe-mode check does not
// hold it: HealthChecksObserved names each node and the anssi check, and a HealthCheckObserved
// Warning event says so. Both checks' Pods are busybox in a privileged pod in the host PID
// namespace running the script for their framework and path under /proc/1/root.
func TestPackageSetHealthCheckCompliance(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-compliance-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
		Rollout: &v1alpha1.Rollout{SoakDuration: &metav1.Duration{Duration: 2 * time.Second}, SoakCheckInterval: &metav1.Duration{Duration: time.Second},
			OnHealthFailure: v1alpha1.HealthFailureRollback,
			HealthChecks: []v1alpha1.HealthCheck{
				{Name: "nis2", Compliance: &v1alpha1.ComplianceCheck{Framework: "nis2"}},
				{Name: "anssi", Compliance: &v1alpha1.ComplianceCheck{Framework: "anssi-bp028", EvidencePath: "/srv/compliance/evidence.json"},
					Mode: v1alpha1.HealthCheckObserve, PodLabels: map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}},
			}},
	}}
	e.createSet(t, set)
	done := e.waitSet(t, pool, "complete with the anssi check observed failing", func(s *v1alpha1.PackageSet) bool {
		c := setCondition(s, packageset.ConditionHealthChecksObserved)
		return s.Status.Status == v1alpha1.StatusComplete && c.Status == metav1.ConditionTrue
	})
	obs := setCondition(done, packageset.ConditionHealthChecksObserved)
	for _, n := range nodes {
		if !strings.Contains(obs.Message, n+": health check anssi failed in round") {
			t.Errorf("HealthChecksObserved %q does not name node %s and the anssi check", obs.Message, n)
		}
		if done.Status.NodeRollout[n] != v1alpha1.RolloutConverged || done.Status.NodeState[n]["dcgm-tool"].Version != "1.0.0" {
			t.Errorf("node %s: rollout %s, state %+v; want Converged at 1.0.0", n, done.Status.NodeRollout[n], done.Status.NodeState[n])
		}
	}
	want := map[string]string{
		"health-nis2":  packageset.ComplianceEvidenceScript(packageset.HostRoot, v1alpha1.ComplianceCheck{Framework: "nis2"}),
		"health-anssi": packageset.ComplianceEvidenceScript(packageset.HostRoot, v1alpha1.ComplianceCheck{Framework: "anssi-bp028", EvidencePath: "/srv/compliance/evidence.json"}),
	}
	ran := map[string]int{}
	for _, p := range e.setPods(t, pool) {
		script, ok := want[p.Labels[v1alpha1.LabelStage]]
		if !ok {
			continue
		}
		ran[p.Labels[v1alpha1.LabelStage]]++
		c := p.Spec.Containers[0]
		if !p.Spec.HostPID || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged ||
			c.Image != packageset.DefaultHealthCheckImage || len(c.Command) != 3 || c.Command[2] != script || p.Spec.NodeName != p.Labels[v1alpha1.LabelNode] {
			t.Errorf("compliance check Pod %s: hostPID %v securityContext %+v image %s node %s command %q", p.Name, p.Spec.HostPID, c.SecurityContext, c.Image, p.Spec.NodeName, c.Command)
		}
	}
	for stage := range want {
		if ran[stage] < len(nodes) {
			t.Errorf("%d %s Pods for %d nodes (%v)", ran[stage], stage, len(nodes), ran)
		}
	}
	e.waitEvent(t, "PackageSet", pool, "Warning HealthCheckObserved: ", "health check anssi failed")
}

// An enforce-mode compliance check whose pod fails (kwok's chaos label: the node's evidence
// shows a failed control) fails the node like any health check: with onHealthFailure
// rollback, dcgm-tool 1.1.0 is rolled back to 1.0.0 on every node and quarantined, and the
// set's events name the compliance check.
func TestPackageSetHealthCheckComplianceEnforce(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-compliance-enf-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
		Rollout: &v1alpha1.Rollout{SoakDuration: &metav1.Duration{Duration: 2 * time.Second}, SoakCheckInterval: &metav1.Duration{Duration: time.Second},
			OnHealthFailure: v1alpha1.HealthFailureRollback,
			HealthChecks:    []v1alpha1.HealthCheck{{Name: "dora", Compliance: &v1alpha1.ComplianceCheck{Framework: "dora"}}}},
	}}
	e.createSet(t, set)
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) {
		s.Spec.Packages[0].Version = "1.1.0"
		s.Spec.Rollout.HealthChecks[0].PodLabels = map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}
	})
	e.waitToolRolledBack(t, pool, nodes)
	e.waitEvent(t, "PackageSet", pool, "health check dora failed in round")
}

// The CRD refuses a compliance check NixFleet would not declare, naming the field: a framework
// outside NixFleet's list (RFC-0007's example label nis2-essential included), no framework, a
// relative or quoted evidence path, and a compliance check that is also another kind.
func TestPackageSetComplianceCRDValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	name := fmt.Sprintf("crd-compliance-%d", seq.Add(1))
	good := func() v1alpha1.PackageSetSpec {
		return v1alpha1.PackageSetSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": "crd-compliance"}},
			Packages:     []v1alpha1.Package{pkgTool("1.0.0")},
			Rollout: &v1alpha1.Rollout{SoakDuration: &metav1.Duration{Duration: time.Minute},
				HealthChecks: []v1alpha1.HealthCheck{{Name: "nis2", Compliance: &v1alpha1.ComplianceCheck{Framework: "nis2"}, Mode: v1alpha1.HealthCheckObserve}}},
		}
	}
	at := func(s *v1alpha1.PackageSetSpec) *v1alpha1.ComplianceCheck {
		return s.Rollout.HealthChecks[0].Compliance
	}
	cases := []crdCase[v1alpha1.PackageSetSpec]{
		{"good", nil, "", ""},
		{"every framework, own path", func(s *v1alpha1.PackageSetSpec) {
			s.Rollout.HealthChecks = nil
			for _, f := range v1alpha1.ComplianceFrameworks {
				s.Rollout.HealthChecks = append(s.Rollout.HealthChecks, v1alpha1.HealthCheck{Name: f,
					Compliance: &v1alpha1.ComplianceCheck{Framework: f, EvidencePath: "/srv/compliance/" + f + ".json"}})
			}
		}, "", ""},
		{"framework not NixFleet's", func(s *v1alpha1.PackageSetSpec) { at(s).Framework = "nis2-essential" },
			"spec.rollout.healthChecks[0].compliance.framework", `Unsupported value: "nis2-essential"`},
		{"no framework", func(s *v1alpha1.PackageSetSpec) { at(s).Framework = "" },
			"spec.rollout.healthChecks[0].compliance.framework", "Unsupported value"},
		{"relative evidence path", func(s *v1alpha1.PackageSetSpec) { at(s).EvidencePath = "evidence.json" },
			"spec.rollout.healthChecks[0].compliance.evidencePath", "should match"},
		{"evidence path climbing out with ..", func(s *v1alpha1.PackageSetSpec) { at(s).EvidencePath = "/var/lib/../../etc/shadow" },
			"spec.rollout.healthChecks[0].compliance.evidencePath", "should match"},
		{"quoted evidence path", func(s *v1alpha1.PackageSetSpec) { at(s).EvidencePath = "/var/lib/x'; reboot; '.json" },
			"spec.rollout.healthChecks[0].compliance.evidencePath", "should match"},
		{"beside systemdFailedUnits", func(s *v1alpha1.PackageSetSpec) {
			s.Rollout.HealthChecks[0].SystemdFailedUnits = &v1alpha1.SystemdFailedUnitsCheck{}
		}, "spec.rollout.healthChecks[0]", "a health check needs exactly one of command (exec), httpGet, systemdFailedUnits or compliance"},
	}
	checkCRDCases(t, e, good, func(s v1alpha1.PackageSetSpec) client.Object {
		return &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: s}
	}, cases)
}
