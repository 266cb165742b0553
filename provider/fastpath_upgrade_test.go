package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The differential test of the UpgradeResourceState fast path (fastpath_upgrade.go): every row
// (a raw state as Terraform stores it) is upgraded by the fast path and by the plain framework
// server, and the responses must be equal byte for byte (the upgraded state's MessagePack and
// JSON) with the same diagnostics. Each row names the decision the fast path must take; every
// fallback is taken by at least one row.

// upgradePair is the fast path and the plain framework server.
type upgradePair struct {
	fast  *planFastPath
	plain tfprotov6.ProviderServer
	types map[string]tftypes.Type
}

func newUpgradePair(t testing.TB) *upgradePair {
	t.Helper()
	t.Setenv(envNoUpgradeFastPath, "")
	ctx := context.Background()
	pf, pp := New("test")(), New("test")()
	fast, ok := PlanFastPath(ReleasingContexts(providerserver.NewProtocol6(pf)()), pf).(*planFastPath)
	if !ok {
		t.Fatal("PlanFastPath did not wrap the framework's server")
	}
	plain, err := providerserver.NewProtocol6WithError(pp)()
	if err != nil {
		t.Fatal(err)
	}
	up := &upgradePair{fast: fast, plain: plain, types: map[string]tftypes.Type{}}
	for _, s := range []tfprotov6.ProviderServer{fast, plain} {
		sch, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
		if err != nil || diagsHaveError(sch.Diagnostics) {
			t.Fatalf("GetProviderSchema: %v %v", err, sch.Diagnostics)
		}
		for n, rs := range sch.ResourceSchemas {
			up.types[n] = rs.ValueType()
		}
	}
	return up
}

