package packageset

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// rebootNode drives one node through Plan by hand: Jobs succeed unless held, the node's boot
// ID is the test's to change.
type rebootNode struct {
	t      *testing.T
	f      SetFacts
	rec    *NodeRecord
	jobs   map[string]JobFact
	cord   bool
	boot   string
	ran    []string          // stage of every Job created, in order
	byName map[string]string // job name → stage
}

func newRebootNode(t *testing.T) *rebootNode {
	return &rebootNode{t: t, boot: "boot-1", jobs: map[string]JobFact{}, byName: map[string]string{},
		f: SetFacts{Name: "gpu-drivers", Generation: 1, Wants: []Want{driver("1.0.0")}, Now: time.Unix(1_700_000_000, 0)}}
}

func (n *rebootNode) pass() Decision {
	n.t.Helper()
	n.f.Nodes = []NodeFacts{{Name: "node-0", Selected: true, Record: n.rec.Clone(), Jobs: copyJobs(n.jobs), Cordoned: n.cord, Drained: n.cord, BootID: n.boot}}
	d, err := Plan(n.f)
	if err != nil {
		n.t.Fatalf("Plan: %v", err)
	}
	np := d.Nodes[0]
	n.rec = np.Record.Clone()
	for _, j := range np.Jobs {
		if _, dup := n.jobs[j.Name]; dup {
			n.t.Fatalf("job %s created twice", j.Name)
		}
		n.jobs[j.Name] = JobFact{}
		n.ran = append(n.ran, string(j.Stage))
		n.byName[j.Name] = string(j.Stage)
	}
	n.cord = (n.cord || np.Cordon) && !np.Uncordon
	n.f.Now = n.f.Now.Add(time.Second)
	return d
}

// settle succeeds every undecided Job except the interrupt ones.
func (n *rebootNode) settle() {
	for name, j := range n.jobs {
		if !j.Succeeded && !j.Failed && n.byName[name] != string(v1alpha1.StageInterrupt) {
			n.jobs[name] = JobFact{Succeeded: true}
		}
	}
}

// untilInterrupt runs passes until the interrupt Job exists and returns its name.
func (n *rebootNode) untilInterrupt() string {
	n.t.Helper()
	for i := 0; i < 20; i++ {
		n.pass()
		for name, st := range n.byName {
			if st == string(v1alpha1.StageInterrupt) {
				return name
			}
		}
		n.settle()
	}
	n.t.Fatalf("no interrupt job; ran %v", n.ran)
	return ""
}

func (n *rebootNode) untilComplete() Decision {
	n.t.Helper()
	for i := 0; i < 20; i++ {
		d := n.pass()
		if d.Status == v1alpha1.StatusComplete {
			return d
		}
		n.settle()
	}
	n.t.Fatalf("not complete; ran %v record %+v", n.ran, n.rec.Packages["driver"])
	return Decision{}
}

// Skyhook #633: a reboot interrupt's pod is killed by the reboot it starts (exit 143); the
// node's new boot ID proves the reboot done, so the interrupt completes (no erroring, no
// second reboot, no cordon left) whether the boot ID changes before or after the failed Job
// is seen. Without a new boot ID the failure is a real one: erroring, then a retry.
func TestRebootInterruptCompletesOnNewBootID(t *testing.T) {
	killed := JobFact{Failed: true, Reason: "BackoffLimitExceeded", Message: "container interrupt exited 143 (Error)"}
	t.Run("boot ID changes while the interrupt runs", func(t *testing.T) {
		n := newRebootNode(t)
		job := n.untilInterrupt()
		if got := n.rec.Packages["driver"].BootID; got != "boot-1" {
			t.Fatalf("recorded boot ID %q", got)
		}
		n.boot = "boot-2"
		d := n.pass()
		if r := n.rec.Packages["driver"]; r.Stage != v1alpha1.StagePostInterrupt || r.State != v1alpha1.StateInProgress || d.Status == v1alpha1.StatusErroring {
			t.Fatalf("after reboot: %s/%s status %s", r.Stage, r.State, d.Status)
		}
		n.jobs[job] = killed // the pod's failure arrives late: ignored
		n.untilComplete()
		if got := strings.Join(n.ran, ","); got != "apply,config,interrupt,post-interrupt" {
			t.Errorf("ran %s", got)
		}
		if n.cord {
			t.Error("cordon left")
		}
	})
	t.Run("failed pod seen before the boot ID changes", func(t *testing.T) {
		n := newRebootNode(t)
		job := n.untilInterrupt()
		n.jobs[job] = killed
		d := n.pass()
		if r := n.rec.Packages["driver"]; r.State != v1alpha1.StateErroring || d.Status != v1alpha1.StatusErroring {
			t.Fatalf("before the node is back: %s/%s status %s", r.Stage, r.State, d.Status)
		}
		n.boot = "boot-2" // back within the backoff
		n.pass()
		r := n.rec.Packages["driver"]
		if r.Stage != v1alpha1.StagePostInterrupt || r.State != v1alpha1.StateInProgress {
			t.Fatalf("after the node is back: %s/%s %q", r.Stage, r.State, r.Message)
		}
		n.untilComplete()
		if got := strings.Join(n.ran, ","); got != "apply,config,interrupt,post-interrupt" {
			t.Errorf("ran %s (a second interrupt is a second reboot)", got)
		}
		if n.cord || n.rec.Rollout != v1alpha1.RolloutConverged {
			t.Errorf("cordoned %v rollout %s", n.cord, n.rec.Rollout)
		}
	})
	t.Run("no new boot ID: erroring, then retried", func(t *testing.T) {
		n := newRebootNode(t)
		job := n.untilInterrupt()
		n.jobs[job] = killed
		d := n.pass()
		if d.Status != v1alpha1.StatusErroring || !strings.Contains(FailureMessage(d.Failures), "stage interrupt: BackoffLimitExceeded: container interrupt exited 143") {
			t.Fatalf("status %s failures %v", d.Status, d.Failures)
		}
		n.f.Now = n.f.Now.Add(BackoffMin)
		n.pass()
		if got := strings.Join(n.ran, ","); got != "apply,config,interrupt,interrupt" {
			t.Errorf("ran %s", got)
		}
	})
	t.Run("a node without boot IDs relies on the Job", func(t *testing.T) {
		n := newRebootNode(t)
		n.boot = ""
		job := n.untilInterrupt()
		n.boot = "boot-2"
		n.pass()
		if r := n.rec.Packages["driver"]; r.Stage != v1alpha1.StageInterrupt || r.State != v1alpha1.StateInProgress {
			t.Fatalf("%s/%s", r.Stage, r.State)
		}
		n.jobs[job] = JobFact{Succeeded: true}
		n.untilComplete()
	})
}

