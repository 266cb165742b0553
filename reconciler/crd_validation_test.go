package reconciler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The CRDs themselves refuse bad input a raw `kubectl apply` could carry, naming the field:
// label selectors (operators, values, label keys and values), node selectors and label maps,
// tolerations, object names, and a PackageSet listing itself in spec.after. Each row changes
// one field of a good object and expects Invalid with the field path and the rule's message;
// the good object itself is accepted. Objects are created with dry run: the API server
// validates them fully and stores nothing, so no reconcile runs.

// crdCase is one row: mod breaks one field; path is the field path the API server reports and
// msg a part of the rule's message ("" for both: the object is accepted).
type crdCase[S any] struct {
	name      string
	mod       func(*S)
	path, msg string
}

// checkCRDCases creates newObj(mod(good)) for each row with dry run and checks the answer.
func checkCRDCases[S any](t *testing.T, e *testEnv, good func() S, newObj func(S) client.Object, cases []crdCase[S]) {
	t.Helper()
	for _, c := range cases {
		name := c.name
		if c.path != "" {
			name = c.path + " " + c.name
		}
		t.Run(name, func(t *testing.T) {
			s := good()
			if c.mod != nil {
				c.mod(&s)
			}
			err := e.c.Create(context.Background(), newObj(s), client.DryRunAll)
			if c.path == "" {
				if err != nil {
					t.Fatalf("a good object was refused: %v", err)
				}
				return
			}
			if err == nil || !apierrors.IsInvalid(err) {
				t.Fatalf("err = %v, want Invalid at %s: %s", err, c.path, c.msg)
			}
			if !strings.Contains(err.Error(), c.path+": ") || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v\nwant the path %q and %q", err, c.path, c.msg)
			}
			t.Logf("refused: %v", err)
		})
	}
}

func badKey(m map[string]string) map[string]string {
	m["bad key!"] = "x"
	return m
}

func badPrefix(m map[string]string) map[string]string {
	m["-bad-.example.com/name"] = "x"
	return m
}

func longValue(m map[string]string) map[string]string {
	m["example.com/long"] = strings.Repeat("v", 64)
	return m
}

func manyLabels(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("example.com/l%d", i)] = "x"
	}
	return m
}

func goodTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "avs", Effect: corev1.TaintEffectPreferNoSchedule},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(30))},
		{Operator: corev1.TolerationOpExists},
	}
}

// tolerationCases are the toleration rows for a field whose path is path, reached by at.
func tolerationCases[S any](path string, at func(*S) *[]corev1.Toleration) []crdCase[S] {
	set := func(tol corev1.Toleration) func(*S) {
		return func(s *S) { *at(s) = append([]corev1.Toleration{tol}, *at(s)...) }
	}
	return []crdCase[S]{
		{"toleration operator Equals", set(corev1.Toleration{Key: "k", Operator: "Equals", Value: "v"}), path + "[0]", "a toleration's operator must be Exists or Equal"},
		{"toleration without key not Exists", set(corev1.Toleration{Operator: corev1.TolerationOpEqual, Value: "v"}), path + "[0]", "a toleration without a key must have operator Exists"},
		{"toleration Exists with value", set(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}), path + "[0]", "a toleration with operator Exists takes no value"},
		{"toleration long value", set(corev1.Toleration{Key: "k", Value: strings.Repeat("v", 64)}), path + "[0]", "a toleration's value must be a label value of at most 63 characters"},
		{"toleration effect", set(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: "NoRun"}), path + "[0]", "a toleration's effect must be NoSchedule, PreferNoSchedule or NoExecute"},
		{"toleration seconds without NoExecute", set(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptrTo(int64(5))}),
			path + "[0]", "a toleration's tolerationSeconds needs effect NoExecute"},
		{"too many tolerations", func(s *S) {
			for range 65 {
				*at(s) = append(*at(s), corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
			}
		}, path, "must have at most 64 items"},
	}
}

// selectorCases are the label selector rows for a field whose path is path, reached by at.
func selectorCases[S any](path string, at func(*S) *metav1.LabelSelector) []crdCase[S] {
	expr := func(r metav1.LabelSelectorRequirement) func(*S) {
		return func(s *S) { at(s).MatchExpressions = append(at(s).MatchExpressions, r) }
	}
	labels := func(f func(map[string]string) map[string]string) func(*S) {
		return func(s *S) {
			if at(s).MatchLabels == nil {
				at(s).MatchLabels = map[string]string{}
			}
			at(s).MatchLabels = f(at(s).MatchLabels)
		}
	}
	return []crdCase[S]{
		{"operator Equals", expr(metav1.LabelSelectorRequirement{Key: "zone", Operator: "Equals", Values: []string{"a"}}), path, "matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"},
		{"In without values", expr(metav1.LabelSelectorRequirement{Key: "zone", Operator: metav1.LabelSelectorOpIn}), path, "matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"},
		{"NotIn without values", expr(metav1.LabelSelectorRequirement{Key: "zone", Operator: metav1.LabelSelectorOpNotIn, Values: []string{}}), path, "matchExpressions: In and NotIn need values"},
		{"Exists with values", expr(metav1.LabelSelectorRequirement{Key: "zone", Operator: metav1.LabelSelectorOpExists, Values: []string{"a"}}), path, "matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"},
		{"matchLabels bad key", labels(badKey), path, "matchLabels keys must be label keys"},
		{"matchLabels bad prefix", labels(badPrefix), path, "matchLabels key prefixes (before '/') must be DNS subdomains"},
		{"matchLabels long value", labels(longValue), path, "matchLabels values must be label values of at most 63 characters"},
	}
}

