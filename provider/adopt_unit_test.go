package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// fakeClusterProvider is the provider whose Configure hands every resource and list resource
// clients of a fake cluster (no API server): the protocol requests run the real code.
type fakeClusterProvider struct {
	*gantryProvider
	data *providerData
}

func (p fakeClusterProvider) Configure(_ context.Context, _ provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	resp.ResourceData, resp.ListResourceData = p.data, p.data
}

// adoptServer is a configured protocol server over a fake cluster holding objs, whose dynamic
// client answers LIST and GET of the upstream kind gvr with failure (nil: as stored).
type adoptServer struct {
	srv    tfprotov6.ProviderServer
	schema *tfprotov6.GetProviderSchemaResponse
	idents map[string]tftypes.Type
}

func newAdoptServer(t *testing.T, gvr schema.GroupVersionResource, failure error, objs ...runtime.Object) *adoptServer {
	t.Helper()
	ctx := context.Background()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		wait.PackageSet.GVR: "PackageSetList", wait.Performer.GVR: "PerformerList", wait.Workspace.GVR: "WorkspaceList", adopt.SkyhookGVR: "SkyhookList", adopt.KAITOWorkspaceGVR: "WorkspaceList",
		adopt.HourglassPerformerGVR: "PerformerList",
	}, objs...)
	if failure != nil {
		fail := func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, failure }
		dyn.PrependReactor("list", gvr.Resource, fail)
		dyn.PrependReactor("get", gvr.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return a.GetResource() == gvr, nil, failure
		})
	}
	clients := &kube.Clients{Dynamic: dyn, Core: kubefake.NewSimpleClientset()}
	gp := New("test")().(*gantryProvider)
	p := fakeClusterProvider{gantryProvider: gp, data: newProviderData(kube.NewLazy(func() (*kube.Clients, error) { return clients, nil }))}
	srv := providerserver.NewProtocol6(p)()
	sch, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || diagsHaveError(sch.Diagnostics) {
		t.Fatalf("GetProviderSchema: %v %s", err, diagsString(sch.Diagnostics))
	}
	ids, err := srv.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil || diagsHaveError(ids.Diagnostics) {
		t.Fatalf("GetResourceIdentitySchemas: %v %s", err, diagsString(ids.Diagnostics))
	}
	s := &adoptServer{srv: srv, schema: sch, idents: map[string]tftypes.Type{}}
	for n, is := range ids.IdentitySchemas {
		s.idents[n] = is.ValueType()
	}
	pt := sch.Provider.ValueType()
	cr, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.14.9", Config: dv(t, pt, tfv(pt, map[string]any{}))})
	if err != nil || diagsHaveError(cr.Diagnostics) {
		t.Fatalf("ConfigureProvider: %v %s", err, diagsString(cr.Diagnostics))
	}
	return s
}

