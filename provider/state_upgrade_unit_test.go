package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The state-upgrade harness, unit half (DESIGN.md "Changing a resource's schema"; the cluster
// half is hack/state-upgrade.sh check). Fixtures: provider/testdata/state-upgrade/v<N>/<type>/
// terraform.tfstate, the state Terraform 1.14 wrote for gantry_<type> at schema version N
// (hack/state-upgrade.sh generate), beside the main.tf it was written for.

const stateUpgradeFixtures = "testdata/state-upgrade"

// stateFixtureInstance is one resource instance of a fixture's state file.
type stateFixtureInstance struct {
	file            string // relative to stateUpgradeFixtures
	dirVersion      int64  // the v<N> of its directory
	typeName        string
	key             string // <type>.<resource name>[<index>], the same in every version's fixture
	schemaVersion   int64
	attributes      json.RawMessage
	identityVersion int64
	identity        json.RawMessage // nil when the CLI wrote none
}

var stateFixtureDir = regexp.MustCompile(`^v(0|[1-9][0-9]*)$`)

// readStateFixtures returns every instance of every fixture, in path order.
func readStateFixtures(t *testing.T) []stateFixtureInstance {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(stateUpgradeFixtures, "*", "*", "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []stateFixtureInstance
	for _, f := range files {
		rel, _ := filepath.Rel(stateUpgradeFixtures, f)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		m := stateFixtureDir.FindStringSubmatch(parts[0])
		if m == nil {
			t.Fatalf("%s: a fixture's directory is v<schema version>/<type>/", rel)
		}
		dirVersion, _ := strconv.ParseInt(m[1], 10, 64)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Version   int `json:"version"`
			Resources []struct {
				Mode      string `json:"mode"`
				Type      string `json:"type"`
				Name      string `json:"name"`
				Instances []struct {
					SchemaVersion         *int64          `json:"schema_version"`
					Attributes            json.RawMessage `json:"attributes"`
					IdentitySchemaVersion int64           `json:"identity_schema_version"`
					Identity              json.RawMessage `json:"identity"`
				} `json:"instances"`
			} `json:"resources"`
		}
		if err := json.Unmarshal(b, &st); err != nil || st.Version != 4 {
			t.Fatalf("%s: not a state file of format version 4 (%v)", rel, err)
		}
		n := 0
		for _, r := range st.Resources {
			if r.Mode != "managed" || r.Type != "gantry_"+parts[1] {
				t.Fatalf("%s: holds %s %s; a fixture directory <type> holds gantry_<type> resources only", rel, r.Mode, r.Type)
			}
			for idx, i := range r.Instances {
				if i.SchemaVersion == nil || *i.SchemaVersion != dirVersion {
					t.Fatalf("%s: an instance of %s has schema_version %v; its directory says %d", rel, r.Type, i.SchemaVersion, dirVersion)
				}
				out = append(out, stateFixtureInstance{
					file: rel, dirVersion: dirVersion, typeName: r.Type, key: fmt.Sprintf("%s.%s[%d]", r.Type, r.Name, idx),
					schemaVersion: *i.SchemaVersion, attributes: i.Attributes,
					identityVersion: i.IdentitySchemaVersion, identity: i.Identity,
				})
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s: no resource instance", rel)
		}
	}
	return out
}

// resourceVersions is what the harness needs of one managed resource type: its schema and
// identity schema versions and the prior versions its UpgradeState and UpgradeIdentity handle.
type resourceVersions struct {
	typeName          string
	version           int64
	upgraders         []int64
	identityVersion   int64
	identityUpgraders []int64
}

// versionKeys returns the versions an upgrader map handles, ascending.
func versionKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// managedResourceVersions reads resourceVersions from every resource of the provider's
// Resources().
func managedResourceVersions(t *testing.T) []resourceVersions {
	t.Helper()
	ctx := context.Background()
	var out []resourceVersions
	for _, f := range New("test")().Resources(ctx) {
		r := f()
		var md resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "gantry"}, &md)
		var sr resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &sr)
		rv := resourceVersions{typeName: md.TypeName, version: sr.Schema.Version}
		if u, ok := r.(resource.ResourceWithUpgradeState); ok {
			rv.upgraders = versionKeys(u.UpgradeState(ctx))
		}
		if ir, ok := r.(resource.ResourceWithIdentity); ok {
			var isr resource.IdentitySchemaResponse
			ir.IdentitySchema(ctx, resource.IdentitySchemaRequest{}, &isr)
			rv.identityVersion = isr.IdentitySchema.Version
		}
		if u, ok := r.(resource.ResourceWithUpgradeIdentity); ok {
			rv.identityUpgraders = versionKeys(u.UpgradeIdentity(ctx))
		}
		out = append(out, rv)
	}
	return out
}