// labelMapCases are the rows for a label map field named what at path, reached by at; max is
// its MaxProperties (0: none added here).
func labelMapCases[S any](what, path string, at func(*S) *map[string]string, maxProps int) []crdCase[S] {
	set := func(f func(map[string]string) map[string]string) func(*S) {
		return func(s *S) {
			if *at(s) == nil {
				*at(s) = map[string]string{}
			}
			*at(s) = f(*at(s))
		}
	}
	cases := []crdCase[S]{
		{what + " bad key", set(badKey), path, what + " keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.'"},
		{what + " bad prefix", set(badPrefix), path, what + " key prefixes (before '/') must be DNS subdomains of at most 253 characters"},
		{what + " prefix with an empty DNS label", set(func(m map[string]string) map[string]string { m["example..com/name"] = "x"; return m }), path,
			what + " key prefixes (before '/') must be DNS subdomains"},
		{what + " long value", set(longValue), path, what + " values must be label values of at most 63 characters"},
	}
	if maxProps > 0 {
		cases = append(cases, crdCase[S]{what + " too many", func(s *S) { *at(s) = manyLabels(maxProps + 1) }, path, fmt.Sprintf("must have at most %d items", maxProps)})
	}
	return cases
}

// resourceCases are the rows for a container's resources at path (v1alpha1.ResourceRequirements):
// quantities of zero and above, and at most 8 resources per map, pass; a negative request or
// limit, written as a string or a number, and a ninth resource are refused naming the map.
func resourceCases[S any](path string, at func(*S) *v1alpha1.ResourceRequirements) []crdCase[S] {
	q := resource.MustParse
	nine := map[corev1.ResourceName]resource.Quantity{}
	for i := range 9 {
		nine[corev1.ResourceName(fmt.Sprintf("example.com/r%d", i))] = q("1")
	}
	return []crdCase[S]{
		{"resources zero and positive", func(s *S) {
			*at(s) = v1alpha1.ResourceRequirements{Requests: map[corev1.ResourceName]resource.Quantity{"cpu": q("0"), "memory": q("512Mi")},
				Limits: map[corev1.ResourceName]resource.Quantity{"cpu": q("2"), "memory": q("1Gi")}}
		}, "", ""},
		{"negative request", func(s *S) {
			*at(s) = v1alpha1.ResourceRequirements{Requests: map[corev1.ResourceName]resource.Quantity{"cpu": q("-500m")}}
		}, path + ".requests", "a request must not be negative"},
		{"negative limit", func(s *S) {
			*at(s) = v1alpha1.ResourceRequirements{Limits: map[corev1.ResourceName]resource.Quantity{"memory": q("-1")}}
		}, path + ".limits", "a limit must not be negative"},
		{"nine requests", func(s *S) { *at(s) = v1alpha1.ResourceRequirements{Requests: nine} }, path + ".requests", "must have at most 8 items"},
	}
}

func TestPackageSetCRDValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	name := fmt.Sprintf("crd-valid-%d", seq.Add(1))
	good := func() v1alpha1.PackageSetSpec {
		pkg := pkgTool("1.0.0")
		pkg.PodLabels = map[string]string{"app.kubernetes.io/part-of": "gantry", "tier": "", "Example_Label.v1": "A-b_c.1"}
		pkg.PodAnnotations = map[string]string{"Example.COM/Note": "any value, even with spaces!", "note": ""}
		return v1alpha1.PackageSetSpec{
			NodeSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{"gantry.dev/test-pool": "crd-valid", "nvidia.com/gpu.present": "true"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "topology.kubernetes.io/zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"z1", "z2"}},
					{Key: "gantry.dev/spot", Operator: metav1.LabelSelectorOpDoesNotExist},
				}},
			PodNonInterruptLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "trainer"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "batch", Operator: metav1.LabelSelectorOpExists}}},
			After:                 []string{"runtime", "drivers-1"},
			AfterConverged:        []v1alpha1.ConvergedEdge{{Name: "canary", Reason: "canary first"}, {Name: "drivers-1"}},
			AdditionalTolerations: goodTolerations(),
			Packages:              []v1alpha1.Package{pkg},
			Rollout: &v1alpha1.Rollout{SoakDuration: &metav1.Duration{Duration: time.Minute},
				FleetBudget: &v1alpha1.FleetBudget{Name: "rack-a", MaxInFlight: 1, NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"rack": "a"}}},
				HealthChecks: []v1alpha1.HealthCheck{{Name: "ping", HTTPGet: &v1alpha1.HTTPGetCheck{URL: "http://$(NODE_IP):9400/health"},
					PodLabels: map[string]string{"gantry.dev/check": "ping"}}}},
		}
	}
	cases := []crdCase[v1alpha1.PackageSetSpec]{
		{"good", nil, "", ""},
		{"after itself", func(s *v1alpha1.PackageSetSpec) { s.After = append(s.After, name) }, "spec.after", "spec.after cannot name the set itself"},
		{"after duplicate", func(s *v1alpha1.PackageSetSpec) { s.After = append(s.After, "runtime") }, "spec.after[2]", "Duplicate value"},
		{"after not a name", func(s *v1alpha1.PackageSetSpec) { s.After = []string{"Runtime_Set"} }, "spec.after[0]", "should match"},
		{"afterConverged itself", func(s *v1alpha1.PackageSetSpec) {
			s.AfterConverged = append(s.AfterConverged, v1alpha1.ConvergedEdge{Name: name})
		},
			"spec.afterConverged", "spec.afterConverged cannot name the set itself"},
		{"afterConverged duplicate", func(s *v1alpha1.PackageSetSpec) {
			s.AfterConverged = append(s.AfterConverged, v1alpha1.ConvergedEdge{Name: "canary", Reason: "again"})
		}, "spec.afterConverged[2]", "Duplicate value"},
		{"afterConverged not a name", func(s *v1alpha1.PackageSetSpec) { s.AfterConverged[0].Name = "Canary_Set" }, "spec.afterConverged[0].name", "should match"},
		{"afterConverged reason too long", func(s *v1alpha1.PackageSetSpec) { s.AfterConverged[0].Reason = strings.Repeat("r", 257) },
			"spec.afterConverged[0].reason", "Too long"},
	}
	cases = append(cases, selectorCases("spec.nodeSelector", func(s *v1alpha1.PackageSetSpec) *metav1.LabelSelector { return &s.NodeSelector })...)
	cases = append(cases, selectorCases("spec.rollout.fleetBudget.nodeSelector", func(s *v1alpha1.PackageSetSpec) *metav1.LabelSelector { return s.Rollout.FleetBudget.NodeSelector })...)
	cases = append(cases, selectorCases("spec.podNonInterruptLabels", func(s *v1alpha1.PackageSetSpec) *metav1.LabelSelector { return s.PodNonInterruptLabels })...)
	cases = append(cases, tolerationCases("spec.additionalTolerations", func(s *v1alpha1.PackageSetSpec) *[]corev1.Toleration { return &s.AdditionalTolerations })...)
	cases = append(cases, labelMapCases("podLabels", "spec.packages[0].podLabels", func(s *v1alpha1.PackageSetSpec) *map[string]string { return &s.Packages[0].PodLabels }, 64)...)
	cases = append(cases, labelMapCases("podLabels", "spec.rollout.healthChecks[0].podLabels", func(s *v1alpha1.PackageSetSpec) *map[string]string { return &s.Rollout.HealthChecks[0].PodLabels }, 64)...)
	cases = append(cases,
		crdCase[v1alpha1.PackageSetSpec]{"podAnnotations bad key", func(s *v1alpha1.PackageSetSpec) { s.Packages[0].PodAnnotations["bad key!"] = "x" },
			"spec.packages[0].podAnnotations", "podAnnotations keys must be annotation keys"},
		crdCase[v1alpha1.PackageSetSpec]{"podAnnotations bad prefix", func(s *v1alpha1.PackageSetSpec) { s.Packages[0].PodAnnotations["example.com-/x"] = "x" },
			"spec.packages[0].podAnnotations", "podAnnotations key prefixes (before '/') must be DNS subdomains"},
	)
	neg := &metav1.Duration{Duration: -5 * time.Minute}
	cases = append(cases,
		crdCase[v1alpha1.PackageSetSpec]{"stageTimeout negative", func(s *v1alpha1.PackageSetSpec) { s.Packages[0].StageTimeout = neg },
			"spec.packages[0].stageTimeout", "stageTimeout must be at least 1s"},
		crdCase[v1alpha1.PackageSetSpec]{"stageTimeout under a second", func(s *v1alpha1.PackageSetSpec) {
			s.Packages[0].StageTimeout = &metav1.Duration{Duration: 500 * time.Millisecond}
		}, "spec.packages[0].stageTimeout", "stageTimeout must be at least 1s"},
		crdCase[v1alpha1.PackageSetSpec]{"gracefulShutdown negative", func(s *v1alpha1.PackageSetSpec) { s.Packages[0].GracefulShutdown = neg },
			"spec.packages[0].gracefulShutdown", "gracefulShutdown must not be negative"},
		crdCase[v1alpha1.PackageSetSpec]{"freshnessWindow negative", func(s *v1alpha1.PackageSetSpec) {
			s.Rollout.Release = &v1alpha1.Release{PublicKey: "k", Signature: "s", SignedAt: "2026-11-26T15:00:00Z", FreshnessWindow: neg}
		}, "spec.rollout.release.freshnessWindow", "freshnessWindow must not be negative"},
	)
	checkCRDCases(t, e, good, func(s v1alpha1.PackageSetSpec) client.Object {
		return &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: s}
	}, cases)
}

func TestPerformerCRDValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	good := func() v1alpha1.PerformerSpec {
		return v1alpha1.PerformerSpec{Image: imageV1, ServiceAccountName: "performer.runner",
			Scheduling: v1alpha1.Scheduling{NodeSelector: map[string]string{"kubernetes.io/os": "linux", "pool": "avs-1"},
				Tolerations: goodTolerations(), RuntimeClassName: ptrTo("kata-qemu"), PriorityClassName: ptrTo("system-node-critical")},
			HardwareRequirements: v1alpha1.HardwareRequirements{GPUCount: 1,
				CustomLabels: map[string]string{"feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true"}}}
	}
	cases := []crdCase[v1alpha1.PerformerSpec]{
		{"good", nil, "", ""},
		{"serviceAccountName", func(s *v1alpha1.PerformerSpec) { s.ServiceAccountName = "Performer_SA" }, "spec.serviceAccountName", "should match"},
		{"runtimeClassName", func(s *v1alpha1.PerformerSpec) { s.Scheduling.RuntimeClassName = ptrTo("kata qemu") }, "spec.scheduling.runtimeClassName", "should match"},
		{"priorityClassName", func(s *v1alpha1.PerformerSpec) { s.Scheduling.PriorityClassName = ptrTo("High") }, "spec.scheduling.priorityClassName", "should match"},
	}
	cases = append(cases, resourceCases("spec.resources", func(s *v1alpha1.PerformerSpec) *v1alpha1.ResourceRequirements { return &s.Resources })...)
	cases = append(cases, labelMapCases("nodeSelector", "spec.scheduling.nodeSelector", func(s *v1alpha1.PerformerSpec) *map[string]string { return &s.Scheduling.NodeSelector }, 64)...)
	cases = append(cases, labelMapCases("customLabels", "spec.hardwareRequirements.customLabels", func(s *v1alpha1.PerformerSpec) *map[string]string { return &s.HardwareRequirements.CustomLabels }, 32)...)
	cases = append(cases, tolerationCases("spec.scheduling.tolerations", func(s *v1alpha1.PerformerSpec) *[]corev1.Toleration { return &s.Scheduling.Tolerations })...)
	checkCRDCases(t, e, good, func(s v1alpha1.PerformerSpec) client.Object { return e.newPerformer("crd-valid", s) }, cases)
}

func TestExecutorCRDValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	good := func() v1alpha1.ExecutorSpec {
		return v1alpha1.ExecutorSpec{Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator:9010",
			Performers:   v1alpha1.PerformerSelection{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/avs": "demo"}}},
			OperatorKeys: v1alpha1.OperatorKeys{SecretName: "k", ECDSAKey: "e"},
			PodLabels:    map[string]string{"team": "avs", "example.com/cost-center": "42"},
			Scheduling:   v1alpha1.Scheduling{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, Tolerations: goodTolerations()}}
	}
	cases := []crdCase[v1alpha1.ExecutorSpec]{{"good", nil, "", ""}}
	cases = append(cases, selectorCases("spec.performers.selector", func(s *v1alpha1.ExecutorSpec) *metav1.LabelSelector { return s.Performers.Selector })...)
	cases = append(cases, resourceCases("spec.resources", func(s *v1alpha1.ExecutorSpec) *v1alpha1.ResourceRequirements { return &s.Resources })...)
	cases = append(cases, labelMapCases("podLabels", "spec.podLabels", func(s *v1alpha1.ExecutorSpec) *map[string]string { return &s.PodLabels }, 64)...)
	cases = append(cases, labelMapCases("nodeSelector", "spec.scheduling.nodeSelector", func(s *v1alpha1.ExecutorSpec) *map[string]string { return &s.Scheduling.NodeSelector }, 0)...)
	cases = append(cases, tolerationCases("spec.scheduling.tolerations", func(s *v1alpha1.ExecutorSpec) *[]corev1.Toleration { return &s.Scheduling.Tolerations })[:2]...)
	checkCRDCases(t, e, good, func(s v1alpha1.ExecutorSpec) client.Object { return e.newExecutor("crd-valid", s) }, cases)
}

func TestWorkspaceCRDValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	good := func() v1alpha1.WorkspaceSpec {
		s := inferenceSpec(1, 1, h100)
		s.Resource.LabelSelector = map[string]string{"topology.kubernetes.io/region": "eu-west-1", "pool": "inference"}
		s.Resource.LabelSelectorExpressions = []v1alpha1.LabelRequirement{
			{Key: "topology.kubernetes.io/zone", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"z3"}},
			{Key: "gantry.dev/spot", Operator: metav1.LabelSelectorOpDoesNotExist}}
		s.Scheduling = v1alpha1.Scheduling{NodeSelector: map[string]string{"kubernetes.io/arch": "amd64"}, Tolerations: goodTolerations()}
		return s
	}
	cases := []crdCase[v1alpha1.WorkspaceSpec]{
		{"good", nil, "", ""},
		{"expression operator Equals", func(s *v1alpha1.WorkspaceSpec) {
			s.Resource.LabelSelectorExpressions = append(s.Resource.LabelSelectorExpressions, v1alpha1.LabelRequirement{Key: "zone", Operator: "Equals", Values: []string{"a"}})
		}, "spec.resource.labelSelectorExpressions", "labelSelectorExpressions: operator must be In, NotIn, Exists or DoesNotExist"},
		{"expression key not a label key", func(s *v1alpha1.WorkspaceSpec) {
			s.Resource.LabelSelectorExpressions = append(s.Resource.LabelSelectorExpressions, v1alpha1.LabelRequirement{Key: "bad key!", Operator: metav1.LabelSelectorOpExists})
		}, "spec.resource.labelSelectorExpressions[2]", "key must be a label key"},
		{"expression value not a label value", func(s *v1alpha1.WorkspaceSpec) {
			s.Resource.LabelSelectorExpressions = append(s.Resource.LabelSelectorExpressions, v1alpha1.LabelRequirement{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a b"}})
		}, "spec.resource.labelSelectorExpressions[2]", "values must be label values"},
		// KAITO's resource.partition, private presets and inference.template parts.
		{"MIG partition with gpuCount", func(s *v1alpha1.WorkspaceSpec) {
			s.Resource.Partition = &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "1g.10gb"}
		}, "spec", "spec.resource.gpuCount must be 0 or unset"},
		{"MIG profile malformed", func(s *v1alpha1.WorkspaceSpec) {
			s.Resource.GPUCount = 0
			s.Resource.Partition = &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "1g10gb"}
		}, "spec.resource.partition.profile", "should match"},
		{"MIG partition with modelGPUs", func(s *v1alpha1.WorkspaceSpec) {
			s.Resource.GPUCount = 0
			s.Resource.Partition = &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "1g.10gb"}
			s.Inference.ModelGPUs = 2
		}, "spec", "spec.inference.modelGPUs cannot be set with spec.resource.partition"},
		{"MIG partition on provisioned nodes", func(s *v1alpha1.WorkspaceSpec) {
			s.Resource.GPUCount, s.Resource.GPUProduct, s.Resource.InstanceType = 0, "", "Standard_NC24ads_A100_v4"
			s.Resource.Partition = &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "1g.10gb"}
		}, "spec", "spec.resource.partition needs existing nodes"},
		{"private preset without image", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference = &v1alpha1.WorkspaceInference{Preset: "phi-2", AccessMode: "private"}
		}, "spec.inference", "spec.inference.accessMode private needs spec.inference.image"},
		{"volume with two sources", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference.Volumes = []v1alpha1.WorkspaceVolume{{Name: "v", MountPath: "/v", ConfigMap: "a", Secret: "b"}}
		}, "spec.inference.volumes[0]", "a volume needs exactly one of configMap, secret, pvc and emptyDir"},
		{"volume named config", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference.Volumes = []v1alpha1.WorkspaceVolume{{Name: "config", MountPath: "/v", EmptyDir: true}}
		}, "spec.inference.volumes[0].name", "the volume name config is spec.inference.config's"},
		{"probe with httpPath and exec", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference.ReadinessProbe = &v1alpha1.WorkspaceProbe{HTTPPath: "/health", Exec: []string{"true"}}
		}, "spec.inference.readinessProbe", "a probe needs exactly one of httpPath and exec"},
		{"performance mode", func(s *v1alpha1.WorkspaceSpec) { s.Inference.PerformanceMode = "fast" }, "spec.inference.performanceMode", "Unsupported value"},
		// KAITO's custom template's named container and in-memory emptyDir; its private tuning preset.
		{"KAITO custom template", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference.ContainerName = "custom-llm-container"
			s.Inference.Volumes = []v1alpha1.WorkspaceVolume{{Name: "dshm", MountPath: "/dev/shm", EmptyDir: true, Medium: "Memory", SizeLimit: "16Gi"}}
		}, "", ""},
		{"container name not a DNS label", func(s *v1alpha1.WorkspaceSpec) { s.Inference.ContainerName = "Custom_LLM" }, "spec.inference.containerName", "should match"},
		{"medium without emptyDir", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference.Volumes = []v1alpha1.WorkspaceVolume{{Name: "v", MountPath: "/v", ConfigMap: "c", Medium: "Memory"}}
		}, "spec.inference.volumes[0]", "a volume's medium and sizeLimit go with emptyDir"},
		{"medium HugePages", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference.Volumes = []v1alpha1.WorkspaceVolume{{Name: "v", MountPath: "/v", EmptyDir: true, Medium: "HugePages"}}
		}, "spec.inference.volumes[0].medium", "Unsupported value"},
		{"sizeLimit not a quantity", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference.Volumes = []v1alpha1.WorkspaceVolume{{Name: "v", MountPath: "/v", EmptyDir: true, SizeLimit: "8GB"}}
		}, "spec.inference.volumes[0].sizeLimit", "should match"},
		{"sizeLimit zero", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference.Volumes = []v1alpha1.WorkspaceVolume{{Name: "v", MountPath: "/v", EmptyDir: true, SizeLimit: "0Gi"}}
		}, "spec.inference.volumes[0].sizeLimit", "sizeLimit must be above 0"},
		{"KAITO private tuning preset", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference = nil
			s.Tuning = &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningQLoRA, Preset: "falcon-7b", AccessMode: "private", Image: "registry.example/falcon:1",
				ImagePullSecrets: []string{"acr-pull"}, ModelAccessSecret: "hf-token",
				Input: v1alpha1.WorkspaceDataSource{URLs: []string{"https://example.com/d"}}, Output: v1alpha1.WorkspaceDataDestination{Image: "registry.example/o:1"}}
		}, "", ""},
		{"private tuning preset without image", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference = nil
			s.Tuning = &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningQLoRA, Preset: "falcon-7b", AccessMode: "private",
				Input: v1alpha1.WorkspaceDataSource{URLs: []string{"https://example.com/d"}}, Output: v1alpha1.WorkspaceDataDestination{Image: "registry.example/o:1"}}
		}, "spec.tuning", "spec.tuning.accessMode private needs spec.tuning.image"},
		// Any Hugging Face model (issue 40 item 5).
		{"a Hugging Face model without an image, sized", func(s *v1alpha1.WorkspaceSpec) {
			s.Resource.GPUCount = 0
			s.Inference = &v1alpha1.WorkspaceInference{Model: "Qwen/Qwen2.5-7B-Instruct", ModelSize: &v1alpha1.WorkspaceModelSize{Parameters: "7.62B", DType: "bfloat16"}}
		}, "", ""},
		{"a model that is no Hugging Face ID without an image", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference = &v1alpha1.WorkspaceInference{Model: "plain"}
		}, "spec.inference", "the image may be left out for a Hugging Face model ID"},
		{"model size and config both", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference = &v1alpha1.WorkspaceInference{Model: "org/m", ModelSize: &v1alpha1.WorkspaceModelSize{Parameters: "7B"}, ModelConfig: &v1alpha1.WorkspaceModelConfig{ConfigMap: "c"}}
		}, "spec.inference", "spec.inference.modelSize and modelConfig are exclusive"},
		{"model size with a preset", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference = &v1alpha1.WorkspaceInference{Preset: "phi-2", ModelSize: &v1alpha1.WorkspaceModelSize{Parameters: "7B"}}
		}, "spec.inference", "spec.inference.modelSize and modelConfig are for a model without a preset"},
		{"model size with parameters and gpuMemory", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference = &v1alpha1.WorkspaceInference{Model: "org/m", ModelSize: &v1alpha1.WorkspaceModelSize{Parameters: "7B", GPUMemory: "20Gi"}}
		}, "spec.inference.modelSize", "exactly one of parameters and gpuMemory"},
		{"parameters malformed", func(s *v1alpha1.WorkspaceSpec) {
			s.Inference = &v1alpha1.WorkspaceInference{Model: "org/m", ModelSize: &v1alpha1.WorkspaceModelSize{Parameters: "7 billion"}}
		}, "spec.inference.modelSize.parameters", "should match"},
	}
	cases = append(cases, labelMapCases("labelSelector", "spec.resource.labelSelector", func(s *v1alpha1.WorkspaceSpec) *map[string]string { return &s.Resource.LabelSelector }, 32)...)
	cases = append(cases, labelMapCases("nodeSelector", "spec.scheduling.nodeSelector", func(s *v1alpha1.WorkspaceSpec) *map[string]string { return &s.Scheduling.NodeSelector }, 0)...)
	cases = append(cases, tolerationCases("spec.scheduling.tolerations", func(s *v1alpha1.WorkspaceSpec) *[]corev1.Toleration { return &s.Scheduling.Tolerations })[:2]...)
	checkCRDCases(t, e, good, func(s v1alpha1.WorkspaceSpec) client.Object { return e.newWorkspace("crd-valid", nil, s) }, cases)
}

