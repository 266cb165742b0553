package provider

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// The acceptance layer of the zero/empty round-trip table (zero_roundtrip_table_test.go):
// the rows that plan cleanly and need nothing a test cluster lacks (rtOverride.acc) are packed
// into a few configurations per resource (rtPack: a row joins the first batch it does not
// contradict, the batch still planning cleanly and every row in it still holding its value).
// Each batch is applied; the object is read from the API server and its spec must be exactly
// the one the unit layer predicted (expand, the CRD's pruning and defaults), every zero and
// empty the unit layer found in the object among it; then a plan must be empty (the refresh
// reads back what was written). The four resources run in parallel in one namespace with the
// fixtures the rows name.

// rtMaxBatches bounds the applies per resource (the acceptance layer's run time).
const rtMaxBatches = 10

// rtBatch is one apply: a configuration and the rows it carries.
type rtBatch struct {
	config map[string]any
	rows   []rtRow
}

// rtPack packs kind k's acceptance rows for namespace ns and object name into batches: each
// row joins the first batch it fits (rtJoin), then batches are emptied into the others where
// their rows fit there, smallest first. It returns the batches and how many rows it left out:
// those the plan refuses, those that need what the test cluster lacks (rtOverride.acc), and
// the redundant ones (rtRedundant).
func rtPack(t testing.TB, h *rtHarness, k *rtKind, ns, name string) ([]rtBatch, map[string]int) {
	all := rtGenerateFor(k, ns, name)
	parents := map[string]bool{}
	for _, r := range all {
		if i := strings.LastIndex(r.attr, "."); i > 0 {
			parents[strings.TrimSuffix(strings.TrimSuffix(r.attr[:i], "[]"), "{}")] = true
		}
	}
	var rows []rtRow
	left := map[string]int{}
	for _, r := range all {
		o := h.run(t, k, r.config)
		switch {
		case len(o.errs) > 0 || o.fail != "":
			left["refused at plan"]++
		case r.acc != "":
			left["needing what the test cluster lacks"]++
		case rtRedundant(r, parents):
			left["redundant"]++
		default:
			rows = append(rows, r)
		}
	}
	// Rows with a group first, a group's together: they fill the fewest batches their own
	// contradictions allow, and the rest fill in around them.
	sort.SliceStable(rows, func(i, j int) bool {
		return rows[i].group != "" && (rows[j].group == "" || rows[i].group < rows[j].group)
	})
	var batches []rtBatch
	for _, r := range rows {
		batches = rtPlace(t, h, k, batches, r)
	}
	for improved := true; improved; {
		improved = false
		sort.SliceStable(batches, func(i, j int) bool { return len(batches[i].rows) < len(batches[j].rows) })
		for i := range batches {
			others := append(append([]rtBatch(nil), batches[:i]...), batches[i+1:]...)
			ok := true
			for _, r := range batches[i].rows {
				if others, ok = rtFit(t, h, k, others, r); !ok {
					break
				}
			}
			if ok {
				batches, improved = others, true
				break
			}
		}
	}
	if len(batches) > rtMaxBatches {
		t.Fatalf("%s: %d batches (more than %d): the rows contradict one another more than expected", k.typeName, len(batches), rtMaxBatches)
	}
	return batches, left
}

// rtRedundant: a row of a nested object, list or map whose attributes all have rows of their
// own, setting it to its smallest value (the value row of a list or map: one element; the
// "empty" row of an object with required attributes: just those). Each row under it carries
// that same value with one attribute changed.
func rtRedundant(r rtRow, parents map[string]bool) bool {
	if !parents[r.attr] {
		return false
	}
	switch v := r.value.(type) {
	case []any:
		return r.what == rtValue
	case map[string]any:
		return r.what == rtValue || len(v) > 0
	}
	return false
}

// rtPlace puts r in the first batch it fits, or in a new one.
func rtPlace(t testing.TB, h *rtHarness, k *rtKind, batches []rtBatch, r rtRow) []rtBatch {
	if out, ok := rtFit(t, h, k, batches, r); ok {
		return out
	}
	return append(batches, rtBatch{config: rtCopy(r.config).(map[string]any), rows: []rtRow{r}})
}

// rtFit puts r in the first of batches it fits (a changed copy of batches), or reports false.
func rtFit(t testing.TB, h *rtHarness, k *rtKind, batches []rtBatch, r rtRow) ([]rtBatch, bool) {
	for i := range batches {
		if cfg, ok := rtJoin(t, h, k, batches[i], r); ok {
			out := append([]rtBatch(nil), batches...)
			out[i] = rtBatch{config: cfg, rows: append(append([]rtRow(nil), batches[i].rows...), r)}
			return out, true
		}
	}
	return nil, false
}