// check upgrades req with both servers and returns the fast path's decision and what differs
// ("" when the responses are equal).
func (up *upgradePair) check(t testing.TB, req *tfprotov6.UpgradeResourceStateRequest) (string, string) {
	t.Helper()
	ctx := context.Background()
	before := up.fast.upgradeDecisionCounts()
	fast, err := up.fast.UpgradeResourceState(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	decision := ""
	for d, n := range up.fast.upgradeDecisionCounts() {
		if n > before[d] {
			decision = d
		}
	}
	plain, err := up.plain.UpgradeResourceState(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	switch {
	case (fast.UpgradedState == nil) != (plain.UpgradedState == nil):
		diffs = append(diffs, fmt.Sprintf("upgraded state %v vs %v", fast.UpgradedState != nil, plain.UpgradedState != nil))
	case fast.UpgradedState != nil && (!bytes.Equal(fast.UpgradedState.MsgPack, plain.UpgradedState.MsgPack) || !bytes.Equal(fast.UpgradedState.JSON, plain.UpgradedState.JSON)):
		diffs = append(diffs, "upgraded state bytes")
	}
	if diagsString(fast.Diagnostics) != diagsString(plain.Diagnostics) || diagSeverities(fast.Diagnostics) != diagSeverities(plain.Diagnostics) {
		diffs = append(diffs, fmt.Sprintf("diagnostics %q vs %q", diagsString(fast.Diagnostics), diagsString(plain.Diagnostics)))
	}
	return decision, strings.Join(diffs, "; ")
}

// stateJSON is v as Terraform stores a resource's attributes in its JSON state.
func stateJSON(t testing.TB, v tftypes.Value) []byte {
	t.Helper()
	b, err := json.Marshal(jsonOf(v))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonOf(v tftypes.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	switch {
	case v.Type().Is(tftypes.Object{}), v.Type().Is(tftypes.Map{}):
		var m map[string]tftypes.Value
		_ = v.As(&m)
		out := map[string]any{}
		for k, e := range m {
			out[k] = jsonOf(e)
		}
		return out
	case v.Type().Is(tftypes.List{}), v.Type().Is(tftypes.Set{}), v.Type().Is(tftypes.Tuple{}):
		var l []tftypes.Value
		_ = v.As(&l)
		out := []any{}
		for _, e := range l {
			out = append(out, jsonOf(e))
		}
		return out
	case v.Type().Is(tftypes.Number):
		var f big.Float
		_ = v.As(&f)
		return json.Number(f.Text('g', -1))
	case v.Type().Is(tftypes.Bool):
		var b bool
		_ = v.As(&b)
		return b
	}
	var s string
	_ = v.As(&s)
	return s
}

// upgradeRow is one raw state and the decision the fast path must take.
type upgradeRow struct {
	name string
	req  *tfprotov6.UpgradeResourceStateRequest
	want string
}

// upgradeCorpus: every wholly known state of the plan corpus (every kind: defaults set and
// unset, null and empty, nested lists, sets and maps, failed summaries) as stored, plus edits
// of one of them per kind: an attribute the schema no longer has, one it gained since, a
// value of the wrong type, JSON null, broken JSON, an older schema version, a flatmap state,
// no raw state; and a type the fast path does not know.
func (up *upgradePair) upgradeCorpus(t testing.TB) []upgradeRow {
	t.Helper()
	var rows []upgradeRow
	for _, k := range readKinds() {
		typ := up.types[k.typ]
		seen := map[string]bool{}
		var first []byte
		for _, r := range k.rows() {
			for _, st := range []map[string]any{r.prior, r.proposed} {
				if st == nil {
					continue
				}
				v := tfv(typ, st)
				if !v.IsFullyKnown() {
					continue
				}
				js := stateJSON(t, v)
				if seen[string(js)] {
					continue
				}
				seen[string(js)] = true
				if first == nil {
					first = js
				}
				rows = append(rows, upgradeRow{name: k.typ + ": " + r.name, want: planAnswered,
					req: &tfprotov6.UpgradeResourceStateRequest{TypeName: k.typ, RawState: &tfprotov6.RawState{JSON: js}}})
			}
		}
		var m map[string]any
		if err := json.Unmarshal(first, &m); err != nil {
			t.Fatal(err)
		}
		edit := func(f func(map[string]any)) []byte {
			c := map[string]any{}
			for k, v := range m {
				c[k] = v
			}
			f(c)
			b, _ := json.Marshal(c)
			return b
		}
		raw := func(name string, js []byte, version int64, want string) upgradeRow {
			return upgradeRow{name: k.typ + ": " + name, want: want,
				req: &tfprotov6.UpgradeResourceStateRequest{TypeName: k.typ, Version: version, RawState: &tfprotov6.RawState{JSON: js}}}
		}
		rows = append(rows,
			raw("an attribute the schema no longer has", edit(func(c map[string]any) { c["removed_long_ago"] = "x" }), 0, planAnswered),
			raw("an attribute the schema gained since (missing: null)", edit(func(c map[string]any) { delete(c, "labels") }), 0, planAnswered),
			raw("a value of the wrong type", edit(func(c map[string]any) { c["name"] = []any{1} }), 0, fbDecode),
			raw("JSON null", []byte("null"), 0, planAnswered),
			raw("broken JSON", []byte(`{"name":`), 0, fbDecode),
			raw("an older schema version", first, -1, fbVersion),
			raw("a newer schema version", first, 1, fbVersion),
			upgradeRow{name: k.typ + ": a flatmap state", want: fbEncoding,
				req: &tfprotov6.UpgradeResourceStateRequest{TypeName: k.typ, RawState: &tfprotov6.RawState{Flatmap: map[string]string{"name": "x"}}}},
			upgradeRow{name: k.typ + ": no raw state", want: fbEncoding, req: &tfprotov6.UpgradeResourceStateRequest{TypeName: k.typ}},
			upgradeRow{name: k.typ + ": an unknown type", want: fbType,
				req: &tfprotov6.UpgradeResourceStateRequest{TypeName: k.typ + "_nope", RawState: &tfprotov6.RawState{JSON: first}}},
		)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return rows
}

func TestUpgradeFastPathDifferential(t *testing.T) {
	up := newUpgradePair(t)
	rows := up.upgradeCorpus(t)
	answered := map[string]int{}
	for _, r := range rows {
		decision, diff := up.check(t, r.req)
		if decision != r.want {
			t.Errorf("%s: the fast path decided %q, want %q", r.name, decision, r.want)
		}
		if diff != "" {
			t.Errorf("%s (%s): the fast path's response differs from the framework's: %s", r.name, decision, diff)
		}
		if decision == planAnswered {
			answered[r.req.TypeName]++
		}
	}
	counts := up.fast.upgradeDecisionCounts()
	for _, d := range upgradeDecisions {
		if counts[d] == 0 {
			t.Errorf("no row took decision %q", d)
		}
	}
	for typ := range fastPlanReviewed {
		if answered[typ] == 0 {
			t.Errorf("no row of %s was answered by the fast path", typ)
		}
	}
	t.Logf("corpus: %d rows; decisions: %v; answered per type: %v", len(rows), counts, answered)
}

// TestUpgradeFastPathOff: GANTRY_NO_UPGRADE_FAST_PATH sends every upgrade to the framework.
func TestUpgradeFastPathOff(t *testing.T) {
	t.Setenv(envNoUpgradeFastPath, "1")
	pf := New("test")()
	fast, ok := PlanFastPath(ReleasingContexts(providerserver.NewProtocol6(pf)()), pf).(*planFastPath)
	if !ok {
		t.Fatal("PlanFastPath did not wrap the framework's server")
	}
	if _, err := fast.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		t.Fatal(err)
	}
	resp, err := fast.UpgradeResourceState(context.Background(), &tfprotov6.UpgradeResourceStateRequest{TypeName: "gantry_performer",
		RawState: &tfprotov6.RawState{JSON: []byte("null")}})
	if err != nil || diagsHaveError(resp.Diagnostics) {
		t.Fatalf("upgrade: %v %s", err, diagsString(resp.Diagnostics))
	}
	for d, n := range fast.upgradeDecisionCounts() {
		if n != 0 {
			t.Errorf("decision %q taken %d times with the fast path off", d, n)
		}
	}
}

// FuzzUpgradeFastPath: any raw JSON state of any type, at the schema's version or not, is
// answered by the fast path exactly as by the framework.
func FuzzUpgradeFastPath(f *testing.F) {
	up := newUpgradePair(f)
	rows := up.upgradeCorpus(f)
	for i, r := range rows {
		f.Add(uint8(i), r.req.RawState != nil && r.req.RawState.JSON != nil, bytesOf(r.req.RawState), r.req.Version)
	}
	f.Fuzz(func(t *testing.T, row uint8, useJSON bool, js []byte, version int64) {
		r := rows[int(row)%len(rows)]
		req := &tfprotov6.UpgradeResourceStateRequest{TypeName: r.req.TypeName, Version: version}
		if useJSON {
			req.RawState = &tfprotov6.RawState{JSON: js}
		}
		if decision, diff := up.check(t, req); diff != "" {
			t.Errorf("%s (%s): the fast path's response differs from the framework's: %s", r.name, decision, diff)
		}
	})
}

func bytesOf(r *tfprotov6.RawState) []byte {
	if r == nil {
		return nil
	}
	return r.JSON
}

// BenchmarkUpgradeResourceState: one performer's stored state (the plan corpus's "unchanged,
// defaults set to other values") upgraded at its schema's version by the framework and by the
// fast path.
func BenchmarkUpgradeResourceState(b *testing.B) {
	up := newUpgradePair(b)
	typ := up.types["gantry_performer"]
	js := stateJSON(b, tfv(typ, planPrior(performerRows(), "unchanged, defaults set to other values")))
	req := &tfprotov6.UpgradeResourceStateRequest{TypeName: "gantry_performer", RawState: &tfprotov6.RawState{JSON: js}}
	for _, s := range []struct {
		name   string
		server tfprotov6.ProviderServer
	}{{"framework", up.plain}, {"fast path", up.fast}} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if r, err := s.server.UpgradeResourceState(context.Background(), req); err != nil || r.UpgradedState == nil {
					b.Fatal(err)
				}
			}
		})
	}
}