// stateUpgradeGaps says what the policy requires and is missing: for every managed resource
// type a fixture at every schema version from 0 to the current one (the current one too: it is
// the prior version of the next bump, and can only be generated before it); an UpgradeState
// entry for every prior version and none for another; an UpgradeIdentity entry for every prior
// identity schema version; and no fixture for a type the provider does not have or a version
// above the current one. haveFixture[type][version] is true when that fixture exists.
func stateUpgradeGaps(resources []resourceVersions, haveFixture map[string]map[int64]bool) []string {
	var gaps []string
	known := map[string]int64{}
	for _, r := range resources {
		known[r.typeName] = r.version
		dir := strings.TrimPrefix(r.typeName, "gantry_")
		for v := int64(0); v <= r.version; v++ {
			if !haveFixture[r.typeName][v] {
				why := "the state users hold at that version"
				if v == r.version {
					why = "the current version's: generate it while this provider writes version " + strconv.FormatInt(v, 10) +
						"; the next bump makes it a prior version, which no later provider can write"
				}
				gaps = append(gaps, fmt.Sprintf("%s: schema version %d, but no fixture %s/v%d/%s/terraform.tfstate (%s): "+
					"write its main.tf and run `hack/state-upgrade.sh generate %s` against the local cluster",
					r.typeName, r.version, stateUpgradeFixtures, v, dir, why, dir))
			}
		}
		want := make([]int64, 0, r.version)
		for v := int64(0); v < r.version; v++ {
			want = append(want, v)
		}
		if fmt.Sprint(r.upgraders) != fmt.Sprint(want) {
			gaps = append(gaps, fmt.Sprintf("%s: schema version %d, so UpgradeState must have exactly one entry per prior version %v "+
				"(each upgrading straight to version %d: the framework does not chain them); it has %v",
				r.typeName, r.version, want, r.version, r.upgraders))
		}
		wantID := make([]int64, 0, r.identityVersion)
		for v := int64(0); v < r.identityVersion; v++ {
			wantID = append(wantID, v)
		}
		if fmt.Sprint(r.identityUpgraders) != fmt.Sprint(wantID) {
			gaps = append(gaps, fmt.Sprintf("%s: identity schema version %d, so UpgradeIdentity must have one entry per prior version %v; it has %v",
				r.typeName, r.identityVersion, wantID, r.identityUpgraders))
		}
	}
	for typ, versions := range haveFixture {
		cur, ok := known[typ]
		for v := range versions {
			switch {
			case !ok:
				gaps = append(gaps, fmt.Sprintf("fixture v%d/%s: the provider has no resource type %s", v, strings.TrimPrefix(typ, "gantry_"), typ))
			case v > cur:
				gaps = append(gaps, fmt.Sprintf("fixture v%d/%s: above %s's current schema version %d", v, strings.TrimPrefix(typ, "gantry_"), typ, cur))
			}
		}
	}
	sort.Strings(gaps)
	return gaps
}

// TestStateUpgradePolicy fails when a resource type's schema version was bumped without a
// fixture of each prior version and an upgrader for it, or when a type has no fixture.
func TestStateUpgradePolicy(t *testing.T) {
	have := map[string]map[int64]bool{}
	for _, fi := range readStateFixtures(t) {
		if have[fi.typeName] == nil {
			have[fi.typeName] = map[int64]bool{}
		}
		have[fi.typeName][fi.dirVersion] = true
	}
	for _, gap := range stateUpgradeGaps(managedResourceVersions(t), have) {
		t.Error(gap)
	}
}