// The CRDs refuse names that cannot become the objects they name: a Performer's Pod and Service
// are performer-<name> (a DNS-1035 label: at most 53 characters left, no dot), an Executor's
// Deployment and ConfigMaps executor-<name>[-<hash>] (at most 40), as the provider checks at plan.
func TestCRDNameRules(t *testing.T) {
	e := setup(t)
	t.Parallel()
	perf := v1alpha1.PerformerSpec{Image: imageV1}
	exec := v1alpha1.ExecutorSpec{Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator:9010",
		Performers:   v1alpha1.PerformerSelection{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/avs": "demo"}}},
		OperatorKeys: v1alpha1.OperatorKeys{SecretName: "k", ECDSAKey: "e"}}
	for _, tc := range []struct {
		name, msg string
		obj       client.Object
	}{
		{"performer ok", "", &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("p", 53), Namespace: e.ns}, Spec: perf}},
		{"performer with a dot", "metadata.name must be a DNS-1035 label of at most 53 characters (it names the Pod and Service performer-<name>)",
			&v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: "avs.one", Namespace: e.ns}, Spec: perf}},
		{"performer too long for its Service", "metadata.name must be a DNS-1035 label of at most 53 characters",
			&v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("p", 54), Namespace: e.ns}, Spec: perf}},
		{"performer starting with a digit", "metadata.name must be a DNS-1035 label",
			&v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: "1avs", Namespace: e.ns}, Spec: perf}},
		{"executor ok", "", &v1alpha1.Executor{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("e", 40), Namespace: e.ns}, Spec: exec}},
		{"executor too long for its ConfigMaps", "metadata.name must be a DNS-1035 label of at most 40 characters",
			&v1alpha1.Executor{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("e", 41), Namespace: e.ns}, Spec: exec}},
		{"executor with a dot", "metadata.name must be a DNS-1035 label",
			&v1alpha1.Executor{ObjectMeta: metav1.ObjectMeta{Name: "exec.one", Namespace: e.ns}, Spec: exec}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.c.Create(context.Background(), tc.obj, client.DryRunAll)
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("a good name was refused: %v", err)
			case tc.msg != "" && (err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg)):
				t.Fatalf("err = %v, want Invalid: %s", err, tc.msg)
			case tc.msg != "":
				t.Logf("refused: %v", err)
			}
		})
	}
}

