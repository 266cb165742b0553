package packageset

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// skyState is Skyhook's node state with each package at its version, stage and state
// (image without tag, as Skyhook records it).
func skyState(entries ...SkyhookPackageStatus) SkyhookNodeState {
	st := SkyhookNodeState{}
	for _, e := range entries {
		st[e.Name+"|"+e.Version] = e
	}
	return st
}

func skyPkg(name, version, stage, state string) SkyhookPackageStatus {
	return SkyhookPackageStatus{Name: name, Version: version, Image: "ghcr.io/x/" + name, Stage: stage, State: state}
}

// The hand-over decision, one row per case Skyhook's state can present for a wanted package.
func TestAdoptSkyhook(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	withConfig := tool("1.0")
	withConfig.Config = ConfigHashes(map[string]string{"a": "b"})
	withConfig.Name = "tuned"
	cases := []struct {
		name        string
		rec         *NodeRecord
		wants       []Want
		sky         SkyhookNodeState
		wantAdopted []string
		wantSkipped []string
	}{
		{name: "complete at config, no interrupt: adopted", wants: []Want{tool("1.0")},
			sky: skyState(skyPkg("tool", "1.0", "config", "complete")), wantAdopted: []string{"tool@1.0"}},
		{name: "complete at post-interrupt with interrupt: adopted", wants: []Want{driver("2.0")},
			sky: skyState(skyPkg("driver", "2.0", "post-interrupt", "complete")), wantAdopted: []string{"driver@2.0"}},
		{name: "complete at config but the package has an interrupt: runs", wants: []Want{driver("2.0")},
			sky:         skyState(skyPkg("driver", "2.0", "config", "complete")),
			wantSkipped: []string{"driver@2.0: Skyhook completed stage config, not the package's last stage"}},
		{name: "in progress: runs", wants: []Want{tool("1.0")},
			sky:         skyState(skyPkg("tool", "1.0", "apply", "in_progress")),
			wantSkipped: []string{"tool@1.0: Skyhook's stage apply is in_progress, not complete"}},
		{name: "erroring at config: runs", wants: []Want{tool("1.0")},
			sky:         skyState(skyPkg("tool", "1.0", "config", "erroring")),
			wantSkipped: []string{"tool@1.0: Skyhook's stage config is erroring, not complete"}},
		{name: "another version: runs (an upgrade under Gantry)", wants: []Want{tool("1.1")},
			sky:         skyState(skyPkg("tool", "1.0", "config", "complete")),
			wantSkipped: []string{"tool: Skyhook has 1.0, the set asks for 1.1"}},
		{name: "another image: runs", wants: []Want{tool("1.0")},
			sky:         skyState(SkyhookPackageStatus{Name: "tool", Version: "1.0", Image: "ghcr.io/other/tool", Stage: "config", State: "complete"}),
			wantSkipped: []string{"tool@1.0: Skyhook ran image ghcr.io/other/tool, the set runs ghcr.io/x/tool"}},
		{name: "no image in Skyhook's state: version decides", wants: []Want{tool("1.0")},
			sky: skyState(SkyhookPackageStatus{Name: "tool", Version: "1.0", Stage: "config", State: "complete"}), wantAdopted: []string{"tool@1.0"}},
		{name: "not in Skyhook's state: runs, nothing said", wants: []Want{tool("1.0")},
			sky: skyState(skyPkg("other", "1.0", "config", "complete"))},
		{name: "Gantry's own record wins", wants: []Want{tool("1.0")},
			rec: &NodeRecord{Packages: map[string]*PackageRecord{"tool": {Version: "0.9", Stage: appl, State: v1alpha1.StateInProgress}}},
			sky: skyState(skyPkg("tool", "1.0", "config", "complete"))},
		{name: "several: each on its own", wants: []Want{driver("2.0"), tool("1.0"), withConfig},
			sky: skyState(skyPkg("driver", "2.0", "post-interrupt", "complete"), skyPkg("tool", "1.0", "config", "complete"),
				SkyhookPackageStatus{Name: "tuned", Version: "1.0", Image: "ghcr.io/x/tool", Stage: "config", State: "complete"}),
			wantAdopted: []string{"driver@2.0", "tool@1.0", "tuned@1.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec.Clone()
			if rec == nil {
				rec = &NodeRecord{}
			}
			adopted, skipped := AdoptSkyhook(rec, tc.wants, tc.sky, now)
			if strings.Join(adopted, ",") != strings.Join(tc.wantAdopted, ",") {
				t.Errorf("adopted %v, want %v", adopted, tc.wantAdopted)
			}
			if strings.Join(skipped, ",") != strings.Join(tc.wantSkipped, ",") {
				t.Errorf("skipped %q, want %q", skipped, tc.wantSkipped)
			}
			for _, w := range tc.wants {
				r := rec.Packages[w.Name]
				was := tc.rec != nil && tc.rec.Packages[w.Name] != nil
				isAdopted := strings.Contains(strings.Join(adopted, ","), w.Name+"@")
				switch {
				case was:
					if r.Version != tc.rec.Packages[w.Name].Version || r.Done {
						t.Errorf("%s: Gantry's record was changed: %+v", w.Name, r)
					}
				case isAdopted:
					if !settled(r, &w) || r.Interrupt != w.Interrupt || r.Image != w.Image || !r.Since.Equal(now) {
						t.Errorf("%s: adopted record %+v is not the settled flow of %+v", w.Name, r, w)
					}
				case r != nil:
					t.Errorf("%s: recorded though not adopted: %+v", w.Name, r)
				}
			}
		})
	}
}