// TestStateUpgradeGaps: the policy check names each kind of gap (a version bumped without a
// fixture of the prior version or an upgrader, an upgrader for a version that is not prior, a
// fixture of a type that does not exist).
func TestStateUpgradeGaps(t *testing.T) {
	fixtures := map[string]map[int64]bool{"gantry_performer": {0: true}}
	if gaps := stateUpgradeGaps([]resourceVersions{{typeName: "gantry_performer"}}, fixtures); len(gaps) != 0 {
		t.Fatalf("version 0 with its fixture: gaps %q", gaps)
	}
	for _, tc := range []struct {
		name     string
		r        resourceVersions
		fixtures map[string]map[int64]bool
		want     []string
	}{
		{"bumped without a fixture of the new version", resourceVersions{typeName: "gantry_performer", version: 1, upgraders: []int64{0}}, fixtures,
			[]string{"gantry_performer: schema version 1, but no fixture testdata/state-upgrade/v1/performer/terraform.tfstate"}},
		{"bumped without an upgrader", resourceVersions{typeName: "gantry_performer", version: 1},
			map[string]map[int64]bool{"gantry_performer": {0: true, 1: true}},
			[]string{"gantry_performer: schema version 1, so UpgradeState must have exactly one entry per prior version [0]"}},
		{"bumped twice, no fixture of the middle version", resourceVersions{typeName: "gantry_performer", version: 2, upgraders: []int64{0, 1}},
			map[string]map[int64]bool{"gantry_performer": {0: true, 2: true}},
			[]string{"no fixture testdata/state-upgrade/v1/performer/terraform.tfstate (the state users hold at that version)"}},
		{"an upgrader for the current version", resourceVersions{typeName: "gantry_performer", upgraders: []int64{0}}, fixtures,
			[]string{"UpgradeState must have exactly one entry per prior version []"}},
		{"identity bumped without an upgrader", resourceVersions{typeName: "gantry_performer", identityVersion: 1}, fixtures,
			[]string{"identity schema version 1, so UpgradeIdentity must have one entry per prior version [0]"}},
		{"a fixture of a type that does not exist", resourceVersions{typeName: "gantry_performer"},
			map[string]map[int64]bool{"gantry_performer": {0: true}, "gantry_gone": {0: true}},
			[]string{"fixture v0/gone: the provider has no resource type gantry_gone"}},
		{"no fixture at all", resourceVersions{typeName: "gantry_new"}, fixtures,
			[]string{"gantry_new: schema version 0, but no fixture testdata/state-upgrade/v0/new/terraform.tfstate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gaps := strings.Join(stateUpgradeGaps([]resourceVersions{tc.r}, tc.fixtures), "\n")
			for _, w := range tc.want {
				if !strings.Contains(gaps, w) {
					t.Errorf("gaps do not say %q:\n%s", w, gaps)
				}
			}
		})
	}
}

// TestStateUpgradeFixtures feeds every fixture's instance to the provider's protocol server
// (Server, as main.go serves it) as Terraform does after a provider upgrade:
// UpgradeResourceState with the attributes and schema_version the CLI stored, and the identity
// as checkUpgradedIdentity says. The upgraded state must be free of error diagnostics and decode
// against the current schema. A fixture at the current version must come back unchanged and
// must itself decode against the current schema without dropping anything: the framework's
// same-version passthrough ignores attributes the schema lacks, so an attribute renamed or
// removed without a version bump would otherwise vanish from users' state silently. A fixture of
// a prior version must keep the attributes that address the object (id, name, namespace) and
// carry its configured attributes over (checkConfiguredAttributes); that it plans no change
// against the same objects is hack/state-upgrade.sh check.
func TestStateUpgradeFixtures(t *testing.T) {
	ctx := context.Background()
	srv := Server("test")
	schemas, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || len(schemas.Diagnostics) > 0 {
		t.Fatalf("GetProviderSchema: %v %v", err, schemas.Diagnostics)
	}
	ids, err := srv.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil || len(ids.Diagnostics) > 0 {
		t.Fatalf("GetResourceIdentitySchemas: %v %v", err, ids.Diagnostics)
	}
	fixtures := readStateFixtures(t)
	if len(fixtures) == 0 {
		t.Fatalf("no fixtures under provider/%s", stateUpgradeFixtures)
	}
	// current: each instance of a fixture at its type's current schema version, by key: what the
	// current provider wrote for the same objects.
	current := map[string]stateFixtureInstance{}
	for _, fi := range fixtures {
		if s := schemas.ResourceSchemas[fi.typeName]; s != nil && fi.schemaVersion == s.Version {
			current[fi.key] = fi
		}
	}
	for _, fi := range fixtures {
		t.Run(fi.file, func(t *testing.T) {
			schema := schemas.ResourceSchemas[fi.typeName]
			if schema == nil {
				t.Fatalf("the provider has no resource type %s", fi.typeName)
			}
			upgraded := checkUpgradedState(t, srv, schema, fi)
			if cur, ok := current[fi.key]; ok && fi.schemaVersion != schema.Version {
				checkConfiguredAttributes(t, schema, upgraded, cur)
			}
			if fi.identity != nil && string(fi.identity) != "null" {
				checkUpgradedIdentity(t, srv, ids.IdentitySchemas[fi.typeName], fi)
			}
		})
	}
}

