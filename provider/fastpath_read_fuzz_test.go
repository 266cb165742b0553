package provider

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The fuzz target of the ReadResource fast path: a row of the differential test's corpus
// (fastpath_read_test.go), mutated, is read by the fast path and by the plain framework server
// (both against the same fakeAPI); the responses must be equal field by field whether the fast
// path answered or fell back (a fallback hands its read of the object to readInto: the answer
// must still be the framework's), and the fast path must send no more GETs than the framework.
//
// Mutations work on the decoded values so that most of them still reach the fast path's
// checks: ops is read three bytes at a time (target, node, replacement) as FuzzPlanFastPath
// reads them, the target being the state (most often) or the identity. private picks one of
// readFuzzPrivates, or, when usePrivate is set, rawPrivate is the private state; raw, when not
// empty, replaces the state's bytes.
//
//	go test ./provider -run '^$' -fuzz FuzzReadFastPath -fuzztime 2m

// readFuzzPrivates are the private states a mutation picks from.
var readFuzzPrivates = []string{privRead, privMarkOld, privMarkOther, privMarkFwKey, privFramework, privMarkVersion, privMarkNoRV, privSpaced, privEmpty, ""}

func FuzzReadFastPath(f *testing.F) {
	pairs := readTestPairs(f)
	rp := pairs[readConfigured]
	corpus := readFuzzCorpus()
	for i := range corpus {
		f.Add(uint16(i), []byte{}, byte(0), false, []byte{}, []byte{})
	}
	f.Add(uint16(0), []byte{0, 7, 2, 1, 3, 0}, byte(1), false, []byte{}, []byte{})
	f.Add(uint16(1), []byte{}, byte(0), true, []byte(`{"read":"eyJydiI6IjEyMyIsImJ5IjoidGVzdCJ9"}`), []byte{})
	f.Add(uint16(2), []byte{}, byte(0), false, []byte{}, []byte{0x81, 0xa2, 'i', 'd', 0xa1, 'x'})
	f.Fuzz(func(t *testing.T, row uint16, ops []byte, private byte, usePrivate bool, rawPrivate, raw []byte) {
		r := corpus[int(row)%len(corpus)]
		req := rp.request(t, r)
		if !rp.mutate(r.typ, req, ops) {
			t.Skip("the mutation makes no value")
		}
		req.Private = []byte(readFuzzPrivates[int(private)%len(readFuzzPrivates)])
		if usePrivate {
			req.Private = rawPrivate
		}
		if len(req.Private) == 0 {
			req.Private = nil
		}
		if len(raw) > 0 {
			req.CurrentState = &tfprotov6.DynamicValue{MsgPack: raw}
		}
		if rp.namesNoObject(r.typ, req) {
			t.Skip("a state that names no object (the framework's Read retries until the request ends)")
		}
		rp.check(t, r.typ, req)
	})
}

// TestReadFastPathMutations is the fuzz target's check over a fixed set of random mutations
// (runs with the unit tests; the counts show how many the fast path answered).
func TestReadFastPathMutations(t *testing.T) {
	pairs := readTestPairs(t)
	rp := pairs[readConfigured]
	corpus := readFuzzCorpus()
	rnd := rand.New(rand.NewSource(37))
	n := 600
	if testing.Short() {
		n = 100
	}
	checked := 0
	for i := 0; i < n; i++ {
		r := corpus[rnd.Intn(len(corpus))]
		ops := make([]byte, 3*(1+rnd.Intn(3)))
		rnd.Read(ops)
		req := rp.request(t, r)
		if rnd.Intn(3) == 0 {
			req.Private = []byte(readFuzzPrivates[rnd.Intn(len(readFuzzPrivates))])
		}
		if !rp.mutate(r.typ, req, ops) || rp.namesNoObject(r.typ, req) {
			continue
		}
		rp.check(t, r.typ, req)
		checked++
	}
	t.Logf("%d mutated reads, %d checked; decisions: %v", n, checked, rp.fast.readDecisionCounts())
}

// readFuzzCorpus is the differential test's corpus without the rows of other server modes and
// of unknown types (nothing to mutate).
func readFuzzCorpus() []readRow {
	var rows []readRow
	for _, r := range readCorpus() {
		if r.mode == readConfigured && fastReadReviewed[r.typ] {
			rows = append(rows, r)
		}
	}
	return rows
}