// list runs the list block config of typeName and describes its results.
func (s *adoptServer) list(t *testing.T, typeName string, config map[string]any, limit int64) string {
	t.Helper()
	ty := s.schema.ListResourceSchemas[typeName].ValueType()
	st, err := s.srv.(tfprotov6.ListResourceServer).ListResource(context.Background(), &tfprotov6.ListResourceRequest{TypeName: typeName, Config: dv(t, ty, tfv(ty, config)),
		IncludeResource: true, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for r := range st.Results {
		fmt.Fprintf(&b, "result %q\n", r.DisplayName)
		if r.Identity != nil {
			fmt.Fprintf(&b, "  identity %s\n", s.valueString(t, s.idents[typeName], r.Identity.IdentityData))
		}
		if r.Resource != nil {
			fmt.Fprintf(&b, "  resource %s\n", s.valueString(t, s.schema.ResourceSchemas[typeName].ValueType(), r.Resource))
		}
		b.WriteString(diagLines(r.Diagnostics))
	}
	return b.String()
}

// validateList validates the list block config of typeName and describes its diagnostics.
func (s *adoptServer) validateList(t *testing.T, typeName string, config map[string]any) string {
	t.Helper()
	ty := s.schema.ListResourceSchemas[typeName].ValueType()
	vr, err := s.srv.(tfprotov6.ListResourceServer).ValidateListResourceConfig(context.Background(),
		&tfprotov6.ValidateListResourceConfigRequest{TypeName: typeName, Config: dv(t, ty, tfv(ty, config))})
	if err != nil {
		t.Fatal(err)
	}
	return "validate\n" + diagLines(vr.Diagnostics)
}

// importAndRead imports typeName by id and refreshes what the import returned (the Read
// right after an import), describing both answers.
func (s *adoptServer) importAndRead(t *testing.T, typeName, id string) string {
	t.Helper()
	ctx := context.Background()
	ty := s.schema.ResourceSchemas[typeName].ValueType()
	ir, err := s.srv.ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{TypeName: typeName, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("import\n" + diagLines(ir.Diagnostics))
	if len(ir.ImportedResources) != 1 {
		fmt.Fprintf(&b, "  %d imported\n", len(ir.ImportedResources))
		return b.String()
	}
	imp := ir.ImportedResources[0]
	fmt.Fprintf(&b, "  private %s\n", imp.Private)
	rr, err := s.srv.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: typeName, CurrentState: imp.State, Private: imp.Private,
		CurrentIdentity: imp.Identity})
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("read\n" + diagLines(rr.Diagnostics))
	fmt.Fprintf(&b, "  state %s\n  private %s\n", s.valueString(t, ty, rr.NewState), rr.Private)
	if rr.NewIdentity != nil {
		fmt.Fprintf(&b, "  identity %s\n", s.valueString(t, s.idents[typeName], rr.NewIdentity.IdentityData))
	}
	return b.String()
}

// valueString describes v (of type ty) by the attributes that say what it is: name,
// namespace, id, adopt_from_skyhook and the summaries (state, status, complete_nodes), those
// the type has; "<nil>" or "null" for none.
func (s *adoptServer) valueString(t *testing.T, ty tftypes.Type, v *tfprotov6.DynamicValue) string {
	t.Helper()
	if v == nil {
		return "<nil>"
	}
	val, err := v.Unmarshal(ty)
	if err != nil {
		t.Fatal(err)
	}
	var attrs map[string]tftypes.Value
	if val.IsNull() || val.As(&attrs) != nil {
		return "null"
	}
	var parts []string
	for _, n := range []string{"id", "namespace", "name", "adopt_from_skyhook", "state", "status", "complete_nodes", "phase", "grpc_port"} {
		if a, ok := attrs[n]; ok {
			parts = append(parts, n+"="+a.String())
		}
	}
	return strings.Join(parts, " ")
}

// diagLines describes diagnostics one a line: severity, summary and detail (of an API error,
// "Error <verb> <kind>", the first 120 characters: apiDiagnostic's own wording).
func diagLines(ds []*tfprotov6.Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		detail := d.Detail
		if strings.HasPrefix(d.Summary, "Error ") && len(detail) > 120 {
			detail = detail[:120] + "..."
		}
		fmt.Fprintf(&b, "  %s %q: %q\n", d.Severity, d.Summary, detail)
	}
	return b.String()
}

// listSchemaString describes typeName's list block schema (names, descriptions, validators
// are not part of the protocol schema).
func (s *adoptServer) listSchemaString(typeName string) string {
	sch := s.schema.ListResourceSchemas[typeName]
	var lines []string
	for _, a := range sch.Block.Attributes {
		j, _ := json.Marshal(a)
		lines = append(lines, string(j))
	}
	sort.Strings(lines)
	return "list schema " + typeName + "\n" + strings.Join(lines, "\n") + "\n"
}

func fixture(t *testing.T, file string, edit func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("../internal/adopt/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(u)
	}
	return u
}