// operatorKeys.remoteSigner (Hourglass compatibility mode's web3signer, issue 40 item 8): the
// CRD accepts it alone or beside a BLS keystore Secret, and refuses it without hourglassCompat,
// beside ecdsaKey or remoteSignerUrl, TLS Secrets on an http:// URL, a public key or address of
// the wrong shape, and hourglassCompat with neither ecdsaKey nor remoteSigner.
func TestExecutorRemoteSignerCRDValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pub := "0x" + strings.Repeat("ab", 64)
	good := func() v1alpha1.ExecutorSpec {
		return v1alpha1.ExecutorSpec{Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator:9010",
			OperatorAddress: "0x6ca766d180398847cEb1a58f03e029D65d88a878", HourglassCompat: &v1alpha1.HourglassCompat{},
			OperatorKeys: v1alpha1.OperatorKeys{RemoteSigner: &v1alpha1.RemoteSigner{URL: "https://web3signer.signers.svc:9000", PublicKey: pub,
				CASecretName: "signer-ca", ClientCertSecretName: "signer-client"}}}
	}
	cases := []crdCase[v1alpha1.ExecutorSpec]{
		{"good", nil, "", ""},
		{"beside a BLS keystore", func(s *v1alpha1.ExecutorSpec) {
			s.OperatorKeys.SecretName, s.OperatorKeys.BLSKeystoreKey = "hg-keys", "bls-keystore"
		}, "", ""},
		{"own address, plain http", func(s *v1alpha1.ExecutorSpec) {
			s.OperatorKeys.RemoteSigner = &v1alpha1.RemoteSigner{URL: "http://web3signer:9000", PublicKey: "0x04" + strings.Repeat("cd", 64), FromAddress: "0x" + strings.Repeat("1", 40)}
		}, "", ""},
		{"without hourglassCompat", func(s *v1alpha1.ExecutorSpec) {
			s.HourglassCompat = nil
		}, "spec", "operatorKeys.remoteSigner is Hourglass's remoteSignerConfig: it needs hourglassCompat"},
		{"beside ecdsaKey", func(s *v1alpha1.ExecutorSpec) {
			s.OperatorKeys.SecretName, s.OperatorKeys.ECDSAKey = "hg-keys", "ecdsa"
		}, "spec.operatorKeys", "no remoteSignerUrl or ecdsaKey beside it"},
		{"TLS on http", func(s *v1alpha1.ExecutorSpec) { s.OperatorKeys.RemoteSigner.URL = "http://web3signer:9000" },
			"spec.operatorKeys.remoteSigner", "need an https:// url"},
		{"public key too short", func(s *v1alpha1.ExecutorSpec) {
			s.OperatorKeys.RemoteSigner.PublicKey = "0x" + strings.Repeat("ab", 33)
		},
			"spec.operatorKeys.remoteSigner.publicKey", "should match"},
		{"address", func(s *v1alpha1.ExecutorSpec) { s.OperatorKeys.RemoteSigner.FromAddress = "0x12" },
			"spec.operatorKeys.remoteSigner.fromAddress", "should match"},
		{"no key at all", func(s *v1alpha1.ExecutorSpec) {
			s.OperatorKeys = v1alpha1.OperatorKeys{SecretName: "hg-keys", BLSKeystoreKey: "bls-keystore"}
		}, "spec", "hourglassCompat needs operatorKeys.ecdsaKey"},
	}
	checkCRDCases(t, e, good, func(s v1alpha1.ExecutorSpec) client.Object { return e.newExecutor("crd-signer", s) }, cases)
}

