package packageset

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// setStatus: disabled, then paused (the user asked; not while deleting), unknown for a spec
// error, else the aggregate of the selected nodes, erroring instead of waiting or unknown when
// a wanted version is quarantined (nothing will move until the spec changes).
func TestSetStatus(t *testing.T) {
	const (
		C = v1alpha1.StatusComplete
		I = v1alpha1.StatusInProgress
		W = v1alpha1.StatusWaiting
		E = v1alpha1.StatusErroring
		B = v1alpha1.StatusBlocked
		U = v1alpha1.StatusUnknown
	)
	specErr := errors.New("bad selector")
	stalled := []string{"tool@1.1.0"}
	for _, tc := range []struct {
		name     string
		f        SetFacts
		specErr  error
		statuses []Status
		stalled  []string
		want     Status
	}{
		{"no nodes: complete", SetFacts{}, nil, nil, nil, C},
		{"aggregate", SetFacts{}, nil, []Status{C, I, W}, nil, I},
		{"aggregate: waiting", SetFacts{}, nil, []Status{C, W}, nil, W},
		{"disabled, whatever the nodes", SetFacts{Disabled: true}, nil, []Status{E, I}, nil, v1alpha1.StatusDisabled},
		{"disabled before paused", SetFacts{Disabled: true, Paused: true}, nil, []Status{W}, nil, v1alpha1.StatusDisabled},
		{"disabled before a spec error", SetFacts{Disabled: true}, specErr, nil, nil, v1alpha1.StatusDisabled},
		{"disabled before a quarantine", SetFacts{Disabled: true}, nil, []Status{W}, stalled, v1alpha1.StatusDisabled},
		{"paused", SetFacts{Paused: true}, nil, []Status{C, I}, nil, v1alpha1.StatusPaused},
		{"paused before a spec error", SetFacts{Paused: true}, specErr, nil, nil, v1alpha1.StatusPaused},
		{"deleting a disabled set: the nodes' aggregate", SetFacts{Disabled: true, Deleting: true}, nil, []Status{I}, nil, I},
		{"deleting a paused set: the nodes' aggregate", SetFacts{Paused: true, Deleting: true}, nil, []Status{C}, nil, C},
		{"spec error: unknown", SetFacts{}, specErr, []Status{C, C}, nil, U},
		{"spec error while deleting: unknown", SetFacts{Deleting: true}, specErr, nil, nil, U},
		{"quarantined, nodes waiting: erroring", SetFacts{}, nil, []Status{W, W}, stalled, E},
		{"quarantined, nodes unknown: erroring", SetFacts{}, nil, []Status{W, v1alpha1.StatusPaused}, stalled, E},
		{"quarantined, a node still in progress: in progress", SetFacts{}, nil, []Status{I, W}, stalled, I},
		{"quarantined, a node blocked: blocked", SetFacts{}, nil, []Status{B, W}, stalled, B},
		{"quarantined, a node erroring: erroring", SetFacts{}, nil, []Status{E, C}, stalled, E},
		{"quarantined, no node selected: erroring, not complete", SetFacts{}, nil, nil, stalled, E},
		{"quarantined, every node complete: erroring", SetFacts{}, nil, []Status{C, C}, stalled, E},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := setStatus(tc.f, tc.specErr, tc.statuses, tc.stalled); got != tc.want {
				t.Errorf("setStatus = %s, want %s", got, tc.want)
			}
		})
	}
}

