package packageset

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// ParseClearQuarantine: the annotation's keys, comma-separated, trimmed, without empty entries
// or duplicates, sorted.
func TestParseClearQuarantine(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "[]"},
		{"only separators and spaces", " , ,", "[]"},
		{"one key", "tool@1.1.0", "[tool@1.1.0]"},
		{"trailing comma", "tool@1.1.0,", "[tool@1.1.0]"},
		{"spaces, tabs and newlines around keys", " a@1 ,\tb@2\n", "[a@1 b@2]"},
		{"duplicates dropped, sorted, config keys kept whole", " b@1 ,a@2#config-0badc0de, b@1", "[a@2#config-0badc0de b@1]"},
		{"duplicate after trimming", "a@1, a@1 ,a@1", "[a@1]"},
		{"space-separated keys are two keys", "tool@1.1.0 other@1.0.0", "[other@1.0.0 tool@1.1.0]"},
		{"newline-separated keys", "tool@1.1.0\nother@1.0.0", "[other@1.0.0 tool@1.1.0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(ParseClearQuarantine(tc.in)); got != tc.want {
				t.Errorf("ParseClearQuarantine(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// clearQuarantine lifts the keys asked for: from the listed ones and from the node records
// that would list them again (a finished rollback forgets what it reverted from, a Withdrawn
// entry goes), on clones (the facts stay as they were); a key whose rollback still runs on
// some node is pending and stays everywhere; a key nothing holds is lifted at once.
func TestClearQuarantine(t *testing.T) {
	reverted := func(done bool) *NodeRecord { // tool rolled back from 1.1.0 to 1.0.0
		st := v1alpha1.StateComplete
		if !done {
			st = v1alpha1.StateInProgress
		}
		return &NodeRecord{Rollout: v1alpha1.RolloutReverted, Packages: map[string]*PackageRecord{
			"tool": {Version: "1.0.0", Stage: conf, State: st, Done: done, Reverting: true, RevertedFrom: "1.1.0"},
			"fw":   {Version: "2.0.0", Stage: conf, State: v1alpha1.StateComplete, Done: true}}}
	}
	configReverted := &NodeRecord{Packages: map[string]*PackageRecord{
		"tool": {Version: "1.0.0", Stage: conf, State: v1alpha1.StateComplete, Done: true, Reverting: true, RevertedFrom: "1.0.0", RevertedConfig: "abcd1234"}}}
	withdrawn := func(w map[string]string) *NodeRecord {
		return &NodeRecord{Packages: map[string]*PackageRecord{}, Withdrawn: w}
	}
	node := func(name string, rec *NodeRecord) NodeFacts {
		return NodeFacts{Name: name, Selected: true, Record: rec}
	}
	// describe is what the quarantine reads of a record: each package's revert and the
	// Withdrawn entries.
	describe := func(rec *NodeRecord) string {
		if rec == nil {
			return "none"
		}
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(rec.Packages)) {
			r := rec.Packages[name]
			fmt.Fprintf(&b, "%s@%s reverting=%v from=%q config=%q; ", name, r.Version, r.Reverting, r.RevertedFrom, r.RevertedConfig)
		}
		return b.String() + fmt.Sprintf("withdrawn=%v", rec.Withdrawn)
	}
	const liftedRevert = `fw@2.0.0 reverting=false from="" config=""; tool@1.0.0 reverting=false from="" config=""; withdrawn=map[]`
	for _, tc := range []struct {
		name                  string
		keys, listed          []string
		nodes                 []NodeFacts
		rest, lifted, pending string
		records               []string // describe of each node's record after the call
	}{
		{"nothing asked: all as is", nil, []string{"tool@1.1.0"}, []NodeFacts{node("a", reverted(true))},
			"[tool@1.1.0]", "[]", "[]", []string{describe(reverted(true))}},
		{"listed only: lifted", []string{"tool@1.1.0"}, []string{"other@1", "tool@1.1.0"}, nil,
			"[other@1]", "[tool@1.1.0]", "[]", nil},
		{"held by nothing: lifted at once", []string{"x@1"}, []string{"tool@1.1.0"}, []NodeFacts{node("a", nil), node("b", reverted(true))},
			"[tool@1.1.0]", "[x@1]", "[]", []string{"none", describe(reverted(true))}},
		{"finished rollback: the record forgets it, the package stays where it was returned to", []string{"tool@1.1.0"}, []string{"tool@1.1.0"},
			[]NodeFacts{node("a", reverted(true))},
			"[]", "[tool@1.1.0]", "[]", []string{liftedRevert}},
		{"rollback running: pending, kept in the list and the record", []string{"tool@1.1.0"}, []string{"tool@1.1.0"}, []NodeFacts{node("a", reverted(false))},
			"[tool@1.1.0]", "[]", "[tool@1.1.0]", []string{describe(reverted(false))}},
		{"running on one node, finished on another: pending everywhere", []string{"tool@1.1.0"}, []string{"tool@1.1.0"},
			[]NodeFacts{node("a", reverted(true)), node("b", reverted(false))},
			"[tool@1.1.0]", "[]", "[tool@1.1.0]", []string{describe(reverted(true)), describe(reverted(false))}},
		{"withdrawn: the entry goes, Withdrawn nil", []string{"tool@1.1.0"}, nil, []NodeFacts{node("a", withdrawn(map[string]string{"tool": "1.1.0"}))},
			"[]", "[tool@1.1.0]", "[]", []string{"withdrawn=map[]"}},
		{"withdrawn: the other entries stay", []string{"tool@1.1.0"}, nil,
			[]NodeFacts{node("a", withdrawn(map[string]string{"tool": "1.1.0", "fw": "2.0.0"}))},
			"[]", "[tool@1.1.0]", "[]", []string{"withdrawn=map[fw:2.0.0]"}},
		{"withdrawn another version: kept", []string{"tool@1.2.0"}, nil, []NodeFacts{node("a", withdrawn(map[string]string{"tool": "1.1.0"}))},
			"[]", "[tool@1.2.0]", "[]", []string{"withdrawn=map[tool:1.1.0]"}},
		{"config quarantine", []string{"tool@1.0.0#config-abcd1234"}, []string{"tool@1.0.0#config-abcd1234"}, []NodeFacts{node("a", configReverted)},
			"[]", "[tool@1.0.0#config-abcd1234]", "[]", []string{`tool@1.0.0 reverting=false from="" config=""; withdrawn=map[]`}},
		{"the version's key does not lift a config quarantine", []string{"tool@1.0.0"}, []string{"tool@1.0.0#config-abcd1234"}, []NodeFacts{node("a", configReverted)},
			"[tool@1.0.0#config-abcd1234]", "[tool@1.0.0]", "[]", []string{describe(configReverted)}},
		{"several keys: lifted and pending sorted", []string{"z@1", "tool@1.1.0", "a@1"}, []string{"a@1", "tool@1.1.0", "z@1"},
			[]NodeFacts{node("a", reverted(false))},
			"[tool@1.1.0]", "[a@1 z@1]", "[tool@1.1.0]", []string{describe(reverted(false))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []string
			for _, n := range tc.nodes {
				before = append(before, describe(n.Record))
			}
			out, rest, lifted, pending := clearQuarantine(tc.keys, tc.listed, tc.nodes)
			if fmt.Sprint(rest) != tc.rest || fmt.Sprint(lifted) != tc.lifted || fmt.Sprint(pending) != tc.pending {
				t.Errorf("rest %v lifted %v pending %v; want %s %s %s", rest, lifted, pending, tc.rest, tc.lifted, tc.pending)
			}
			if len(out) != len(tc.nodes) {
				t.Fatalf("%d nodes out of %d", len(out), len(tc.nodes))
			}
			for i, n := range out {
				if n.Name != tc.nodes[i].Name {
					t.Errorf("node %d is %s, want %s", i, n.Name, tc.nodes[i].Name)
				}
				if got := describe(n.Record); got != tc.records[i] {
					t.Errorf("%s record: %s\nwant %s", n.Name, got, tc.records[i])
				}
				if got := describe(tc.nodes[i].Record); got != before[i] {
					t.Errorf("%s: the facts' record changed to %s", n.Name, got)
				}
			}
		})
	}
}

// The quarantine keys: Quarantine "<package>@<version>", ConfigQuarantine with ConfigKey (8
// hex digits, independent of map order, nil and empty alike), and the key a record holds
// (quarantineKey: only a rollback flow that names what it reverted from).
func TestQuarantineKeys(t *testing.T) {
	cfg := map[string]string{"a": "1", "b": "2"}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"version", Quarantine("tool", "1.1.0"), "tool@1.1.0"},
		{"config", ConfigQuarantine("tool", "1.0.0", cfg), "tool@1.0.0#config-" + ConfigKey(cfg)},
		{"config key: 8 hex digits", fmt.Sprint(len(ConfigKey(cfg)), regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(ConfigKey(cfg))), "8 true"},
		{"config key: map order", ConfigKey(map[string]string{"b": "2", "a": "1"}), ConfigKey(cfg)},
		{"config key: nil and empty alike", ConfigKey(nil), ConfigKey(map[string]string{})},
		{"config key: a value differs", fmt.Sprint(ConfigKey(map[string]string{"a": "1", "b": "3"}) == ConfigKey(cfg)), "false"},
		{"config key: a key differs", fmt.Sprint(ConfigKey(map[string]string{"a": "1", "c": "2"}) == ConfigKey(cfg)), "false"},
		{"config key: a key fewer", fmt.Sprint(ConfigKey(map[string]string{"a": "1"}) == ConfigKey(cfg)), "false"},
		{"config key: empty is not absent", fmt.Sprint(ConfigKey(map[string]string{"a": ""}) == ConfigKey(nil)), "false"},
		{"record: no rollback", (&PackageRecord{Version: "1.0.0", RevertedFrom: "1.1.0"}).quarantineKey("tool"), ""},
		{"record: rollback without what it reverted from", (&PackageRecord{Version: "1.0.0", Reverting: true}).quarantineKey("tool"), ""},
		{"record: version rollback", (&PackageRecord{Version: "1.0.0", Reverting: true, RevertedFrom: "1.1.0"}).quarantineKey("tool"), "tool@1.1.0"},
		{"record: finished version rollback", (&PackageRecord{Version: "1.0.0", Done: true, Reverting: true, RevertedFrom: "1.1.0"}).quarantineKey("tool"), "tool@1.1.0"},
		{"record: config rollback", (&PackageRecord{Version: "1.0.0", Reverting: true, RevertedFrom: "1.0.0", RevertedConfig: ConfigKey(cfg)}).quarantineKey("tool"),
			ConfigQuarantine("tool", "1.0.0", cfg)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%q, want %q", tc.got, tc.want)
			}
		})
	}
}