// rebooted: only a reboot interrupt's record, at stage interrupt, whose boot ID was recorded
// and differs from the one the node reports now; rebootDone completes it (in_progress →
// complete), says so, and forgets the boot ID.
func TestRebooted(t *testing.T) {
	reboot := &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}
	rec := func(mod func(*PackageRecord)) *PackageRecord {
		r := &PackageRecord{Stage: intr, State: v1alpha1.StateInProgress, Interrupt: reboot, BootID: "boot-1"}
		if mod != nil {
			mod(r)
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		r        *PackageRecord
		nodeBoot string
		want     bool
	}{
		{"new boot ID", rec(nil), "boot-2", true},
		{"new boot ID, the Job seen failed", rec(func(r *PackageRecord) { r.State = v1alpha1.StateErroring }), "boot-2", true},
		{"same boot ID", rec(nil), "boot-1", false},
		{"the node reports no boot ID", rec(nil), "", false},
		{"no boot ID recorded", rec(func(r *PackageRecord) { r.BootID = "" }), "boot-2", false},
		{"a service interrupt", rec(func(r *PackageRecord) { r.Interrupt = &v1alpha1.Interrupt{Type: v1alpha1.InterruptService} }), "boot-2", false},
		{"a restart of all services", rec(func(r *PackageRecord) { r.Interrupt = &v1alpha1.Interrupt{Type: v1alpha1.InterruptRestartAllServices} }), "boot-2", false},
		{"no interrupt", rec(func(r *PackageRecord) { r.Interrupt = nil }), "boot-2", false},
		{"post-interrupt: already done", rec(func(r *PackageRecord) { r.Stage = post }), "boot-2", false},
		{"config: not started", rec(func(r *PackageRecord) { r.Stage = conf }), "boot-2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newNodePass(&SetFacts{Name: "s"}, NodeFacts{Name: "node-0", BootID: tc.nodeBoot}, nil, new(int), nil)
			if got := p.rebooted(tc.r); got != tc.want {
				t.Fatalf("rebooted = %v, want %v", got, tc.want)
			}
			if !tc.want || tc.r.State != v1alpha1.StateInProgress {
				return
			}
			p.rebootDone(tc.r)
			if tc.r.State != v1alpha1.StateComplete || tc.r.BootID != "" || tc.r.Message != "node rebooted (boot ID boot-1 → "+tc.nodeBoot+")" {
				t.Errorf("after rebootDone: %s %q boot ID %q", tc.r.State, tc.r.Message, tc.r.BootID)
			}
		})
	}
}

// A stage past its deadline whose pod still runs (failure.PodOutcome's stop: a node whose
// kubelet did not end it) is erroring with the deadline's reason, its pod deleted (as the Job
// controller deleted a Job's pods past its deadline), and retried as a new attempt after the
// backoff; a failed pod that has ended is kept (its termination message stays readable).
func TestStageStopDeletesPod(t *testing.T) {
	n := newRebootNode(t)
	n.pass()
	var apply string
	for name, st := range n.byName {
		if st == string(appl) {
			apply = name
		}
	}
	n.jobs[apply] = JobFact{Failed: true, Stop: true, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline (600s)"}
	d := n.pass()
	r := n.rec.Packages["driver"]
	if r.State != v1alpha1.StateErroring || r.Restarts != 1 || r.Message != "DeadlineExceeded: Pod was active on the node longer than the specified deadline (600s)" {
		t.Fatalf("record %+v", r)
	}
	if got := d.Nodes[0].DeleteJobs; len(got) != 1 || got[0] != apply {
		t.Errorf("deletes %v, want [%s]", got, apply)
	}
	n.f.Now = n.f.Now.Add(time.Hour) // past the backoff
	n.jobs[apply] = JobFact{Failed: true, Reason: "PodFailed", Message: "container stage exited 3 (Error) boom"}
	d = n.pass()
	if len(d.Nodes[0].DeleteJobs) != 0 || len(d.Nodes[0].Jobs) != 1 || d.Nodes[0].Jobs[0].Name == apply {
		t.Errorf("retry: deletes %v creates %+v", d.Nodes[0].DeleteJobs, d.Nodes[0].Jobs)
	}
}