// checkUpgradedState upgrades fi's state and checks it as TestStateUpgradeFixtures says;
// it returns the upgraded state.
func checkUpgradedState(t *testing.T, srv tfprotov6.ProviderServer, schema *tfprotov6.Schema, fi stateFixtureInstance) tftypes.Value {
	t.Helper()
	typ := schema.ValueType()
	resp, err := srv.UpgradeResourceState(context.Background(), &tfprotov6.UpgradeResourceStateRequest{
		TypeName: fi.typeName, Version: fi.schemaVersion, RawState: &tfprotov6.RawState{JSON: fi.attributes}})
	if err != nil {
		t.Fatalf("UpgradeResourceState: %v", err)
	}
	if d := diagnosticsText(resp.Diagnostics); d != "" {
		t.Fatalf("UpgradeResourceState of %s from schema version %d (current %d): %s", fi.typeName, fi.schemaVersion, schema.Version, d)
	}
	if resp.UpgradedState == nil {
		t.Fatal("UpgradeResourceState returned no state")
	}
	upgraded, err := resp.UpgradedState.Unmarshal(typ)
	if err != nil {
		t.Fatalf("the upgraded state does not decode against %s's current schema (version %d): %v", fi.typeName, schema.Version, err)
	}
	if fi.schemaVersion == schema.Version {
		stored, err := (&tfprotov6.RawState{JSON: fi.attributes}).UnmarshalWithOpts(typ, tfprotov6.UnmarshalOpts{})
		if err != nil {
			t.Fatalf("the fixture's state of schema version %d does not decode against %s's schema of the same version: %v\n"+
				"an attribute was renamed, removed or changed type without a schema version bump: bump the version, "+
				"add an UpgradeState entry for version %d and keep this fixture (DESIGN.md \"Changing a resource's schema\")",
				fi.schemaVersion, fi.typeName, err, fi.schemaVersion)
		}
		if !upgraded.Equal(stored) {
			t.Fatalf("UpgradeResourceState at the same schema version changed the state:\n%s", valueDiffs(stored, upgraded))
		}
		return upgraded
	}
	for _, a := range []string{"id", "name", "namespace"} {
		want, wok := jsonAttribute(t, fi.attributes, a)
		got, gerr := upgraded.ApplyTerraform5AttributePathStep(tftypes.AttributeName(a))
		if !wok || gerr != nil {
			continue
		}
		if g, ok := got.(tftypes.Value); ok {
			var s string
			if g.As(&s) == nil && s != want {
				t.Errorf("upgraded %s = %q, the fixture's %q: an upgrade must not change what addresses the object", a, s, want)
			}
		}
	}
	return upgraded
}