// quarantineSet gathers the keys from the status, the rollback records (running or finished)
// and the Withdrawn entries; stalledWants names the wanted packages a key stalls, the version's
// key before the config's, in the wants' order.
func TestQuarantineSetAndStalledWants(t *testing.T) {
	good, bad := map[string]string{"mode": "good"}, map[string]string{"mode": "bad"}
	want := func(name, version string, cfg map[string]string) Want {
		return Want{Name: name, Version: version, Config: cfg}
	}
	for _, tc := range []struct {
		name    string
		listed  []string
		nodes   []NodeFacts
		wants   []Want
		set     string
		stalled string
	}{
		{"nothing quarantined", nil, []NodeFacts{{Name: "a"}}, []Want{want("tool", "1.1.0", nil)}, "[]", "[]"},
		{"listed in the status", []string{"tool@1.1.0"}, nil, []Want{want("tool", "1.1.0", nil)}, "[tool@1.1.0]", "[tool@1.1.0]"},
		{"another version wanted: not stalled", []string{"tool@1.1.0"}, nil, []Want{want("tool", "1.2.0", nil)}, "[tool@1.1.0]", "[]"},
		{"from a running rollback's record", nil,
			[]NodeFacts{{Name: "a", Record: &NodeRecord{Packages: map[string]*PackageRecord{"tool": {Version: "1.0.0", Reverting: true, RevertedFrom: "1.1.0"}}}}},
			[]Want{want("tool", "1.1.0", nil)}, "[tool@1.1.0]", "[tool@1.1.0]"},
		{"from a Withdrawn entry", nil, []NodeFacts{{Name: "a", Record: &NodeRecord{Withdrawn: map[string]string{"tool": "1.1.0"}}}},
			[]Want{want("tool", "1.1.0", nil)}, "[tool@1.1.0]", "[tool@1.1.0]"},
		{"config: only that config stalls", []string{ConfigQuarantine("tool", "1.0.0", bad)}, nil,
			[]Want{want("tool", "1.0.0", good)}, "[" + ConfigQuarantine("tool", "1.0.0", bad) + "]", "[]"},
		{"config: the bad config stalls", []string{ConfigQuarantine("tool", "1.0.0", bad)}, nil,
			[]Want{want("tool", "1.0.0", bad)}, "[" + ConfigQuarantine("tool", "1.0.0", bad) + "]", "[" + ConfigQuarantine("tool", "1.0.0", bad) + "]"},
		{"the version's key before the config's", []string{"tool@1.0.0", ConfigQuarantine("tool", "1.0.0", bad)}, nil,
			[]Want{want("tool", "1.0.0", bad)}, "[tool@1.0.0 " + ConfigQuarantine("tool", "1.0.0", bad) + "]", "[tool@1.0.0]"},
		{"in the wants' order", []string{"a@1", "z@1"}, nil, []Want{want("z", "1", nil), want("m", "1", nil), want("a", "1", nil)},
			"[a@1 z@1]", "[z@1 a@1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := quarantineSet(tc.listed, tc.nodes)
			if got := fmt.Sprint(sortedKeys(q)); got != tc.set {
				t.Errorf("quarantineSet = %s, want %s", got, tc.set)
			}
			if got := fmt.Sprint(stalledWants(tc.wants, q)); got != tc.stalled {
				t.Errorf("stalledWants = %s, want %s", got, tc.stalled)
			}
		})
	}
}

