package provider

import (
	"context"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The fuzz target of the PlanResourceChange fast path: a row of the differential test's
// corpus (fastpath_test.go), mutated, is planned by the fast path and by the plain framework
// server; when the fast path answers, its response must equal the framework's field by field.
//
// Mutations work on the decoded values so that most of them still reach the fast path's
// checks: ops is read three bytes at a time (target, node, replacement). The target is the
// prior and proposed states together (an unchanged plan stays unchanged), the config, the
// proposed state alone, the prior state alone, or the identity; the node is one of the
// target's nodes (tftypes.Walk order, the root excepted); the replacement is null, unknown,
// or a value of the node's type that the rules care about (success and failure summaries,
// defaults, fractions, numbers beyond int64, text that is not JSON, an emptied, shortened or
// lengthened collection). private replaces the prior private state when usePrivate is set,
// and raw, when not empty, replaces the prior and proposed states' bytes.
//
//	go test ./provider -run '^$' -fuzz FuzzPlanFastPath -fuzztime 2m

func FuzzPlanFastPath(f *testing.F) {
	pp := newPlanPair(f, false)
	corpus := fuzzCorpus()
	for i, r := range corpus {
		f.Add(uint16(i), []byte{}, []byte(r.private), r.private != "", []byte{})
	}
	f.Add(uint16(0), []byte{0, 7, 2, 1, 3, 0}, []byte(privFramework), true, []byte{})
	f.Add(uint16(1), []byte{}, []byte{}, false, []byte{0x81, 0xa2, 'i', 'd', 0xa1, 'x'})
	f.Fuzz(func(t *testing.T, row uint16, ops, private []byte, usePrivate bool, raw []byte) {
		r := corpus[int(row)%len(corpus)]
		req := pp.request(t, r)
		if !pp.mutate(r.typ, req, ops) {
			t.Skip("the mutation makes no value")
		}
		if usePrivate {
			req.PriorPrivate = private
		}
		if len(raw) > 0 {
			req.PriorState = &tfprotov6.DynamicValue{MsgPack: raw}
			req.ProposedNewState = req.PriorState
		}
		pp.check(t, r.typ, req)
	})
}

// TestPlanFastPathMutations is the fuzz target's check over a fixed set of random mutations
// (runs with the unit tests; the counts show how many reached the fast path).
func TestPlanFastPathMutations(t *testing.T) {
	pp := newPlanPair(t, false)
	corpus := fuzzCorpus()
	rnd := rand.New(rand.NewSource(37))
	n := 600
	if testing.Short() {
		n = 100
	}
	for i := 0; i < n; i++ {
		r := corpus[rnd.Intn(len(corpus))]
		ops := make([]byte, 3*(1+rnd.Intn(3)))
		rnd.Read(ops)
		req := pp.request(t, r)
		if pp.mutate(r.typ, req, ops) {
			pp.check(t, r.typ, req)
		}
	}
	t.Logf("%d mutated plans; decisions: %v", n, pp.fast.decisions())
}

// fuzzCorpus is the differential test's corpus without the deferral rows (one server pair).
func fuzzCorpus() []planRow {
	var rows []planRow
	for _, r := range planCorpus() {
		if !r.deferral && fastPlanReviewed[r.typ] { // the unknown-type rows have nothing to mutate
			rows = append(rows, r)
		}
	}
	return rows
}

// check plans req with the fast path and, when it answered, with the framework: the responses
// must be equal (a plan it leaves to the framework is the framework's).
func (pp *planPair) check(t *testing.T, typeName string, req *tfprotov6.PlanResourceChangeRequest) {
	t.Helper()
	fast, decision := pp.planFast(t, req)
	if decision != planAnswered {
		return
	}
	plain, err := pp.plain.PlanResourceChange(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if d := pp.samePlan(typeName, fast, plain); d != "" {
		prior, _ := req.PriorState.Unmarshal(pp.types[typeName])
		config, _ := req.Config.Unmarshal(pp.types[typeName])
		t.Fatalf("the fast path answered and differs from the framework: %s\nprior: %s\nconfig: %s\nprivate: %q\nframework: %s",
			d, compact(prior), compact(config), req.PriorPrivate, diagsString(plain.Diagnostics))
	}
}

// compact lists the known, non-null leaves and the unknown nodes of v, one path=value each.
func compact(v tftypes.Value) string {
	var out []string
	_ = tftypes.Walk(v, func(p *tftypes.AttributePath, n tftypes.Value) (bool, error) {
		switch {
		case !n.IsKnown():
			out = append(out, p.String()+"=<unknown>")
			return false, nil
		case n.IsNull():
			return false, nil
		case n.Type().Is(tftypes.String) || n.Type().Is(tftypes.Number) || n.Type().Is(tftypes.Bool):
			out = append(out, p.String()+"="+n.String())
		}
		return true, nil
	})
	return strings.Join(out, " ")
}

// mutate applies ops to req's values (see FuzzPlanFastPath); false when a value cannot be
// encoded or decoded.
func (pp *planPair) mutate(typeName string, req *tfprotov6.PlanResourceChangeRequest, ops []byte) bool {
	typ, it := pp.types[typeName], pp.idents[typeName]
	vals := map[string]tftypes.Value{}
	for name, d := range map[string]*tfprotov6.DynamicValue{"prior": req.PriorState, "proposed": req.ProposedNewState, "config": req.Config} {
		v, err := d.Unmarshal(typ)
		if err != nil {
			return false
		}
		vals[name] = v
	}
	if req.PriorIdentity != nil && req.PriorIdentity.IdentityData != nil {
		v, err := req.PriorIdentity.IdentityData.Unmarshal(it)
		if err != nil {
			return false
		}
		vals["identity"] = v
	}
	for ; len(ops) >= 3; ops = ops[3:] {
		targets := fuzzTargets[int(ops[0])%len(fuzzTargets)]
		if _, ok := vals[targets[0]]; !ok {
			continue
		}
		at, repl, ok := pickNode(vals[targets[0]], int(ops[1]), ops[2])
		if !ok {
			continue
		}
		for _, name := range targets {
			vals[name] = replaceAt(vals[name], at, repl)
		}
	}
	enc := func(t tftypes.Type, v tftypes.Value) *tfprotov6.DynamicValue {
		d, err := tfprotov6.NewDynamicValue(t, v)
		if err != nil {
			return nil
		}
		return &d
	}
	req.PriorState, req.ProposedNewState, req.Config = enc(typ, vals["prior"]), enc(typ, vals["proposed"]), enc(typ, vals["config"])
	if id, ok := vals["identity"]; ok {
		req.PriorIdentity = &tfprotov6.ResourceIdentityData{IdentityData: enc(it, id)}
		if req.PriorIdentity.IdentityData == nil {
			return false
		}
	}
	return req.PriorState != nil && req.ProposedNewState != nil && req.Config != nil
}

// fuzzTargets are the values a mutation changes, the prior and proposed states together (an
// unchanged plan stays unchanged) and the config more often than the others.
var fuzzTargets = [][]string{{"prior", "proposed"}, {"prior", "proposed"}, {"prior", "proposed"}, {"config"}, {"config"}, {"proposed"}, {"prior"}, {"identity"}}

// pickNode returns the path of node number n (modulo their count) of v, the root excepted,
// and replacement op for it.
func pickNode(v tftypes.Value, n int, op byte) (*tftypes.AttributePath, tftypes.Value, bool) {
	var paths []*tftypes.AttributePath
	var nodes []tftypes.Value
	_ = tftypes.Walk(v, func(p *tftypes.AttributePath, node tftypes.Value) (bool, error) {
		if len(p.Steps()) > 0 {
			paths, nodes = append(paths, p), append(nodes, node)
		}
		return true, nil
	})
	if len(paths) == 0 {
		return nil, tftypes.Value{}, false
	}
	i := n % len(paths)
	return paths[i], replacement(nodes[i], op), true
}

// replaceAt returns v with the node at path at replaced by repl (v unchanged when it has no
// such node).
func replaceAt(v tftypes.Value, at *tftypes.AttributePath, repl tftypes.Value) tftypes.Value {
	out, err := tftypes.Transform(v, func(p *tftypes.AttributePath, node tftypes.Value) (tftypes.Value, error) {
		if p.Equal(at) && node.Type().Equal(repl.Type()) {
			return repl, nil
		}
		return node, nil
	})
	if err != nil {
		return v
	}
	return out
}

// Values a replacement draws from.
var (
	fuzzStrings = []string{"", "x", "Running", "Failed", "Pending", "complete", "waiting", "paused", "erroring", "Ready", "NotReady", "Succeeded",
		"default", "IfNotPresent", "Always", "Recreate", "RollingUpdate", "server", "one-off", "node", "info", "{", "{}", `{"a":1}`, "driver@550.1", "def"}
	fuzzNumbers = []*big.Float{big.NewFloat(0), big.NewFloat(1), big.NewFloat(2), big.NewFloat(3), big.NewFloat(600), big.NewFloat(8000), big.NewFloat(9090),
		big.NewFloat(9091), big.NewFloat(1.5), big.NewFloat(-1), big.NewFloat(1e30), new(big.Float).SetInt64(1 << 62)}
)

// replacement returns what op makes of node: null, unknown, or a value of its type.
func replacement(node tftypes.Value, op byte) tftypes.Value {
	typ := node.Type()
	switch op % 8 {
	case 0:
		return tftypes.NewValue(typ, nil)
	case 1:
		return tftypes.NewValue(typ, tftypes.UnknownValue)
	}
	k := int(op / 8)
	switch {
	case typ.Is(tftypes.String):
		return tftypes.NewValue(typ, fuzzStrings[k%len(fuzzStrings)])
	case typ.Is(tftypes.Number):
		return tftypes.NewValue(typ, fuzzNumbers[k%len(fuzzNumbers)])
	case typ.Is(tftypes.Bool):
		return tftypes.NewValue(typ, k%2 == 0)
	case typ.Is(tftypes.List{}):
		return resized(node, k)
	case typ.Is(tftypes.Map{}):
		return remapped(node, k)
	}
	return node
}

// resized returns list node emptied, without its last element, or with its first repeated.
func resized(node tftypes.Value, k int) tftypes.Value {
	var es []tftypes.Value
	if !node.IsKnown() || node.IsNull() || node.As(&es) != nil {
		return tftypes.NewValue(node.Type(), []tftypes.Value{})
	}
	switch {
	case k%3 == 0 || len(es) == 0:
		es = []tftypes.Value{}
	case k%3 == 1:
		es = es[:len(es)-1]
	default:
		es = append(es, es[0])
	}
	return tftypes.NewValue(node.Type(), es)
}

// remapped returns map node emptied, or with a key "k" holding its first value (or a null).
func remapped(node tftypes.Value, k int) tftypes.Value {
	var es map[string]tftypes.Value
	if !node.IsKnown() || node.IsNull() || node.As(&es) != nil || k%2 == 0 {
		return tftypes.NewValue(node.Type(), map[string]tftypes.Value{})
	}
	add := tftypes.NewValue(node.Type().(tftypes.Map).ElementType, nil)
	for _, e := range es {
		add = e
		break
	}
	es["k"] = add
	return tftypes.NewValue(node.Type(), es)
}