// hourglassCompat.configFormat hourglass-executor-v1alpha1 (the removed HourglassExecutor
// operator's config, issue 40 item 12): the CRD accepts it without operatorAddress and with a
// raw BLS key, and refuses what that config has no place for (avsPerformers, l1Chain, a
// grpcPort other than 9090, a BLS keystore, a remote signer) and a format it does not know;
// configFormat ponos keeps Hourglass's current rules.
func TestExecutorHourglassV1alpha1CRDValidation(t *testing.T) {
	e := setup(t)
	t.Parallel()
	good := func() v1alpha1.ExecutorSpec {
		return v1alpha1.ExecutorSpec{Image: execImageV1, Chains: threeChains(), AggregatorEndpoint: "aggregator:9010",
			OperatorKeys:    v1alpha1.OperatorKeys{SecretName: "hg-keys", ECDSAKey: "ecdsa", BLSKey: "bls"},
			HourglassCompat: &v1alpha1.HourglassCompat{ConfigFormat: v1alpha1.HourglassConfigFormatExecutorV1alpha1}}
	}
	cases := []crdCase[v1alpha1.ExecutorSpec]{
		{"good", nil, "", ""},
		{"only an ECDSA key, grpcPort 9090", func(s *v1alpha1.ExecutorSpec) { s.OperatorKeys.BLSKey, s.GRPCPort = "", 9090 }, "", ""},
		{"unknown format", func(s *v1alpha1.ExecutorSpec) { s.HourglassCompat.ConfigFormat = "v1" },
			"spec.hourglassCompat.configFormat", "supported values"},
		{"ponos without operatorAddress", func(s *v1alpha1.ExecutorSpec) { s.HourglassCompat.ConfigFormat = v1alpha1.HourglassConfigFormatPonos },
			"spec", "hourglassCompat needs operatorAddress"},
		{"avsPerformers", func(s *v1alpha1.ExecutorSpec) {
			s.AVSPerformers = []v1alpha1.AVSPerformer{{AVSAddress: "0x" + strings.Repeat("d4", 20)}}
		}, "spec", "hourglass-executor-v1alpha1 takes no avsPerformers"},
		{"l1Chain", func(s *v1alpha1.ExecutorSpec) { s.HourglassCompat.L1Chain = "base" },
			"spec", "takes no avsPerformers and no hourglassCompat.l1Chain"},
		{"grpcPort", func(s *v1alpha1.ExecutorSpec) { s.GRPCPort = 9000 }, "spec", "needs grpcPort 9090"},
		{"BLS keystore", func(s *v1alpha1.ExecutorSpec) { s.OperatorKeys.BLSKey, s.OperatorKeys.BLSKeystoreKey = "", "ks" },
			"spec", "takes no operatorKeys.blsKeystoreKey, remoteSigner or remoteSignerUrl"},
		{"remote signer", func(s *v1alpha1.ExecutorSpec) {
			s.OperatorKeys = v1alpha1.OperatorKeys{RemoteSigner: &v1alpha1.RemoteSigner{URL: "https://w3s:9000", PublicKey: "0x" + strings.Repeat("ab", 64)}}
		}, "spec", "takes no operatorKeys.blsKeystoreKey, remoteSigner or remoteSignerUrl"},
	}
	checkCRDCases(t, e, good, func(s v1alpha1.ExecutorSpec) client.Object { return e.newExecutor("crd-hgv1", s) }, cases)
}