// testQuarantineLifted: after a rollback quarantined quarantine, lifting it
// (gantry.dev/clear-quarantine, SetFacts.ClearQuarantine) while the spec still asks for what
// failed makes the next flow try it again: the key leaves the decision's quarantine and the
// node records, the set is no longer Stalled, and once the cause is fixed (the Jobs succeed)
// every node converges on the target. Lifting while the rollback flow still runs is pending.
func testQuarantineLifted(t *testing.T, from, to Want, fresh bool, fail func(JobSpec) bool, quarantine string) {
	s := newSim(t, 2)
	s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
	if !fresh {
		s.facts.Wants = []Want{from}
		s.run(v1alpha1.StatusComplete)
	}
	s.facts.Wants = []Want{to}
	s.fail = func(j JobSpec, _ int) bool { return fail(j) }
	var d Decision
	sawPending := false
	for i := 0; i < 60; i++ {
		// Asked while the rollback runs: pending, nothing lifted, the rollback goes on.
		s.facts.ClearQuarantine = nil
		for _, r := range s.nodes["node-0"].recPackages() {
			if r.Reverting && !r.Done {
				s.facts.ClearQuarantine = []string{quarantine}
			}
		}
		d = s.pass()
		if len(d.QuarantinePending) > 0 {
			sawPending = true
			if len(d.QuarantineLifted) != 0 {
				t.Fatalf("lifted %v while pending %v", d.QuarantineLifted, d.QuarantinePending)
			}
		}
		if len(d.QuarantineLifted) > 0 {
			t.Fatalf("lifted during the rollback at pass %d: %v", i, d.QuarantineLifted)
		}
		s.settle()
		if s.nodes["node-0"].rec.Rollout == v1alpha1.RolloutReverted && len(s.pendingJobs()) == 0 {
			break
		}
	}
	if !sawPending && (!fresh || to.Uninstall) { // a new package without uninstall is withdrawn at once
		t.Error("a lift asked during the rollback was never pending")
	}
	s.facts.ClearQuarantine = nil
	d = s.pass()
	if fmt.Sprint(d.Quarantined) != "["+quarantine+"]" {
		t.Fatalf("quarantined %v, want %s", d.Quarantined, quarantine)
	}
	s.facts.Quarantined = d.Quarantined

	// Lift with the cause fixed: the same target runs again and converges everywhere.
	s.fail = nil
	s.reset()
	s.facts.ClearQuarantine = []string{quarantine, "other@9.9.9"}
	d = s.pass()
	want := []string{quarantine, "other@9.9.9"}
	slices.Sort(want)
	if fmt.Sprint(d.QuarantineLifted) != fmt.Sprint(want) || len(d.QuarantinePending) != 0 || len(d.Quarantined) != 0 || len(d.Stalled) != 0 {
		t.Fatalf("lift: lifted %v pending %v quarantined %v stalled %v", d.QuarantineLifted, d.QuarantinePending, d.Quarantined, d.Stalled)
	}
	rec := s.nodes["node-0"].rec
	if rec.Withdrawn != nil {
		t.Errorf("withdrawn kept: %v", rec.Withdrawn)
	}
	if r := rec.Packages[to.Name]; r != nil && r.Reverting && r.Done {
		t.Errorf("reverted record kept its quarantine: %+v", r)
	}
	s.facts.ClearQuarantine, s.facts.Quarantined = nil, d.Quarantined // the controller drops the annotation
	s.settle()
	d = s.run(v1alpha1.StatusComplete)
	for _, n := range s.nodeNames() {
		r := s.nodes[n].rec.Packages[to.Name]
		if r == nil || r.Version != to.Version || fmt.Sprint(r.Config) != fmt.Sprint(to.Config) || s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged {
			t.Errorf("%s after the lift: %+v %s", n, r, s.nodes[n].rec.Rollout)
		}
	}
	if len(d.Quarantined) != 0 || len(d.Stalled) != 0 {
		t.Errorf("quarantined %v stalled %v", d.Quarantined, d.Stalled)
	}
}