// check reads req with the fast path and with the framework: the responses must be equal, and
// the fast path must not send more GETs than the framework.
func (rp *readPair) check(t *testing.T, typeName string, req *tfprotov6.ReadResourceRequest) {
	t.Helper()
	fast, decision, fastGets := rp.readFast(t, req)
	plain, plainGets := rp.readPlain(t, req)
	d := rp.sameRead(typeName, fast, plain)
	// The framework reports one of the defects of a state with several, in no fixed order (its
	// attribute walks go over maps): a fallback, which is the framework's own answer, must equal
	// one of its answers to the same request.
	for try := 0; d != "" && decision != "answered" && hasErrors(fast.Diagnostics) && hasErrors(plain.Diagnostics) && try < 20; try++ {
		again, _ := rp.readPlain(t, req)
		d = rp.sameRead(typeName, fast, again)
	}
	if d != "" {
		state, _ := req.CurrentState.Unmarshal(rp.types[typeName])
		var id tftypes.Value
		if req.CurrentIdentity != nil && req.CurrentIdentity.IdentityData != nil {
			id, _ = req.CurrentIdentity.IdentityData.Unmarshal(rp.idents[typeName])
		}
		t.Fatalf("the fast path (%s) differs from the framework: %s\nstate: %s\nidentity: %s\nprivate: %q\nframework: %s",
			decision, d, compact(state), compact(id), req.Private, diagsString(plain.Diagnostics))
	}
	if fastGets > plainGets {
		t.Fatalf("the fast path (%s) sent %d GETs, the framework %d", decision, fastGets, plainGets)
	}
}

// namesNoObject reports whether req's state decodes to one whose name (a package set's id when
// its name is empty) is empty: readInto's GET of it is retried until the request ends, for the
// fast path's fallback as for the framework.
func (rp *readPair) namesNoObject(typeName string, req *tfprotov6.ReadResourceRequest) bool {
	if req.CurrentState == nil {
		return false
	}
	v, err := req.CurrentState.Unmarshal(rp.types[typeName])
	if err != nil {
		return false
	}
	_, name := stateKeyOf(v, typeName != "gantry_package_set")
	return name == ""
}

// readFuzzTargets are the values a mutation changes, the state more often than the identity.
var readFuzzTargets = []string{"state", "state", "state", "identity"}

// mutate applies ops to req's state and identity (see FuzzReadFastPath); false when a value
// cannot be encoded or decoded.
func (rp *readPair) mutate(typeName string, req *tfprotov6.ReadResourceRequest, ops []byte) bool {
	typ, it := rp.types[typeName], rp.idents[typeName]
	vals := map[string]tftypes.Value{}
	if req.CurrentState == nil {
		return false
	}
	v, err := req.CurrentState.Unmarshal(typ)
	if err != nil {
		return false
	}
	vals["state"] = v
	if req.CurrentIdentity != nil && req.CurrentIdentity.IdentityData != nil {
		v, err := req.CurrentIdentity.IdentityData.Unmarshal(it)
		if err != nil {
			return false
		}
		vals["identity"] = v
	}
	for ; len(ops) >= 3; ops = ops[3:] {
		target := readFuzzTargets[int(ops[0])%len(readFuzzTargets)]
		if _, ok := vals[target]; !ok {
			continue
		}
		at, repl, ok := pickNode(vals[target], int(ops[1]), ops[2])
		if ok {
			vals[target] = replaceAt(vals[target], at, repl)
		}
	}
	state, err := tfprotov6.NewDynamicValue(typ, vals["state"])
	if err != nil {
		return false
	}
	req.CurrentState = &state
	if id, ok := vals["identity"]; ok {
		d, err := tfprotov6.NewDynamicValue(it, id)
		if err != nil {
			return false
		}
		req.CurrentIdentity = &tfprotov6.ResourceIdentityData{IdentityData: &d}
	}
	return true
}

// readContext is the context of the tests' reads: a backstop against a read that never ends
// (the fakeAPI answers at once).
func readContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}