// wantCond is what a row expects of one condition: its status, reason and (when not "") a
// part of its message; "=" before the message asks for the whole of it.
type wantCond struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func (w wantCond) check(t *testing.T, c metav1.Condition) {
	t.Helper()
	msgOK := w.message == "" || strings.Contains(c.Message, w.message)
	if exact, ok := strings.CutPrefix(w.message, "="); ok {
		msgOK = c.Message == exact
	}
	if c.Status != w.status || c.Reason != w.reason || !msgOK {
		t.Errorf("%s = %s %s %q; want %s %s %q", c.Type, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
	}
}

// conditions: Ready, Reconciling, Stalled (kstatus: never Reconciling and Stalled both True),
// TaintNotTolerable and DrainBlocked, every one for the facts' generation, for each summary,
// a spec error, a deletion (and one whose uninstall fails), a set waiting on a paused set, and
// a quarantined version or config.
func TestConditions(t *testing.T) {
	const T, F = metav1.ConditionTrue, metav1.ConditionFalse
	fail := []Failure{{Node: "node-0", Package: "tool", Stage: conf, Message: "BackoffLimitExceeded: boom"}}
	cfgKey := ConfigQuarantine("tool", "1.0.0", map[string]string{"mode": "bad"})
	blocked13 := make([]string, 13)
	for i := range blocked13 {
		blocked13[i] = fmt.Sprintf("node-%02d: gpu", i)
	}
	for _, tc := range []struct {
		name                        string
		f                           SetFacts
		d                           Decision
		specErr                     error
		blocked                     []string
		ready, reconciling, stalled wantCond
		taint, drain                wantCond
	}{
		{"complete", SetFacts{}, Decision{Status: v1alpha1.StatusComplete, CompleteNodes: "3/3"}, nil, nil,
			wantCond{T, ReasonComplete, "=3/3 nodes complete"}, wantCond{F, ReasonComplete, "="}, wantCond{F, ReasonComplete, "="},
			wantCond{F, "TaintsTolerated", "="}, wantCond{F, "NoDrainBlocked", "="}},
		{"in progress: Reconciling", SetFacts{}, Decision{Status: v1alpha1.StatusInProgress, CompleteNodes: "1/3"}, nil, nil,
			wantCond{F, ReasonInProgress, "=1/3 nodes complete"}, wantCond{T, ReasonInProgress, "=1/3 nodes complete"}, wantCond{F, ReasonInProgress, "="},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"waiting: Reconciling", SetFacts{}, Decision{Status: v1alpha1.StatusWaiting, CompleteNodes: "0/3"}, nil, nil,
			wantCond{F, ReasonWaiting, "0/3"}, wantCond{T, ReasonWaiting, "0/3"}, wantCond{F, ReasonWaiting, ""},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"unknown: Reconciling, in progress", SetFacts{}, Decision{Status: v1alpha1.StatusUnknown, CompleteNodes: "0/3"}, nil, nil,
			wantCond{F, ReasonInProgress, "0/3"}, wantCond{T, ReasonInProgress, "0/3"}, wantCond{F, ReasonInProgress, ""},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"erroring: Stalled naming the failures", SetFacts{}, Decision{Status: v1alpha1.StatusErroring, CompleteNodes: "2/3", Failures: fail}, nil, nil,
			wantCond{F, ReasonErroring, "=node node-0 package tool stage config: BackoffLimitExceeded: boom"}, wantCond{F, ReasonErroring, "="},
			wantCond{T, ReasonErroring, "=node node-0 package tool stage config: BackoffLimitExceeded: boom"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"blocked: Stalled naming the taints", SetFacts{}, Decision{Status: v1alpha1.StatusBlocked, CompleteNodes: "1/2"}, nil, []string{"node-1: gpu=present:NoSchedule"},
			wantCond{F, ReasonBlocked, "=stage pods do not tolerate the taints of node-1: gpu=present:NoSchedule"}, wantCond{F, ReasonBlocked, "="},
			wantCond{T, ReasonBlocked, "=stage pods do not tolerate the taints of node-1: gpu=present:NoSchedule"},
			wantCond{T, ReasonBlocked, "=node-1: gpu=present:NoSchedule"}, wantCond{F, "NoDrainBlocked", ""}},
		{"blocked on many nodes: a dozen named", SetFacts{}, Decision{Status: v1alpha1.StatusBlocked, CompleteNodes: "0/13"}, nil, blocked13,
			wantCond{F, ReasonBlocked, "node-11: gpu; and 1 more"}, wantCond{F, ReasonBlocked, ""}, wantCond{T, ReasonBlocked, "; and 1 more"},
			wantCond{T, ReasonBlocked, "=" + strings.Join(blocked13[:12], "; ") + "; and 1 more"}, wantCond{F, "NoDrainBlocked", ""}},
		{"paused: held, neither Reconciling nor Stalled", SetFacts{Paused: true}, Decision{Status: v1alpha1.StatusPaused, CompleteNodes: "1/3"}, nil, nil,
			wantCond{F, ReasonPaused, "1/3"}, wantCond{F, ReasonPaused, "="}, wantCond{F, ReasonPaused, "="},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"disabled: held, neither Reconciling nor Stalled", SetFacts{Disabled: true}, Decision{Status: v1alpha1.StatusDisabled, CompleteNodes: "0/3"}, nil, nil,
			wantCond{F, ReasonDisabled, "0/3"}, wantCond{F, ReasonDisabled, "="}, wantCond{F, ReasonDisabled, "="},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"waiting for a paused set: not Reconciling", SetFacts{}, Decision{Status: v1alpha1.StatusWaiting, CompleteNodes: "0/2", PausedBy: []string{"node-0 (by base)", "node-1 (by base)"}}, nil, nil,
			wantCond{F, ReasonWaitingForPausedSet, "=waiting for a paused package set on node-0 (by base); node-1 (by base)"}, wantCond{F, ReasonWaitingForPausedSet, "="},
			wantCond{F, ReasonWaitingForPausedSet, "="}, wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"spec error: Stalled InvalidSpec", SetFacts{}, Decision{Status: v1alpha1.StatusUnknown}, errors.New("spec.nodeSelector: bad"), nil,
			wantCond{F, ReasonInvalidSpec, "=spec.nodeSelector: bad"}, wantCond{F, ReasonInvalidSpec, "="}, wantCond{T, ReasonInvalidSpec, "=spec.nodeSelector: bad"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"spec error before a quarantine", SetFacts{}, Decision{Status: v1alpha1.StatusUnknown, Stalled: []string{"tool@1.1.0"}}, errors.New("bad"), nil,
			wantCond{F, ReasonInvalidSpec, "=bad"}, wantCond{F, ReasonInvalidSpec, ""}, wantCond{T, ReasonInvalidSpec, "=bad"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"deleting: Reconciling", SetFacts{Deleting: true}, Decision{Status: v1alpha1.StatusInProgress}, nil, nil,
			wantCond{F, ReasonDeleting, "=uninstalling and releasing nodes"}, wantCond{T, ReasonDeleting, "=uninstalling and releasing nodes"}, wantCond{F, ReasonDeleting, "="},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"deleting, an uninstall fails: Stalled UninstallFailed", SetFacts{Deleting: true}, Decision{Status: v1alpha1.StatusErroring, Failures: fail}, nil, nil,
			wantCond{F, ReasonUninstallFailed, "deletion blocked, uninstall failing: node node-0 package tool stage config: BackoffLimitExceeded: boom; fix the package"},
			wantCond{F, ReasonUninstallFailed, "="}, wantCond{T, ReasonUninstallFailed, "set uninstallOnDelete to false"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"deleting ignores a quarantine", SetFacts{Deleting: true}, Decision{Status: v1alpha1.StatusInProgress, Stalled: []string{"tool@1.1.0"}}, nil, nil,
			wantCond{F, ReasonDeleting, ""}, wantCond{T, ReasonDeleting, ""}, wantCond{F, ReasonDeleting, ""},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"quarantined version: Stalled, change the version", SetFacts{}, Decision{Status: v1alpha1.StatusErroring, Stalled: []string{"tool@1.1.0"}, Failures: fail}, nil, nil,
			wantCond{F, ReasonVersionQuarantined, "=quarantined by a rollback, change the version to continue: tool@1.1.0; node node-0 package tool stage config: BackoffLimitExceeded: boom"},
			wantCond{F, ReasonVersionQuarantined, "="}, wantCond{T, ReasonVersionQuarantined, "change the version to continue: tool@1.1.0"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"quarantined config: change the config", SetFacts{}, Decision{Status: v1alpha1.StatusErroring, Stalled: []string{cfgKey}}, nil, nil,
			wantCond{F, ReasonVersionQuarantined, "=quarantined by a rollback, change the config (or the version) to continue: " + cfgKey},
			wantCond{F, ReasonVersionQuarantined, "="}, wantCond{T, ReasonVersionQuarantined, "change the config (or the version)"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"quarantined version and config", SetFacts{}, Decision{Status: v1alpha1.StatusErroring, Stalled: []string{"fw@2.0.0", cfgKey}}, nil, nil,
			wantCond{F, ReasonVersionQuarantined, "change the version (for a #config-<hash>: the config) to continue: fw@2.0.0, " + cfgKey},
			wantCond{F, ReasonVersionQuarantined, "="}, wantCond{T, ReasonVersionQuarantined, "change the version (for a #config-<hash>: the config)"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"quarantine while a node is still in progress: Stalled, not Reconciling", SetFacts{}, Decision{Status: v1alpha1.StatusInProgress, Stalled: []string{"tool@1.1.0"}}, nil, nil,
			wantCond{F, ReasonVersionQuarantined, "tool@1.1.0"}, wantCond{F, ReasonVersionQuarantined, "="}, wantCond{T, ReasonVersionQuarantined, "tool@1.1.0"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"deleting with a spec error: Reconciling, not Stalled (the deletion finishes)", SetFacts{Deleting: true}, Decision{Status: v1alpha1.StatusInProgress}, errors.New("spec.nodeSelector: bad"), nil,
			wantCond{F, ReasonDeleting, ""}, wantCond{T, ReasonDeleting, ""}, wantCond{F, ReasonDeleting, ""},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"paused with a quarantine: held, not Stalled", SetFacts{Paused: true}, Decision{Status: v1alpha1.StatusPaused, CompleteNodes: "1/3", Stalled: []string{"tool@1.1.0"}}, nil, nil,
			wantCond{F, ReasonPaused, ""}, wantCond{F, ReasonPaused, "="}, wantCond{F, ReasonPaused, "="},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"disabled with a stopped compartment: held, not Stalled", SetFacts{Disabled: true}, Decision{Status: v1alpha1.StatusDisabled, CompleteNodes: "0/3", Stopped: []string{"compartment a stopped"}}, nil, nil,
			wantCond{F, ReasonDisabled, ""}, wantCond{F, ReasonDisabled, "="}, wantCond{F, ReasonDisabled, "="},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"stopped compartment: Stalled DeploymentStopped", SetFacts{}, Decision{Status: v1alpha1.StatusErroring, Stopped: []string{"compartment a stopped after 3 failed batches"}, Failures: fail}, nil, nil,
			wantCond{F, ReasonDeploymentStopped, "=compartment a stopped after 3 failed batches; node node-0 package tool stage config: BackoffLimitExceeded: boom"},
			wantCond{F, ReasonDeploymentStopped, "="}, wantCond{T, ReasonDeploymentStopped, "compartment a stopped"},
			wantCond{F, "TaintsTolerated", ""}, wantCond{F, "NoDrainBlocked", ""}},
		{"drain blocked", SetFacts{}, Decision{Status: v1alpha1.StatusInProgress, CompleteNodes: "0/2",
			DrainBlockers: map[string]string{"node-1": "waiting for non-interrupt pods: ml/a", "node-0": "pod app/x: refused"}}, nil, nil,
			wantCond{F, ReasonInProgress, ""}, wantCond{T, ReasonInProgress, ""}, wantCond{F, ReasonInProgress, ""},
			wantCond{F, "TaintsTolerated", ""}, wantCond{T, ReasonDrainBlocked, "=node-0: pod app/x: refused; node-1: waiting for non-interrupt pods: ml/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Generation = 7
			cs := conditions(tc.f, tc.d, tc.specErr, tc.blocked, nil)
			types := []string{v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled, ConditionTaintNotTolerable, ConditionDrainBlocked, ConditionHealthChecksObserved}
			if len(cs) != len(types) {
				t.Fatalf("%d conditions, want %d", len(cs), len(types))
			}
			for i, w := range []wantCond{tc.ready, tc.reconciling, tc.stalled, tc.taint, tc.drain, {F, "NoObservedFailures", ""}} {
				if cs[i].Type != types[i] || cs[i].ObservedGeneration != 7 {
					t.Errorf("condition %d: %s for generation %d, want %s for 7", i, cs[i].Type, cs[i].ObservedGeneration, types[i])
				}
				w.check(t, cs[i])
			}
			if cs[1].Status == metav1.ConditionTrue && cs[2].Status == metav1.ConditionTrue {
				t.Errorf("Reconciling and Stalled both True")
			}
		})
	}
}

// drainWait: what a cordoned node's drain waits for in the facts; nothing for a node that is
// not cordoned (its pods are not looked at).
func TestDrainWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    NodeFacts
		want string
	}{
		{"not cordoned", NodeFacts{NonInterrupt: []string{"ml/a"}, Terminating: []string{"app/x"}}, ""},
		{"cordoned, nothing left", NodeFacts{Cordoned: true, Drained: true}, ""},
		{"cordoned, not drained, nothing terminating", NodeFacts{Cordoned: true}, ""},
		{"non-interrupt pods", NodeFacts{Cordoned: true, NonInterrupt: []string{"ml/a", "ml/b"}}, "waiting for non-interrupt pods: ml/a, ml/b"},
		{"non-interrupt pods before terminating ones", NodeFacts{Cordoned: true, NonInterrupt: []string{"ml/a"}, Terminating: []string{"app/x"}}, "waiting for non-interrupt pods: ml/a"},
		{"evicted pods terminating", NodeFacts{Cordoned: true, Terminating: []string{"app/x", "app/y"}}, "waiting for evicted pods to terminate: app/x, app/y"},
		{"terminating but reported drained", NodeFacts{Cordoned: true, Drained: true, Terminating: []string{"app/x"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := drainWait(tc.n); got != tc.want {
				t.Errorf("drainWait = %q, want %q", got, tc.want)
			}
		})
	}
}

// FailureMessage and listMessage name at most MaxFailuresListed items, then how many more;
// a failure without a stage (a withdrawn package) leaves the stage out.
func TestFailureMessage(t *testing.T) {
	fs := func(n int) []Failure {
		out := make([]Failure, n)
		for i := range out {
			out[i] = Failure{Node: fmt.Sprintf("n%d", i), Package: "p", Stage: appl, Message: "m"}
		}
		return out
	}
	lines := func(n int) string { // what fs(n) lists, all of them
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("node n%d package p stage apply: m", i)
		}
		return strings.Join(out, "; ")
	}
	items := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint(i)
		}
		return out
	}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"no failures", FailureMessage(nil), ""},
		{"one", FailureMessage(fs(1)), "node n0 package p stage apply: m"},
		{"two", FailureMessage(fs(2)), "node n0 package p stage apply: m; node n1 package p stage apply: m"},
		{"without a stage", FailureMessage([]Failure{{Node: "n", Package: "p", Message: "withdrawn"}}), "node n package p: withdrawn"},
		{"a dozen: all", FailureMessage(fs(12)), lines(12)},
		{"thirteen: a dozen and 1 more", FailureMessage(fs(13)), lines(12) + "; and 1 more"},
		{"list: none", listMessage(nil), ""},
		{"list: a dozen", listMessage(items(12)), "0; 1; 2; 3; 4; 5; 6; 7; 8; 9; 10; 11"},
		{"list: fourteen", listMessage(items(14)), "0; 1; 2; 3; 4; 5; 6; 7; 8; 9; 10; 11; and 2 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%q\nwant %q", tc.got, tc.want)
			}
		})
	}
}