// rtJoin returns batch b's configuration with row r in it, when every row still holds its
// value (and the siblings it sets) and the configuration passes the plan-time validation.
func rtJoin(t testing.TB, h *rtHarness, k *rtKind, b rtBatch, r rtRow) (map[string]any, bool) {
	for _, other := range b.rows {
		if r.group != "" && other.group != "" && r.group != other.group {
			return nil, false
		}
	}
	cfg := rtCopy(b.config).(map[string]any)
	rtFill(cfg, r.config)
	for _, p := range sortedKeys(r.sets) {
		rtSetPath(cfg, p, r.sets[p])
	}
	parent, ok := rtLookup(cfg, r.at[:len(r.at)-1]).(map[string]any)
	if !ok {
		return nil, false
	}
	parent[r.at[len(r.at)-1].(string)] = rtCopy(r.value)
	for _, other := range append(b.rows, r) {
		if !reflect.DeepEqual(rtLookup(cfg, other.at), rtCopy(other.value)) {
			return nil, false
		}
		for p, v := range other.sets {
			if !reflect.DeepEqual(rtGetPath(cfg, p), rtCopy(v)) {
				return nil, false
			}
		}
	}
	return cfg, h.valid(t, k, cfg)
}

// rtFill adds to dst what src has and dst lacks: keys, at every depth of objects and of
// lists of objects of the same length. It never changes a value dst has.
func rtFill(dst, src map[string]any) {
	for k, sv := range src {
		dv, ok := dst[k]
		if !ok {
			dst[k] = rtCopy(sv)
			continue
		}
		switch s := sv.(type) {
		case map[string]any:
			if d, ok := dv.(map[string]any); ok {
				rtFill(d, s)
			}
		case []any:
			if d, ok := dv.([]any); ok && len(d) == len(s) && rtObjects(d) && rtObjects(s) {
				for i := range s {
					rtFill(d[i].(map[string]any), s[i].(map[string]any))
				}
			}
		}
	}
}

func rtObjects(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// rtFixtures creates what the rows name in namespace ns: the Secrets zero-secret (keys
// zerotest and HF_TOKEN) and operator-keys (keys ecdsa, bls, ecdsa-2, bls-2, password), the ConfigMap zero-config, the ServiceAccount
// zero-sa, and the PriorityClass gantry-zero-test (cluster-scoped, deleted at the end).
func rtFixtures(t *testing.T, c *kube.Clients, ns string) {
	ctx := context.Background()
	createKeySecret(t, c, ns)
	core := c.Core.CoreV1()
	// The rows' other key names (one Secret key for two operator keys fails the plan).
	keys, err := core.Secrets(ns).Get(ctx, "operator-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keys.StringData = map[string]string{"ecdsa-2": accKeyMaterial, "bls-2": accKeyMaterial + "00", "password": "zero"}
	if _, err := core.Secrets(ns).Update(ctx, keys, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: rtSecret},
		StringData: map[string]string{rtGeneric: "v", "HF_TOKEN": "hf_zero"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rtConfigMap},
		Data: map[string]string{rtGeneric: "v", "inference_config.yaml": "vllm: {}\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: rtServiceAccount}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pcs := c.Core.SchedulingV1().PriorityClasses()
	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: rtPriorityClass}, Value: 0,
		Description: "the zero/empty round-trip acceptance test's (provider/zero_roundtrip_acc_test.go)"}, metav1.CreateOptions{})
	rtClusterFixture(t, err, func() error { return pcs.Delete(context.Background(), rtPriorityClass, metav1.DeleteOptions{}) })
	rcs := c.Core.NodeV1().RuntimeClasses()
	_, err = rcs.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: rtRuntimeClass}, Handler: "runc"}, metav1.CreateOptions{})
	rtClusterFixture(t, err, func() error { return rcs.Delete(context.Background(), rtRuntimeClass, metav1.DeleteOptions{}) })
}

// rtClusterFixture: a cluster-scoped fixture this test created is deleted when it ends; one
// that already existed (another run's) is used as it is.
func rtClusterFixture(t *testing.T, err error, del func() error) {
	switch {
	case err == nil:
		t.Cleanup(func() { _ = del() })
	case !apierrors.IsAlreadyExists(err):
		t.Fatal(err)
	}
}

// TestAccZeroRoundTrip is the acceptance layer: the four resources in parallel, each a few
// applies of packed rows, each followed by an empty plan.
func TestAccZeroRoundTrip(t *testing.T) {
	skipUnlessAcc(t)
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-zero")
	rtFixtures(t, c, ns)
	h := newRTHarness(t)
	for _, k := range rtKinds() {
		t.Run(strings.TrimPrefix(k.typeName, "gantry_"), func(t *testing.T) {
			t.Parallel()
			rtAccKind(t, h, c, k, ns)
		})
	}
}