// checkConfiguredAttributes compares a prior version's upgraded state with the current
// version's fixture of the same objects (written for the same configuration, rewritten for the
// new shape) on every attribute only the configuration sets (required or optional, not
// computed): an upgrader must carry those over exactly. Computed attributes may differ (the
// objects of two generations differ: node names, revisions); a refresh fills them.
func checkConfiguredAttributes(t *testing.T, schema *tfprotov6.Schema, upgraded tftypes.Value, cur stateFixtureInstance) {
	t.Helper()
	want, err := (&tfprotov6.RawState{JSON: cur.attributes}).UnmarshalWithOpts(schema.ValueType(), tfprotov6.UnmarshalOpts{})
	if err != nil {
		t.Fatalf("%s: %v", cur.file, err)
	}
	for _, a := range schema.Block.Attributes {
		if a.Computed {
			continue
		}
		step := tftypes.AttributeName(a.Name)
		w, _ := want.ApplyTerraform5AttributePathStep(step)
		g, _ := upgraded.ApplyTerraform5AttributePathStep(step)
		wv, wok := w.(tftypes.Value)
		gv, gok := g.(tftypes.Value)
		if !wok || !gok || !wv.Equal(gv) {
			t.Errorf("upgraded %s is %v; %s (the same configuration at the current version) has %v: the upgrader must carry "+
				"configured attributes over", a.Name, g, cur.file, w)
		}
	}
}

// checkUpgradedIdentity: an identity at the current identity schema version is not sent to
// the provider (Terraform decodes it itself, and the framework refuses such a request), so it
// must decode against the current identity schema as stored; an older one must come back from
// UpgradeResourceIdentity decoding against it.
func checkUpgradedIdentity(t *testing.T, srv tfprotov6.ProviderServer, schema *tfprotov6.ResourceIdentitySchema, fi stateFixtureInstance) {
	t.Helper()
	if schema == nil {
		t.Fatalf("the fixture has an identity but %s has no identity schema", fi.typeName)
	}
	if fi.identityVersion == schema.Version {
		if _, err := (&tfprotov6.RawState{JSON: fi.identity}).UnmarshalWithOpts(schema.ValueType(), tfprotov6.UnmarshalOpts{}); err != nil {
			t.Fatalf("the fixture's identity does not decode against %s's identity schema of its version %d: %v "+
				"(an identity attribute changed without an identity version bump and an UpgradeIdentity entry)", fi.typeName, fi.identityVersion, err)
		}
		return
	}
	resp, err := srv.UpgradeResourceIdentity(context.Background(), &tfprotov6.UpgradeResourceIdentityRequest{
		TypeName: fi.typeName, Version: fi.identityVersion, RawIdentity: &tfprotov6.RawState{JSON: fi.identity}})
	if err != nil {
		t.Fatalf("UpgradeResourceIdentity: %v", err)
	}
	if d := diagnosticsText(resp.Diagnostics); d != "" {
		t.Fatalf("UpgradeResourceIdentity of %s from identity version %d (current %d): %s", fi.typeName, fi.identityVersion, schema.Version, d)
	}
	if resp.UpgradedIdentity == nil || resp.UpgradedIdentity.IdentityData == nil {
		t.Fatal("UpgradeResourceIdentity returned no identity")
	}
	if _, err := resp.UpgradedIdentity.IdentityData.Unmarshal(schema.ValueType()); err != nil {
		t.Fatalf("the upgraded identity does not decode against the current identity schema: %v", err)
	}
}

func diagnosticsText(diags []*tfprotov6.Diagnostic) string {
	var out []string
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			out = append(out, d.Summary+": "+d.Detail)
		}
	}
	return strings.Join(out, "; ")
}

// valueDiffs lists where want and got differ, one attribute path per line.
func valueDiffs(want, got tftypes.Value) string {
	diffs, err := want.Diff(got)
	if err != nil {
		return fmt.Sprintf("(no diff: %v)\nwant %s\ngot  %s", err, want, got)
	}
	var lines []string
	for _, d := range diffs {
		lines = append(lines, fmt.Sprintf("  %s: fixture %v, upgraded %v", d.Path, d.Value1, d.Value2))
	}
	return strings.Join(lines, "\n")
}

// jsonAttribute returns the string attribute name of a state's attributes JSON.
func jsonAttribute(t *testing.T, attrs json.RawMessage, name string) (string, bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(attrs, &m); err != nil {
		t.Fatal(err)
	}
	s, ok := m[name].(string)
	return s, ok
}