// drainCondition: False without blockers, else True naming each node and its blocker by node
// name.
func TestDrainCondition(t *testing.T) {
	for _, tc := range []struct {
		name     string
		blockers map[string]string
		want     wantCond
	}{
		{"none", nil, wantCond{metav1.ConditionFalse, "NoDrainBlocked", "="}},
		{"empty", map[string]string{}, wantCond{metav1.ConditionFalse, "NoDrainBlocked", "="}},
		{"by node name", map[string]string{"b": "x", "a": "y"}, wantCond{metav1.ConditionTrue, ReasonDrainBlocked, "=a: y; b: x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := drainCondition(3, tc.blockers)
			if c.Type != ConditionDrainBlocked || c.ObservedGeneration != 3 {
				t.Errorf("%+v", c)
			}
			tc.want.check(t, c)
		})
	}
}

// conditions with nodes waiting for taints a controller removes (TaintHold's waitFor): never
// Stalled; Ready and Reconciling name the taints, with the reason WaitingForTaint while nothing
// else is at work (waiting, unknown) and InProgress while stages run elsewhere;
// TaintNotTolerable True with reason WaitingForTaint (TaintNotTolerable when a node is also
// blocked, and then the set is Stalled on the blocked node alone); erroring stays Stalled.
func TestConditionsWaitingForTaint(t *testing.T) {
	const T, F = metav1.ConditionTrue, metav1.ConditionFalse
	wait := []string{"node-1: example.com/driver=installing:NoSchedule"}
	words := "waiting for the removal of taints the stage pods do not tolerate: node-1: example.com/driver=installing:NoSchedule"
	fail := []Failure{{Node: "node-0", Package: "tool", Stage: conf, Message: "BackoffLimitExceeded: boom"}}
	for _, tc := range []struct {
		name                        string
		d                           Decision
		blocked                     []string
		ready, reconciling, stalled wantCond
		taint                       wantCond
	}{
		{"waiting: Reconciling WaitingForTaint", Decision{Status: v1alpha1.StatusWaiting, CompleteNodes: "1/2"}, nil,
			wantCond{F, ReasonWaitingForTaint, "=1/2 nodes complete; " + words}, wantCond{T, ReasonWaitingForTaint, "=1/2 nodes complete; " + words},
			wantCond{F, ReasonWaitingForTaint, "="}, wantCond{T, ReasonWaitingForTaint, "=waiting for removal: node-1: example.com/driver=installing:NoSchedule"}},
		{"unknown (a mix): Reconciling WaitingForTaint", Decision{Status: v1alpha1.StatusUnknown, CompleteNodes: "0/2"}, nil,
			wantCond{F, ReasonWaitingForTaint, words}, wantCond{T, ReasonWaitingForTaint, words}, wantCond{F, ReasonWaitingForTaint, "="},
			wantCond{T, ReasonWaitingForTaint, ""}},
		{"in progress elsewhere: InProgress, the taints named", Decision{Status: v1alpha1.StatusInProgress, CompleteNodes: "0/2"}, nil,
			wantCond{F, ReasonInProgress, words}, wantCond{T, ReasonInProgress, words}, wantCond{F, ReasonInProgress, "="},
			wantCond{T, ReasonWaitingForTaint, ""}},
		{"another node blocked: Stalled on it", Decision{Status: v1alpha1.StatusBlocked, CompleteNodes: "0/2"}, []string{"node-0: gpu=present:NoSchedule"},
			wantCond{F, ReasonBlocked, "=stage pods do not tolerate the taints of node-0: gpu=present:NoSchedule"}, wantCond{F, ReasonBlocked, "="},
			wantCond{T, ReasonBlocked, "node-0: gpu=present:NoSchedule"},
			wantCond{T, ReasonBlocked, "=node-0: gpu=present:NoSchedule; waiting for removal: node-1: example.com/driver=installing:NoSchedule"}},
		{"another node erroring: Stalled on the failure", Decision{Status: v1alpha1.StatusErroring, CompleteNodes: "0/2", Failures: fail}, nil,
			wantCond{F, ReasonErroring, "=node node-0 package tool stage config: BackoffLimitExceeded: boom"}, wantCond{F, ReasonErroring, "="},
			wantCond{T, ReasonErroring, "BackoffLimitExceeded"}, wantCond{T, ReasonWaitingForTaint, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := conditions(SetFacts{Generation: 3}, tc.d, nil, tc.blocked, wait)
			for i, w := range []wantCond{tc.ready, tc.reconciling, tc.stalled, tc.taint} {
				w.check(t, cs[i])
			}
		})
	}
}