func rtAccKind(t *testing.T, h *rtHarness, c *kube.Clients, k *rtKind, ns string) {
	name := "zero"
	if k.typeName == "gantry_package_set" {
		name = "zero-rt-" + rand.String(5)
	}
	batches, left := rtPack(t, h, k, ns, name)
	rows := 0
	var steps []resource.TestStep
	for i, b := range batches {
		rows += len(b.rows)
		hcl := rtAccHCL(k, b.config)
		steps = append(steps,
			resource.TestStep{Config: hcl, Check: rtCheckLive(t, h, c, k, ns, name, b, i),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			resource.TestStep{Config: hcl, PlanOnly: true})
	}
	t.Logf("%s: %d rows in %d applies; left to the unit layer: %s", k.typeName, rows, len(batches), rtCounts(left))
	start := time.Now()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
	})
	t.Logf("%s: %s", k.typeName, time.Since(start).Round(time.Second))
}

// rtAccHCL renders a batch: the resource (short timeouts, so a batch that cannot become ready
// fails in minutes) and, for an executor, the performer its performer_names row names.
func rtAccHCL(k *rtKind, cfg map[string]any) string {
	cfg = rtCopy(cfg).(map[string]any)
	cfg["timeouts"] = map[string]any{"create": "3m", "update": "3m", "delete": "3m"}
	out := rtResourceHCL(k.typeName, "zero", cfg)
	if k.typeName == "gantry_executor" {
		out = strings.TrimSuffix(out, "}\n") + "  depends_on = [gantry_performer.zero]\n}\n" +
			rtResourceHCL("gantry_performer", "zero", map[string]any{"name": "zero-performer", "namespace": cfg["namespace"],
				"image": "ghcr.io/gantry-dev/zero-performer:1.0.0", "labels": map[string]any{"app": "zero"}})
	}
	return out
}

// rtCheckLive reads the object from the API server: its spec must be the one the unit layer
// predicted for the batch, its labels and annotations must include the configured ones, and
// every zero and empty the unit layer found in the object must be there.
func rtCheckLive(t *testing.T, h *rtHarness, c *kube.Clients, k *rtKind, ns, name string, b rtBatch, i int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		want := h.run(t, k, b.config).object
		gvr := v1alpha1.GroupVersion.WithResource(strings.TrimSuffix(strings.TrimPrefix(k.crd, "gantry.dev_"), ".yaml"))
		ri := c.Dynamic.Resource(gvr).Namespace(ns)
		if k.typeName == "gantry_package_set" {
			ri = c.Dynamic.Resource(gvr).Namespace("")
		}
		live, err := ri.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got := rtCopyJSON(live.Object).(map[string]any)
		var problems []string
		for _, d := range rtDiff(want["spec"], got["spec"], rtSpecSchema(t, k), []string{"spec"}) {
			w, _ := rtResolve(want, d)
			g, _ := rtResolve(got, d)
			problems = append(problems, fmt.Sprintf("%s: predicted %v, stored %v", strings.Join(d, "."), w, g))
		}
		for _, field := range []string{"labels", "annotations"} {
			wm, _ := rtResolve(want, []string{"metadata", field})
			gm, _ := rtResolve(got, []string{"metadata", field})
			for key, v := range asMap(wm) {
				if asMap(gm)[key] != v {
					problems = append(problems, fmt.Sprintf("metadata.%s[%q] = %v, stored %v", field, key, v, asMap(gm)[key]))
				}
			}
		}
		for _, r := range b.rows {
			p := k.jsonPath(r.attr)
			if p[0] == "metadata" {
				continue // labels and annotations: the provider adds its own (checked above)
			}
			if w, found := rtResolve(want, p); found {
				if g, ok := rtResolve(got, p); !ok || !reflect.DeepEqual(w, g) {
					problems = append(problems, fmt.Sprintf("%s: %s predicted %v, stored %v (present %v)", r, strings.Join(p, "."), w, g, ok))
				}
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("batch %d: the stored object is not what the provider sent:\n%s", i+1, strings.Join(problems, "\n"))
		}
		if _, autoscaled := b.config["autoscaling"]; autoscaled && k.typeName == "gantry_workspace" {
			return rtStaysReady(ri, name)
		}
		return nil
	}
}