// A node Skyhook left complete runs no stage Pod under the adopting set: the first pass
// records its packages complete, the node converges and the set is complete; a node without
// Skyhook state starts its flows as usual.
func TestPlanAdoptsFromSkyhook(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := SetFacts{Now: now, Name: "tuning", Generation: 1, Wants: []Want{driver("2.0"), tool("1.0")}, AdoptFrom: "tuning",
		Nodes: []NodeFacts{
			{Name: "done", Selected: true, Skyhook: skyState(skyPkg("driver", "2.0", "post-interrupt", "complete"), skyPkg("tool", "1.0", "config", "complete"))},
			{Name: "fresh", Selected: true},
		}}
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string]NodePlan{}
	for _, np := range d.Nodes {
		byNode[np.Name] = np
	}
	done := byNode["done"]
	if len(done.Jobs) != 0 || done.Cordon || done.Drain {
		t.Errorf("adopted node: jobs %v cordon %v drain %v, want none", done.Jobs, done.Cordon, done.Drain)
	}
	if done.Record == nil || done.Record.Rollout != v1alpha1.RolloutConverged || done.Status != v1alpha1.StatusComplete {
		t.Fatalf("adopted node: record %+v status %s, want Converged and complete", done.Record, done.Status)
	}
	if got := d.Adopted["done"]; !strings.Contains(got, "driver@2.0, tool@1.0") || !strings.Contains(got, "Skyhook tuning") {
		t.Errorf("Decision.Adopted[done] = %q", got)
	}
	if fresh := byNode["fresh"]; len(fresh.Jobs) == 0 && !fresh.Queued {
		t.Errorf("node without Skyhook state: no job and not queued: %+v", fresh)
	}
	if _, ok := d.Adopted["fresh"]; ok {
		t.Errorf("node without Skyhook state reported adopted")
	}

	// The next pass, from the written record and the same Skyhook state, adopts nothing more.
	f.Nodes = []NodeFacts{{Name: "done", Selected: true, Record: done.Record, Skyhook: f.Nodes[0].Skyhook}}
	d2, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(d2.Adopted) != 0 || len(d2.Nodes[0].Jobs) != 0 || d2.Status != v1alpha1.StatusComplete {
		t.Errorf("second pass: adopted %v jobs %v status %s", d2.Adopted, d2.Nodes[0].Jobs, d2.Status)
	}
}

// NodeReader.Read gathers the Skyhook state of selected nodes only, and only for a set that
// adopts from that Skyhook; an unreadable state is reported, not adopted.
func TestNodeReaderReadsSkyhookState(t *testing.T) {
	raw, _ := json.Marshal(skyState(skyPkg("tool", "1.0", "config", "complete")))
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "gantry-name", Annotations: map[string]string{v1alpha1.AnnotationAdoptFromSkyhook: "sky"}},
		Spec: v1alpha1.PackageSetSpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}}
	node := func(name, pool, state string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool},
			Annotations: map[string]string{v1alpha1.SkyhookNodeStatePrefix + "sky": state}}}
	}
	var f SetFacts
	r := NewNodeReader(set, nil, nil, nil, &f)
	if f.AdoptFrom != "sky" {
		t.Errorf("AdoptFrom = %q", f.AdoptFrom)
	}
	nf, ok, err := r.Read(node("n1", "a", string(raw)))
	if err != nil || !ok || nf.Skyhook["tool|1.0"].State != "complete" {
		t.Errorf("selected node: %+v %v %v", nf.Skyhook, ok, err)
	}
	nf, _, _ = r.Read(node("n2", "a", "{not json"))
	if nf.Skyhook != nil || !strings.Contains(nf.SkyhookUnreadable, "is not Skyhook's node state") {
		t.Errorf("unreadable state: %+v %q", nf.Skyhook, nf.SkyhookUnreadable)
	}
	set.Annotations = nil
	r = NewNodeReader(set, nil, nil, nil, &SetFacts{})
	if nf, _, _ = r.Read(node("n1", "a", string(raw))); nf.Skyhook != nil {
		t.Errorf("a set that adopts from no Skyhook read Skyhook state")
	}
}