// Adoption through the protocol, on a fake cluster (no API server): the list block schemas and
// their `from` validation, what `terraform query` with from = "skyhook" / "kaito" / "hourglass" returns
// (display names, identities, the generated resources' key attributes, the warnings per field
// not carried over, a translation error, a cluster without the CRD, an API error), the lists of
// the kinds' own objects, and imports by name that adopt the upstream object (the warning, the
// state with a null summary), import an existing object, or find neither. The answers must be
// testdata/adopt_protocol.golden, the user-facing text the acceptance tests
// TestAccAdopt_skyhookQueryGeneratesConfigThatCreatesAndHandsOver,
// TestAccAdopt_kaitoQueryGeneratesConfigThatCreates and
// TestAccAdopt_hourglassQueryGeneratesConfigThatCreates see; GANTRY_UPDATE_GOLDEN=1 rewrites it.
func TestAdoptProtocol_golden(t *testing.T) {
	var out strings.Builder
	// Skyhook.
	sky := fixture(t, "skyhook.yaml", nil)
	bad := fixture(t, "skyhook.yaml", func(u *unstructured.Unstructured) {
		u.SetName("broken")
		_ = unstructured.SetNestedField(u.Object, "not-a-map", "spec", "packages")
	})
	existingSet := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gantry.dev/v1alpha1", "kind": "PackageSet",
		"metadata": map[string]any{"name": "existing", "labels": map[string]any{"team": "ml"}},
		"spec":     map[string]any{"packages": []any{map[string]any{"name": "a", "version": "1.0.0", "image": "x"}}}}}
	s := newAdoptServer(t, adopt.SkyhookGVR, nil, sky, bad, existingSet)
	out.WriteString(s.listSchemaString("gantry_package_set"))
	out.WriteString("== skyhook validate\n" + s.validateList(t, "gantry_package_set", map[string]any{"from": "kaito"}) +
		s.validateList(t, "gantry_package_set", map[string]any{"from": "skyhook", "skyhook_agent_image": "x"}))
	out.WriteString("== skyhook list\n" + s.list(t, "gantry_package_set", map[string]any{"from": "skyhook", "skyhook_agent_image": "registry.local/agent:v6"}, 0))
	out.WriteString("== skyhook list limit 1, selector\n" + s.list(t, "gantry_package_set", map[string]any{"from": "skyhook", "label_selector": "team=ml"}, 1))
	out.WriteString("== gantry list\n" + s.list(t, "gantry_package_set", map[string]any{"from": "gantry"}, 0))
	out.WriteString("== gantry list (from unset)\n" + s.list(t, "gantry_package_set", map[string]any{}, 0))
	out.WriteString("== skyhook import\n" + s.importAndRead(t, "gantry_package_set", "gpu-tuning"))
	out.WriteString("== skyhook import broken\n" + s.importAndRead(t, "gantry_package_set", "broken"))
	out.WriteString("== import existing set\n" + s.importAndRead(t, "gantry_package_set", "existing"))
	out.WriteString("== skyhook import missing\n" + s.importAndRead(t, "gantry_package_set", "nope"))
	s = newAdoptServer(t, adopt.SkyhookGVR, apierrors.NewNotFound(adopt.SkyhookGVR.GroupResource(), ""))
	out.WriteString("== skyhook list, no CRD\n" + s.list(t, "gantry_package_set", map[string]any{"from": "skyhook"}, 0))
	out.WriteString("== skyhook import, no CRD\n" + s.importAndRead(t, "gantry_package_set", "gpu-tuning"))
	s = newAdoptServer(t, adopt.SkyhookGVR, apierrors.NewForbidden(adopt.SkyhookGVR.GroupResource(), "", fmt.Errorf("no")))
	out.WriteString("== skyhook list, forbidden\n" + s.list(t, "gantry_package_set", map[string]any{"from": "skyhook"}, 0))
	out.WriteString("== skyhook import, forbidden\n" + s.importAndRead(t, "gantry_package_set", "gpu-tuning"))

	// KAITO.
	var kws []runtime.Object
	for _, f := range []string{"kaito-inference.yaml", "kaito-template.yaml", "kaito-tuning.yaml", "kaito-tuning-pvc.yaml"} {
		kws = append(kws, fixture(t, f, nil))
	}
	kws = append(kws, fixture(t, "kaito-inference.yaml", func(u *unstructured.Unstructured) {
		u.SetName("broken")
		_ = unstructured.SetNestedField(u.Object, "not-a-map", "resource")
	}), fixture(t, "kaito-inference.yaml", func(u *unstructured.Unstructured) { u.SetNamespace("other") }))
	kws = append(kws, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gantry.dev/v1alpha1", "kind": "Workspace",
		"metadata": map[string]any{"name": "existing", "namespace": "ml"},
		"spec":     map[string]any{"resource": map[string]any{"gpuCount": int64(1)}, "inference": map[string]any{"model": "m", "image": "i"}}}})
	s = newAdoptServer(t, adopt.KAITOWorkspaceGVR, nil, kws...)
	out.WriteString(s.listSchemaString("gantry_workspace"))
	out.WriteString("== kaito validate\n" + s.validateList(t, "gantry_workspace", map[string]any{"from": "skyhook"}) +
		s.validateList(t, "gantry_workspace", map[string]any{"from": "kaito"}))
	out.WriteString("== kaito list\n" + s.list(t, "gantry_workspace", map[string]any{"from": "kaito"}, 0))
	out.WriteString("== kaito list ns ml limit 2\n" + s.list(t, "gantry_workspace", map[string]any{"from": "kaito", "namespace": "ml"}, 2))
	out.WriteString("== gantry workspaces\n" + s.list(t, "gantry_workspace", map[string]any{"namespace": "ml"}, 0))
	for _, id := range []string{"ml/" + kws[0].(*unstructured.Unstructured).GetName(), "ml/" + kws[2].(*unstructured.Unstructured).GetName(), "ml/broken", "ml/nope", "ml/existing"} {
		out.WriteString("== kaito import " + id + "\n" + s.importAndRead(t, "gantry_workspace", id))
	}
	out.WriteString("== performer list\n" + s.list(t, "gantry_performer", map[string]any{"namespace": "ml"}, 0))
	out.WriteString("== performer import\n" + s.importAndRead(t, "gantry_performer", "ml/nope"))
	s = newAdoptServer(t, adopt.KAITOWorkspaceGVR, apierrors.NewNotFound(adopt.KAITOWorkspaceGVR.GroupResource(), ""))
	out.WriteString("== kaito list, no CRD\n" + s.list(t, "gantry_workspace", map[string]any{"from": "kaito"}, 0))
	s = newAdoptServer(t, adopt.KAITOWorkspaceGVR, apierrors.NewForbidden(adopt.KAITOWorkspaceGVR.GroupResource(), "", fmt.Errorf("no")))
	out.WriteString("== kaito list, forbidden\n" + s.list(t, "gantry_workspace", map[string]any{"from": "kaito"}, 0))
	out.WriteString("== kaito import, forbidden\n" + s.importAndRead(t, "gantry_workspace", "ml/x"))

	// Hourglass.
	var hps []runtime.Object
	for _, f := range []string{"hourglass-basic.yaml", "hourglass-minimal.yaml", "hourglass-gpu.yaml", "hourglass-tee.yaml", "hourglass-ponos.yaml"} {
		hps = append(hps, fixture(t, f, nil))
	}
	hps = append(hps, fixture(t, "hourglass-basic.yaml", func(u *unstructured.Unstructured) {
		u.SetName("broken")
		_ = unstructured.SetNestedField(u.Object, "not-a-map", "spec", "config")
	}), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer",
		"metadata": map[string]any{"name": "existing", "namespace": "my-avs-project"},
		"spec":     map[string]any{"image": "i"}}})
	s = newAdoptServer(t, adopt.HourglassPerformerGVR, nil, hps...)
	out.WriteString(s.listSchemaString("gantry_performer"))
	out.WriteString("== hourglass validate\n" + s.validateList(t, "gantry_performer", map[string]any{"from": "kaito"}) +
		s.validateList(t, "gantry_performer", map[string]any{"from": "hourglass"}))
	out.WriteString("== hourglass list\n" + s.list(t, "gantry_performer", map[string]any{"from": "hourglass"}, 0))
	out.WriteString("== hourglass list ns my-avs-project limit 1\n" + s.list(t, "gantry_performer", map[string]any{"from": "hourglass", "namespace": "my-avs-project"}, 1))
	out.WriteString("== gantry performers\n" + s.list(t, "gantry_performer", map[string]any{"namespace": "my-avs-project"}, 0))
	for _, id := range []string{"my-avs-project/basic-performer", "avs/performer-hello-7f3a2", "my-avs-project/broken", "my-avs-project/nope", "my-avs-project/existing"} {
		out.WriteString("== hourglass import " + id + "\n" + s.importAndRead(t, "gantry_performer", id))
	}
	s = newAdoptServer(t, adopt.HourglassPerformerGVR, apierrors.NewNotFound(adopt.HourglassPerformerGVR.GroupResource(), ""))
	out.WriteString("== hourglass list, no CRD\n" + s.list(t, "gantry_performer", map[string]any{"from": "hourglass"}, 0))
	out.WriteString("== hourglass import, no CRD\n" + s.importAndRead(t, "gantry_performer", "my-avs-project/basic-performer"))
	s = newAdoptServer(t, adopt.HourglassPerformerGVR, apierrors.NewForbidden(adopt.HourglassPerformerGVR.GroupResource(), "", fmt.Errorf("no")))
	out.WriteString("== hourglass list, forbidden\n" + s.list(t, "gantry_performer", map[string]any{"from": "hourglass"}, 0))
	out.WriteString("== hourglass import, forbidden\n" + s.importAndRead(t, "gantry_performer", "my-avs-project/x"))

	const golden = "testdata/adopt_protocol.golden"
	if os.Getenv("GANTRY_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("adoption answers differ from %s (GANTRY_UPDATE_GOLDEN=1 rewrites it):\n%s", golden, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines of want and got that differ, by line number.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %s\n   got %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