// rtStaysReady guards an autoscaled workspace's batch: the apply returned once the workspace
// was Ready, and it must stay Ready for 5 s after it (read every 500 ms; a failed read is
// read again) while its HorizontalPodAutoscaler and Deployment controller act on what the
// apply wrote (the old pods go, the HPA's first pass brings the count into the bounds); the
// post-apply empty plan is checked after that. Such a workspace used to go NotReady for a
// while after its apply (the fresh-clone run of Terraform 1.8 caught it once: the batch that
// switched from an external autoscaler to an HPA with min_replicas = 2 and a new pod template
// was Ready on the old pod and the rollout's surge pod while its Deployment was still at 1,
// then NotReady until the HPA raised it), and the refresh planned a retry. internal/workspace
// now counts only the Ready replicas sure to stay among those the autoscaler asks for
// (TestAutoscaledApplyNeverReadyThenNotReady replays that batch); this fails at once if the
// workspace leaves Ready, naming the state and its InferenceReady condition.
func rtStaysReady(ri dynamic.ResourceInterface, name string) error {
	end := time.Now().Add(5 * time.Second)
	var readErr error
	for {
		u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
		readErr = err
		if err == nil {
			if state, _, _ := unstructured.NestedString(u.Object, "status", "state"); state != "Ready" {
				return fmt.Errorf("the autoscaled workspace left Ready after the apply had returned: state %q, %s", state, rtCondition(u, "InferenceReady"))
			}
		}
		if time.Now().After(end) {
			if readErr != nil {
				return fmt.Errorf("the autoscaled workspace after the apply: %w", readErr)
			}
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// rtCondition is the condition typ of u's status as "typ=status reason: message".
func rtCondition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m := asMap(c); m["type"] == typ {
			return fmt.Sprintf("%s=%v %v: %v", typ, m["status"], m["reason"], m["message"])
		}
	}
	return typ + " absent"
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// rtSpecSchema is the structural schema of the kind's spec.
func rtSpecSchema(t testing.TB, k *rtKind) *structuralschema.Structural {
	s := rtStructural(t, k.crd)
	spec := s.Properties["spec"]
	return &spec
}

// An object the configuration empties after filling it reaches the cluster as {} (server-side
// apply alone turns it into null, which the CRD refuses: applyKeepingEmpty): a package set's
// health check systemd_failed_units = { max = 1 } → {} and drain = { grace_period } → {}, and
// an executor's hourglass_compat = { l1_chain } → {} (the migration guide's own example); each
// apply is followed by an empty plan and the stored objects are {}.
func TestAccZeroRoundTrip_emptiedObjects(t *testing.T) {
	skipUnlessAcc(t)
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-zero-emptied")
	createKeySecret(t, c, ns)
	set := "zero-emptied-" + rand.String(5)
	config := func(units, drain, compat map[string]any) string {
		ps := map[string]any{"name": set, "node_selector": map[string]any{"gantry.dev/zero-test": "none"},
			"packages": []any{map[string]any{"name": "zero-pkg", "version": "1.0.0", "image": "ghcr.io/gantry-dev/test-package:1.0.0"}},
			"drain":    drain,
			"rollout":  map[string]any{"soak_duration": "1m", "health_checks": []any{map[string]any{"name": "units", "systemd_failed_units": units}}},
			"timeouts": map[string]any{"create": "2m", "update": "2m", "delete": "2m"}}
		ex := rtExecutor().base(ns, "zero")
		ex["operator_address"] = rtAddr1
		ex["operator_keys"] = map[string]any{"secret_name": "operator-keys", "ecdsa_key": "ecdsa"}
		ex["hourglass_compat"] = compat
		ex["timeouts"] = map[string]any{"create": "3m", "update": "3m", "delete": "3m"}
		return rtResourceHCL("gantry_package_set", "zero", ps) + rtResourceHCL("gantry_executor", "zero", ex)
	}
	stored := func(want string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			ps, err := c.Dynamic.Resource(v1alpha1.GroupVersion.WithResource("packagesets")).Get(context.Background(), set, metav1.GetOptions{})
			if err != nil {
				return err
			}
			ex, err := c.Dynamic.Resource(v1alpha1.GroupVersion.WithResource("executors")).Namespace(ns).Get(context.Background(), "zero", metav1.GetOptions{})
			if err != nil {
				return err
			}
			hcs, _ := rtResolve(ps.Object, []string{"spec", "rollout", "healthChecks"})
			drain, _ := rtResolve(ps.Object, []string{"spec", "drain"})
			compat, _ := rtResolve(ex.Object, []string{"spec", "hourglassCompat"})
			if got := fmt.Sprintf("%v %v %v", hcs, drain, compat); got != want {
				return fmt.Errorf("stored healthChecks, drain, hourglassCompat = %s, want %s", got, want)
			}
			return nil
		}
	}
	empty := resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	filled := config(map[string]any{"max": 1}, map[string]any{"grace_period": "30s"}, map[string]any{"l1_chain": "ethereum"})
	emptied := config(map[string]any{}, map[string]any{}, map[string]any{})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: filled, ConfigPlanChecks: empty, Check: stored("[map[name:units systemdFailedUnits:map[max:1]]] map[gracePeriod:30s] map[l1Chain:ethereum]")},
			{Config: emptied, ConfigPlanChecks: empty, Check: stored("[map[name:units systemdFailedUnits:map[]]] map[] map[]")},
			{Config: emptied, PlanOnly: true},
		},
	})
}
