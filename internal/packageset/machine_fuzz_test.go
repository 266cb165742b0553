package packageset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// FuzzPlan drives the machine with random sequences of facts (spec changes, Job outcomes,
// taints, gates, pause, budget) and checks the invariants after every pass (sim.pass): never
// more nodes cordoned or in flight than the budget, no Job created twice, no interrupt without
// the cordon; here: no stage skipped (each stage Job follows its predecessor's success or
// retries it, soak checks included), once every node is complete no cordon is left; with policy rollback (ops[0]&4)
// no flow of a quarantined version starts (flows under way finish, or roll back if they fail,
// and nodes soaking on it run their soak check;
// the rollback's uninstall runs the bad version), and a
// quarantined version once recorded is never forgotten.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{9, 9, 9, 1, 1, 1, 3, 3, 200, 7, 7})
	f.Add([]byte{5, 5, 5, 5, 2, 2, 2, 8, 8, 0, 0, 4, 6})
	f.Add([]byte{17, 33, 65, 129, 3, 11, 250, 6, 2, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		if len(ops) > 64 {
			ops = ops[:64]
		}
		versions := []string{"1.0.0", "1.1.0", "0.9.0", "2.0.0"}
		mk := func(b byte) []Want {
			d := driver(versions[int(b)%4])
			tl := tool(versions[int(b>>2)%4])
			if b&16 != 0 {
				tl.Interrupt = &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"svc"}}
			}
			if b&32 != 0 && b&64 == 0 {
				tl.DependsOn = []string{"driver"}
			}
			if b&64 != 0 {
				return []Want{tl}
			}
			return []Want{d, tl}
		}
		s := newSim(t, 4, mk(0)...)
		s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(1 + int(ops[0])%3))}
		failing := map[string]bool{}
		s.fail = func(j JobSpec, _ int) bool { return failing[j.Node+"/"+string(j.Stage)] }
		if ops[0]&4 != 0 {
			s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
		}
		if ops[0]&8 != 0 {
			s.facts.Soak = time.Minute // soak checks run once op 8 (or the final run) moves the clock
		}
		pass := func() {
			before := map[string]bool{}
			for _, q := range s.facts.Quarantined {
				before[q] = true
			}
			active := map[string]bool{} // node/package@version of flows under way before the pass
			for name, n := range s.nodes {
				if n.rec != nil {
					for pkg, r := range n.rec.Packages {
						if !r.Done {
							active[name+"/"+Quarantine(pkg, r.Version)] = true
						}
					}
				}
			}
			d := s.pass()
			for _, np := range d.Nodes {
				for _, j := range np.Jobs {
					q := Quarantine(j.Package, j.Version)
					if before[q] && j.Stage != unin && !j.SoakCheck && !active[np.Name+"/"+q] {
						t.Fatalf("%s: stage %s of quarantined %s@%s started", np.Name, j.Stage, j.Package, j.Version)
					}
				}
			}
			for q := range before {
				if !strings.Contains(fmt.Sprint(d.Quarantined), q) {
					t.Fatalf("quarantine %s forgotten: %v", q, d.Quarantined)
				}
			}
			s.facts.Quarantined = d.Quarantined // what the controller writes to status
		}
		checker := newStageChecker(t)
		for _, op := range ops {
			switch op % 10 {
			case 0, 1, 2:
				s.settle()
			case 3:
				s.facts.Wants = mk(op)
			case 4:
				failing[fmt.Sprintf("node-%d/%s", op/10%4, []Stage{appl, conf, intr, post, upgr, unin}[op/40%6])] = op&1 == 0
			case 5:
				s.nodes[fmt.Sprintf("node-%d", op/10%4)].gate = Gate(op / 10 % 3)
			case 6:
				s.facts.Paused = op&16 != 0
			case 7:
				s.nodes[fmt.Sprintf("node-%d", op/10%4)].blocked = map[bool]string{true: "taint", false: ""}[op&32 != 0]
			case 8:
				s.now = s.now.Add(BackoffMax)
			case 9:
				s.facts.Budget = &v1alpha1.InterruptionBudget{Percent: ptr(int32(1 + int(op)%100))}
			}
			pass()
			checker.check(s)
		}
		// Let everything finish: no failures, no holds.
		failing = map[string]bool{}
		s.facts.Paused = false
		for _, n := range s.nodes {
			n.gate, n.blocked = GateOpen, ""
		}
		if s.facts.OnHealthFailure == v1alpha1.HealthFailureRollback {
			// A record still erroring may roll back (and quarantine) in the final passes:
			// move every package to a version no failure touched.
			for i := range s.facts.Wants {
				s.facts.Wants[i].Version, s.facts.Wants[i].Image = "3.0.0", "img:3.0.0"
			}
		}
		s.run(v1alpha1.StatusComplete)
		checker.check(s)
		for name, n := range s.nodes {
			if n.cordoned {
				t.Fatalf("%s still cordoned with every node complete", name)
			}
		}
	})
}

// stageChecker checks, for every package on every node, that each new stage Job follows the
// success of the stage before it in seed 000's flow (or retries a failed one).
type stageChecker struct {
	t    *testing.T
	seen map[string]int // node/pkg → stages already checked
}

func newStageChecker(t *testing.T) *stageChecker {
	return &stageChecker{t: t, seen: map[string]int{}}
}

func (c *stageChecker) check(s *sim) {
	for node, pkgs := range s.ran {
		for pkg, stages := range pkgs {
			key := node + "/" + pkg
			for i := c.seen[key]; i < len(stages); i++ {
				if i == 0 {
					continue
				}
				prev, cur := Stage(stages[i-1]), Stage(stages[i])
				switch cur {
				case appl:
					// a flow start, or after uninstall
				case conf:
					// after apply/upgrade, a retry, or a config-change flow start
				case post:
					if prev != conf && prev != intr && prev != post {
						c.t.Fatalf("%s: post-interrupt after %s (%v)", key, prev, stages)
					}
				case intr:
					if prev != conf && prev != intr {
						c.t.Fatalf("%s: interrupt after %s (%v)", key, prev, stages)
					}
				}
			}
			c.seen[key] = len(stages)
		}
	}
	// Stage order within a flow is also checked by the records: a package at stage X in state
	// complete must have had a successful Job for X.
	for node, n := range s.nodes {
		if n.rec == nil {
			continue
		}
		for pkg, r := range n.rec.Packages {
			if r.State != v1alpha1.StateComplete || r.Stage == intr {
				continue
			}
			jn := JobName(s.facts.Name, node, pkg, r.Flow, r.Stage, r.Restarts)
			if j, ok := n.jobs[jn]; !ok || !j.Succeeded {
				c.t.Fatalf("%s/%s complete at %s without a successful Job %s", node, pkg, r.Stage, jn)
			}
		}
	}
}
