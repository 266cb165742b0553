package executor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// was spells out the conditions the machine writes for a phase (with reason), as the memory
// of the next pass.
func was(phase Phase, reason string, rolledBack bool) []metav1.Condition {
	if phase == "" {
		return nil
	}
	return conditions(Facts{Generation: 1}, state{phase: phase, reason: reason, message: "m", rolledBack: rolledBack}, inputs{perfOK: true, perfReason: ReasonPerformersRunning}, true)
}

// complete returns a Deployment fully rolled out at rev with n replicas.
func complete(rev string, n int32) *Deployment {
	return &Deployment{Revision: rev, Image: "img:" + rev, Generation: 3, ObservedGeneration: 3, Replicas: n,
		StatusReplicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Progressing: DeploymentCondition{Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}
}

// progressing returns a Deployment rolling out rev: 1 of n new replicas, not ready.
func progressing(rev string, n int32) *Deployment {
	d := complete(rev, n)
	d.UpdatedReplicas, d.ReadyReplicas, d.AvailableReplicas, d.UnavailableReplicas, d.StatusReplicas = 1, n, n, 1, n+1
	d.Progressing = DeploymentCondition{Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated", Message: `ReplicaSet "x" is progressing.`}
	return d
}

// deadline returns a Deployment whose rollout of rev exceeded its progress deadline.
func deadline(rev string, n int32) *Deployment {
	d := progressing(rev, n)
	d.Progressing = DeploymentCondition{Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "executor-x-abc" has timed out progressing.`}
	return d
}

func running(name string) PerformerRef {
	return PerformerRef{Name: name, Found: true, Phase: v1alpha1.PerformerRunning, Current: true, Endpoint: "performer-" + name + ".ns.svc.cluster.local:9090"}
}

// base is a healthy Executor with its finalizer, two Running performers, its ConfigMap, and
// desired revision r2 with 2 replicas.
func base() Facts {
	return Facts{
		Generation: 1, HasFinalizer: true, RollbackEnabled: true,
		Performers:      []PerformerRef{running("gpu"), running("tee")},
		DesiredRevision: "r2", DesiredReplicas: 2,
		ConfigMap: ConfigMap{Exists: true}, LastGoodAvailable: true,
	}
}

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type row struct {
	name string
	// hourglass names the transition in Hourglass's terms when the row is one of its edges
	// ("lifecycle:" its HourglassExecutor Lifecycle, "deployment:" its deployment state machine).
	hourglass  string
	prev       Phase
	prevReason string
	prevRolled bool
	facts      func(f *Facts)
	want       Phase
	actions    []Action
	lastGood   string
	failedRev  string
	// stalled, when set, is the wanted Stalled=True reason; msg are substrings of the active
	// condition's message.
	stalled string
	msg     []string
	// perf is the wanted PerformersReady reason (when set).
	perf string
}

var rows = []row{
	{name: "no status, no finalizer → Pending", hourglass: "lifecycle: [*] → Pending",
		facts: func(f *Facts) { f.HasFinalizer = false; f.Deployment = nil },
		want:  v1alpha1.ExecutorPending, actions: []Action{ActionAddFinalizer}},
	{name: "Pending → Creating: ConfigMap then Deployment", hourglass: "lifecycle: Pending → Creating → ConfigMapCreation → DeploymentCreation; deployment: PENDING → INSTALLING",
		prev: v1alpha1.ExecutorPending, prevReason: ReasonPending,
		facts: func(f *Facts) { f.ConfigMap.Exists = false },
		want:  v1alpha1.ExecutorCreating, actions: []Action{ActionEnsureConfigMap, ActionApplyDeployment}},
	{name: "Creating → Creating while pods come up", hourglass: "lifecycle: PodScheduling → PodCreation",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) { f.Deployment = progressing("r2", 2) },
		want:  v1alpha1.ExecutorCreating, msg: []string{"1/2 replicas updated"}},
	{name: "Creating → Running", hourglass: "lifecycle: PodCreation → Running; deployment: INSTALLING → INSTALLED",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) { f.Deployment = complete("r2", 2) },
		want:  v1alpha1.ExecutorRunning, actions: []Action{ActionPruneConfigMaps}, lastGood: "r2", msg: []string{"revision r2", "2/2 replicas ready"}},
	{name: "Creating → Failed on the progress deadline (no previous revision)", hourglass: "lifecycle: Creating → Failed; deployment: INSTALLING → FAILED",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) { f.Deployment = deadline("r2", 2) },
		want:  v1alpha1.ExecutorFailed, stalled: ReasonProgressDeadlineExceeded, msg: []string{"has timed out progressing"}},
	{name: "Running → Updating on a spec change", hourglass: "lifecycle: Running → Updating → RollingUpdate; deployment: INSTALLED → UPDATING",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) { f.LastGoodRevision = "r1"; f.Deployment = complete("r1", 2) },
		want:  v1alpha1.ExecutorUpdating, actions: []Action{ActionApplyDeployment}, lastGood: "r1"},
	{name: "Updating → Updating while the new ReplicaSet rolls",
		prev: v1alpha1.ExecutorUpdating, prevReason: ReasonUpdateInProgress,
		facts: func(f *Facts) { f.LastGoodRevision = "r1"; f.Deployment = progressing("r2", 2) },
		want:  v1alpha1.ExecutorUpdating, lastGood: "r1"},
	{name: "Updating → Running", hourglass: "lifecycle: RollingUpdate → Running; deployment: UPDATING → INSTALLED",
		prev: v1alpha1.ExecutorUpdating, prevReason: ReasonUpdateInProgress,
		facts: func(f *Facts) { f.LastGoodRevision = "r1"; f.Deployment = complete("r2", 2) },
		want:  v1alpha1.ExecutorRunning, actions: []Action{ActionPruneConfigMaps}, lastGood: "r2"},
	{name: "Updating → RollingBack on the progress deadline", hourglass: "deployment: UPDATING → FAILED → ROLLINGBACK (one observation)",
		prev: v1alpha1.ExecutorUpdating, prevReason: ReasonUpdateInProgress,
		facts: func(f *Facts) { f.LastGoodRevision = "r1"; f.Deployment = deadline("r2", 2) },
		want:  v1alpha1.ExecutorRollingBack, actions: []Action{ActionRollback}, lastGood: "r1", failedRev: "r2",
		msg: []string{"update to revision r2 failed", "ProgressDeadlineExceeded", "rolling back to revision r1"}},
	{name: "Updating → Failed when rollback is disabled", hourglass: "lifecycle: Updating → Failed; deployment: UPDATING → FAILED",
		prev: v1alpha1.ExecutorUpdating, prevReason: ReasonUpdateInProgress,
		facts: func(f *Facts) { f.LastGoodRevision = "r1"; f.RollbackEnabled = false; f.Deployment = deadline("r2", 2) },
		want:  v1alpha1.ExecutorFailed, lastGood: "r1", stalled: ReasonProgressDeadlineExceeded, msg: []string{"rollback is disabled"}},
	{name: "Updating → Failed when the last good revision is gone",
		prev: v1alpha1.ExecutorUpdating, prevReason: ReasonUpdateInProgress,
		facts: func(f *Facts) {
			f.LastGoodRevision = "r1"
			f.LastGoodAvailable = false
			f.Deployment = deadline("r2", 2)
		},
		want: v1alpha1.ExecutorFailed, lastGood: "r1", stalled: ReasonProgressDeadlineExceeded, msg: []string{"no longer kept"}},
	{name: "Failed → RollingBack once rollback is enabled", hourglass: "deployment: FAILED → ROLLINGBACK",
		prev: v1alpha1.ExecutorFailed, prevReason: ReasonProgressDeadlineExceeded,
		facts: func(f *Facts) { f.Generation = 2; f.LastGoodRevision = "r1"; f.Deployment = deadline("r2", 2) },
		want:  v1alpha1.ExecutorRollingBack, actions: []Action{ActionRollback}, lastGood: "r1", failedRev: "r2"},
	{name: "RollingBack → RollingBack while the old ReplicaSet scales back",
		prev: v1alpha1.ExecutorRollingBack, prevReason: ReasonRollingBack,
		facts: func(f *Facts) { f.LastGoodRevision, f.FailedRevision = "r1", "r2"; f.Deployment = progressing("r1", 2) },
		want:  v1alpha1.ExecutorRollingBack, lastGood: "r1", failedRev: "r2"},
	{name: "RollingBack → Running on the previous revision, rollback named", hourglass: "deployment: ROLLINGBACK → INSTALLED (previous version)",
		prev: v1alpha1.ExecutorRollingBack, prevReason: ReasonRollingBack,
		facts: func(f *Facts) { f.LastGoodRevision, f.FailedRevision = "r1", "r2"; f.Deployment = complete("r1", 2) },
		want:  v1alpha1.ExecutorRunning, lastGood: "r1", failedRev: "r2", stalled: ReasonRolledBack,
		msg: []string{"update to revision r2 failed and was rolled back", "revision r1 (image img:r1) is running"}},
	{name: "RollingBack → Failed when the rollback fails too",
		prev: v1alpha1.ExecutorRollingBack, prevReason: ReasonRollingBack,
		facts: func(f *Facts) { f.LastGoodRevision, f.FailedRevision = "r1", "r2"; f.Deployment = deadline("r1", 2) },
		want:  v1alpha1.ExecutorFailed, lastGood: "r1", failedRev: "r2", stalled: ReasonRollbackFailed},
	{name: "rolled back Running stays: the failed revision is not retried",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonRolledBack, prevRolled: true,
		facts: func(f *Facts) { f.LastGoodRevision, f.FailedRevision = "r1", "r2"; f.Deployment = complete("r1", 2) },
		want:  v1alpha1.ExecutorRunning, lastGood: "r1", failedRev: "r2", stalled: ReasonRolledBack},
	{name: "rolled back Running → RollingBack when someone re-applies the failed template",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonRolledBack, prevRolled: true,
		facts: func(f *Facts) { f.LastGoodRevision, f.FailedRevision = "r1", "r2"; f.Deployment = progressing("r2", 2) },
		want:  v1alpha1.ExecutorRollingBack, actions: []Action{ActionRollback}, lastGood: "r1", failedRev: "r2"},
	{name: "rolled back Running → Updating on a new spec (failed revision forgotten)",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonRolledBack, prevRolled: true,
		facts: func(f *Facts) {
			f.LastGoodRevision, f.FailedRevision, f.DesiredRevision = "r1", "r2", "r3"
			f.Deployment = complete("r1", 2)
		},
		want: v1alpha1.ExecutorUpdating, actions: []Action{ActionApplyDeployment}, lastGood: "r1"},
	{name: "rolled back Running scales without leaving the previous revision",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonRolledBack, prevRolled: true,
		facts: func(f *Facts) {
			f.LastGoodRevision, f.FailedRevision, f.DesiredReplicas = "r1", "r2", 3
			f.Deployment = complete("r1", 2)
		},
		want: v1alpha1.ExecutorRollingBack, actions: []Action{ActionScaleDeployment}, lastGood: "r1", failedRev: "r2"},
	{name: "Running → Scaling on a replica change", hourglass: "lifecycle: Running → Scaling",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) { f.LastGoodRevision, f.DesiredReplicas = "r2", 3; f.Deployment = complete("r2", 2) },
		want:  v1alpha1.ExecutorScaling, actions: []Action{ActionApplyDeployment}, lastGood: "r2"},
	{name: "Scaling → Scaling while the new pod comes up",
		prev: v1alpha1.ExecutorScaling, prevReason: ReasonScaling,
		facts: func(f *Facts) {
			f.LastGoodRevision, f.DesiredReplicas = "r2", 3
			f.Deployment = complete("r2", 3)
			f.Deployment.ReadyReplicas, f.Deployment.AvailableReplicas, f.Deployment.UnavailableReplicas = 2, 2, 1
		},
		want: v1alpha1.ExecutorScaling, lastGood: "r2"},
	{name: "Scaling → Running", hourglass: "lifecycle: Scaling → Running",
		prev: v1alpha1.ExecutorScaling, prevReason: ReasonScaling,
		facts: func(f *Facts) { f.LastGoodRevision, f.DesiredReplicas = "r2", 3; f.Deployment = complete("r2", 3) },
		want:  v1alpha1.ExecutorRunning, actions: []Action{ActionPruneConfigMaps}, lastGood: "r2"},
	{name: "Scaling → Failed on a replica failure", hourglass: "lifecycle: Scaling → Failed",
		prev: v1alpha1.ExecutorScaling, prevReason: ReasonScaling,
		facts: func(f *Facts) {
			f.LastGoodRevision, f.DesiredReplicas = "r2", 3
			f.Deployment = complete("r2", 3)
			f.Deployment.ReadyReplicas = 2
			f.Deployment.ReplicaFailure = DeploymentCondition{Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: `pods "x" is forbidden: exceeded quota`}
		},
		want: v1alpha1.ExecutorFailed, lastGood: "r2", stalled: ReasonReplicaFailure, msg: []string{"exceeded quota"}},
	{name: "Failed → Creating once the missing performer appears", hourglass: "lifecycle: Failed → Creating (retry)",
		prev: v1alpha1.ExecutorFailed, prevReason: ReasonPerformerNotFound,
		want: v1alpha1.ExecutorCreating, actions: []Action{ActionApplyDeployment}},
	{name: "a missing performer fails the executor by name",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) { f.Performers[1] = PerformerRef{Name: "tee"} },
		want:  v1alpha1.ExecutorFailed, stalled: ReasonPerformerNotFound, perf: ReasonPerformerNotFound,
		msg: []string{`performer "tee" not found`}},
	{name: "Running → Failed when a performer goes away",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) {
			f.LastGoodRevision = "r2"
			f.Deployment = complete("r2", 2)
			f.Performers[0] = PerformerRef{Name: "gpu"}
		},
		want: v1alpha1.ExecutorFailed, lastGood: "r2", stalled: ReasonPerformerNotFound, msg: []string{`"gpu"`}},
	{name: "a Failed performer fails the executor with its reason",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) {
			f.Performers[0] = PerformerRef{Name: "gpu", Found: true, Current: true, Phase: v1alpha1.PerformerFailed, Reason: "HardwareUnavailable", Message: "0/7 nodes are available"}
		},
		want: v1alpha1.ExecutorFailed, stalled: ReasonPerformerFailed, perf: ReasonPerformerFailed, msg: []string{`performer "gpu" is Failed: HardwareUnavailable: 0/7 nodes`}},
	{name: "a performer not Running yet: wait, not Ready",
		prev: v1alpha1.ExecutorPending, prevReason: ReasonPending,
		facts: func(f *Facts) {
			f.DesiredRevision = ""
			f.Performers[0] = PerformerRef{Name: "gpu", Found: true, Current: true, Phase: v1alpha1.PerformerScheduling}
		},
		want: v1alpha1.ExecutorCreating, perf: ReasonPerformerNotReady, msg: []string{"gpu (Scheduling)"}},
	{name: "a selector that matches nothing fails",
		prev: v1alpha1.ExecutorPending, prevReason: ReasonPending,
		facts: func(f *Facts) { f.BySelector = true; f.Performers = nil; f.DesiredRevision = "" },
		want:  v1alpha1.ExecutorFailed, stalled: ReasonNoPerformersSelected, perf: ReasonNoPerformersSelected},
	{name: "a missing key Secret fails without rolling out",
		prev: v1alpha1.ExecutorPending, prevReason: ReasonPending,
		facts: func(f *Facts) { f.MissingRefs = []string{"Secret ns/operator-keys not found"} },
		want:  v1alpha1.ExecutorFailed, stalled: ReasonSecretNotFound, msg: []string{`spec.operatorKeys: Secret ns/operator-keys not found`}},
	{name: "a key missing from the key Secret fails without rolling out",
		prev: v1alpha1.ExecutorPending, prevReason: ReasonPending,
		facts: func(f *Facts) { f.MissingRefs = []string{"Secret ns/operator-keys has no key bls"} },
		want:  v1alpha1.ExecutorFailed, stalled: ReasonSecretNotFound, msg: []string{`Secret ns/operator-keys has no key bls`}},
	{name: "Creating → Failed: the Deployment write was rejected; withheld until RetryAt",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) {
			f.Now = t0
			f.Rejection = &failure.Rejection{Action: string(ActionApplyDeployment), Kind: "Deployment", Name: "ns/executor-x", Reason: "Invalid",
				Message: `Deployment.apps "executor-x" is invalid: spec.template.spec.nodeSelector: Invalid value: "bad key!"`, Generation: 1, RetryAt: t0.Add(10 * time.Second)}
		},
		want: v1alpha1.ExecutorFailed, stalled: ReasonRejected, msg: []string{`writing Deployment ns/executor-x was rejected (Invalid): Deployment.apps "executor-x" is invalid: spec.template.spec.nodeSelector`}},
	{name: "Failed (rejected) → Failed: RetryAt passed, the Deployment write is tried again",
		prev: v1alpha1.ExecutorFailed, prevReason: ReasonRejected,
		facts: func(f *Facts) {
			f.Now = t0
			f.Rejection = &failure.Rejection{Action: string(ActionApplyDeployment), Kind: "Deployment", Name: "ns/executor-x", Reason: "Invalid", Message: "m", Generation: 1, RetryAt: t0}
		},
		want: v1alpha1.ExecutorFailed, stalled: ReasonRejected, actions: []Action{ActionApplyDeployment}},
	{name: "Creating: the pods' image pull failure is in the progress message",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) {
			f.Deployment = progressing("r2", 2)
			f.PodProblems = []string{`pod executor-x-1: container executor: ErrImagePull: pull access denied`}
		},
		want: v1alpha1.ExecutorCreating, msg: []string{"1/2 replicas updated", "; pod executor-x-1: container executor: ErrImagePull: pull access denied"}},
	{name: "Creating → Failed on the progress deadline says why the pods do not run",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) {
			f.Deployment = deadline("r2", 2)
			f.PodProblems = []string{`pod executor-x-1: container executor: CrashLoopBackOff: back-off 10s; last terminated: Error (exit code 1)`}
		},
		want: v1alpha1.ExecutorFailed, stalled: ReasonProgressDeadlineExceeded, msg: []string{"has timed out progressing.; pod executor-x-1: container executor: CrashLoopBackOff"}},
	{name: "a foreign Deployment is an ownership conflict",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) { f.Deployment = complete("r2", 2); f.Deployment.Foreign = true },
		want:  v1alpha1.ExecutorFailed, stalled: ReasonOwnershipConflict},
	{name: "Running → Creating when the Deployment is lost",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) { f.LastGoodRevision = "r2" },
		want:  v1alpha1.ExecutorCreating, actions: []Action{ActionApplyDeployment}, lastGood: "r2"},
	{name: "Running → Terminating", hourglass: "lifecycle: Running → Terminating → Cleanup; deployment: ANY → DELETING",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) { f.Deleting = true; f.LastGoodRevision = "r2"; f.Deployment = complete("r2", 2) },
		want:  v1alpha1.ExecutorTerminating, actions: []Action{ActionDeleteDeployment, ActionDeleteConfigMaps}, lastGood: "r2"},
	{name: "Failed → Terminating", hourglass: "deployment: ANY → DELETING",
		prev: v1alpha1.ExecutorFailed, prevReason: ReasonPerformerNotFound,
		facts: func(f *Facts) { f.Deleting = true; f.ConfigMap.Exists = false },
		want:  v1alpha1.ExecutorTerminating, actions: []Action{ActionDeleteConfigMaps, ActionRemoveFinalizer}},
	{name: "Terminating → finalizer removed", hourglass: "deployment: DELETING → DELETED",
		prev: v1alpha1.ExecutorTerminating, prevReason: ReasonTerminating,
		facts: func(f *Facts) { f.Deleting = true; f.ConfigMap.Exists = false },
		want:  v1alpha1.ExecutorTerminating, actions: []Action{ActionDeleteConfigMaps, ActionRemoveFinalizer}},
	{name: "Terminating waits for the Deployment to go",
		prev: v1alpha1.ExecutorTerminating, prevReason: ReasonTerminating,
		facts: func(f *Facts) { f.Deleting = true; f.Deployment = complete("r2", 2); f.Deployment.Deleting = true },
		want:  v1alpha1.ExecutorTerminating, actions: []Action{ActionDeleteConfigMaps}},
	// spec.managePerformers (Hourglass's executor creating Performers itself).
	{name: "managePerformers: access before the Deployment",
		prev: v1alpha1.ExecutorPending, prevReason: ReasonPending,
		facts: func(f *Facts) { f.ManagePerformers = true; f.ConfigMap.Exists = false },
		want:  v1alpha1.ExecutorCreating, actions: []Action{ActionEnsureAccess, ActionEnsureConfigMap, ActionApplyDeployment}},
	{name: "managePerformers: access drifted (Role edited) is restored while Running",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) {
			f.ManagePerformers, f.Access = true, Access{Exists: true}
			f.LastGoodRevision, f.Deployment = "r2", complete("r2", 2)
		},
		want: v1alpha1.ExecutorRunning, actions: []Action{ActionEnsureAccess, ActionPruneConfigMaps}, lastGood: "r2"},
	{name: "managePerformers: a foreign ServiceAccount/Role of that name fails the executor",
		prev: v1alpha1.ExecutorCreating, prevReason: ReasonCreating,
		facts: func(f *Facts) { f.ManagePerformers, f.Access = true, Access{Exists: true, Foreign: true} },
		want:  v1alpha1.ExecutorFailed, stalled: ReasonOwnershipConflict, msg: []string{"spec.managePerformers", "not controlled by this Executor"}},
	{name: "managePerformers turned off: access revoked, created performers deleted",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) {
			f.Access, f.ManagedPerformers = Access{Exists: true, UpToDate: true}, 2
			f.LastGoodRevision, f.Deployment = "r2", complete("r2", 2)
		},
		want: v1alpha1.ExecutorRunning, actions: []Action{ActionDeleteAccess, ActionDeleteManagedPerformers, ActionPruneConfigMaps}, lastGood: "r2"},
	{name: "managePerformers turned off: access kept until the Deployment no longer creates pods from the template that runs as it",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) {
			f.Access = Access{Exists: true, UpToDate: true}
			f.LastGoodRevision, f.Deployment = "r1", complete("r1", 2)
		},
		want: v1alpha1.ExecutorUpdating, actions: []Action{ActionApplyDeployment}, lastGood: "r1"},
	{name: "without managePerformers a foreign namesake ServiceAccount is none of our business",
		prev: v1alpha1.ExecutorRunning, prevReason: ReasonAvailable,
		facts: func(f *Facts) {
			f.Access = Access{Exists: true, Foreign: true}
			f.LastGoodRevision, f.Deployment = "r2", complete("r2", 2)
		},
		want: v1alpha1.ExecutorRunning, actions: []Action{ActionPruneConfigMaps}, lastGood: "r2"},
	{name: "Terminating deletes the performers the executor created and waits for them",
		prev: v1alpha1.ExecutorTerminating, prevReason: ReasonTerminating,
		facts: func(f *Facts) {
			f.Deleting = true
			f.ConfigMap.Exists = false
			f.ManagePerformers = true
			f.ManagedPerformers = 3
		},
		want: v1alpha1.ExecutorTerminating, actions: []Action{ActionDeleteConfigMaps, ActionDeleteManagedPerformers}, msg: []string{"3 performer(s) the executor created"}},
}

func TestDecideTable(t *testing.T) {
	covered := map[[2]Phase]bool{}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			f := base()
			f.Conditions = was(r.prev, r.prevReason, r.prevRolled)
			if r.facts != nil {
				r.facts(&f)
			}
			d, err := Decide(f)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			covered[[2]Phase{r.prev, d.Phase}] = true
			if d.Phase != r.want {
				t.Errorf("phase %s, want %s (%s)", d.Phase, r.want, describe(d))
			}
			if !slices.Equal(d.Actions, r.actions) {
				t.Errorf("actions %v, want %v", d.Actions, r.actions)
			}
			if d.LastGoodRevision != r.lastGood || d.FailedRevision != r.failedRev {
				t.Errorf("lastGood %q failed %q, want %q %q", d.LastGoodRevision, d.FailedRevision, r.lastGood, r.failedRev)
			}
			st := cond(d.Conditions, v1alpha1.ConditionStalled)
			if r.stalled != "" && (st.Status != metav1.ConditionTrue || st.Reason != r.stalled) {
				t.Errorf("Stalled = %+v, want True/%s", st, r.stalled)
			}
			if r.stalled == "" && st.Status == metav1.ConditionTrue {
				t.Errorf("Stalled = %+v, want False", st)
			}
			active := activeMessage(d.Conditions)
			for _, m := range r.msg {
				if !strings.Contains(active, m) {
					t.Errorf("message %q does not contain %q", active, m)
				}
			}
			if r.perf != "" {
				if c := cond(d.Conditions, ConditionPerformersReady); c.Reason != r.perf || c.Status != metav1.ConditionFalse {
					t.Errorf("PerformersReady = %+v, want False/%s", c, r.perf)
				}
			}
			invariant.Check(t, invariants, f, d)
		})
	}
	// Every edge Hourglass draws (mapped onto our phases) is exercised by some row.
	for _, e := range [][2]Phase{
		{"", v1alpha1.ExecutorPending},
		{v1alpha1.ExecutorPending, v1alpha1.ExecutorCreating},
		{v1alpha1.ExecutorCreating, v1alpha1.ExecutorRunning}, {v1alpha1.ExecutorCreating, v1alpha1.ExecutorFailed},
		{v1alpha1.ExecutorRunning, v1alpha1.ExecutorUpdating}, {v1alpha1.ExecutorRunning, v1alpha1.ExecutorScaling},
		{v1alpha1.ExecutorRunning, v1alpha1.ExecutorTerminating},
		{v1alpha1.ExecutorUpdating, v1alpha1.ExecutorRunning}, {v1alpha1.ExecutorUpdating, v1alpha1.ExecutorFailed},
		{v1alpha1.ExecutorUpdating, v1alpha1.ExecutorRollingBack},
		{v1alpha1.ExecutorScaling, v1alpha1.ExecutorRunning}, {v1alpha1.ExecutorScaling, v1alpha1.ExecutorFailed},
		{v1alpha1.ExecutorFailed, v1alpha1.ExecutorCreating}, {v1alpha1.ExecutorFailed, v1alpha1.ExecutorRollingBack},
		{v1alpha1.ExecutorFailed, v1alpha1.ExecutorTerminating},
		{v1alpha1.ExecutorRollingBack, v1alpha1.ExecutorRunning},
	} {
		if !covered[e] {
			t.Errorf("Hourglass transition %s → %s has no row", e[0], e[1])
		}
	}
}

// Illegal transitions are rejected with a typed error, both by CheckTransition and by Decide
// given conditions this machine would never have written before.
func TestIllegalTransitions(t *testing.T) {
	for _, e := range [][2]Phase{
		{v1alpha1.ExecutorRunning, v1alpha1.ExecutorPending},
		{v1alpha1.ExecutorFailed, v1alpha1.ExecutorPending},
		{v1alpha1.ExecutorTerminating, v1alpha1.ExecutorRunning},
		{v1alpha1.ExecutorTerminating, v1alpha1.ExecutorCreating},
		{v1alpha1.ExecutorPending, v1alpha1.ExecutorRollingBack},
		{v1alpha1.ExecutorPending, v1alpha1.ExecutorUpdating},
	} {
		var te *lifecycle.TransitionError
		if err := Transitions.Check(e[0], e[1]); !errors.As(err, &te) || te.From != string(e[0]) || te.To != string(e[1]) {
			t.Errorf("Transitions.Check(%s, %s) = %v, want *lifecycle.TransitionError", e[0], e[1], err)
		}
	}
	// Terminating conditions on an object that is not being deleted (someone rewrote status).
	f := base()
	f.Conditions = was(v1alpha1.ExecutorTerminating, ReasonTerminating, false)
	f.Deployment = complete("r2", 2)
	var te *lifecycle.TransitionError
	if _, err := Decide(f); !errors.As(err, &te) || te.To != string(v1alpha1.ExecutorRunning) {
		t.Errorf("Decide after Terminating = %v, want a *lifecycle.TransitionError to Running", err)
	}
	// Running conditions with no finalizer and no deployment go to Creating, never Pending.
	f = base()
	f.HasFinalizer = false
	f.Conditions = was(v1alpha1.ExecutorRunning, ReasonAvailable, false)
	d, err := Decide(f)
	if err != nil || d.Phase == v1alpha1.ExecutorPending || d.Actions[0] != ActionAddFinalizer {
		t.Errorf("Decide = %s %v %v", d.Phase, d.Actions, err)
	}
}

// Events: on phase changes, Warning for Failed, RollingBack and a completed rollback; none for
// a steady state.
func TestEvents(t *testing.T) {
	f := base()
	f.Conditions = was(v1alpha1.ExecutorRunning, ReasonAvailable, false)
	f.LastGoodRevision = "r2"
	f.Deployment = complete("r2", 2)
	d, _ := Decide(f)
	f.Conditions = d.Conditions
	if d2, _ := Decide(f); d2.Event != nil {
		t.Errorf("steady Running emitted %+v", d2.Event)
	}
	f = base()
	f.Conditions = was(v1alpha1.ExecutorRollingBack, ReasonRollingBack, false)
	f.LastGoodRevision, f.FailedRevision = "r1", "r2"
	f.Deployment = complete("r1", 2)
	d, _ = Decide(f)
	if d.Event == nil || d.Event.Type != corev1.EventTypeWarning || d.Event.Reason != ReasonRolledBack {
		t.Errorf("rollback done: event %+v", d.Event)
	}
}

func cond(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// activeMessage is the message of the True kstatus condition (Stalled first).
func activeMessage(conds []metav1.Condition) string {
	for _, typ := range []string{v1alpha1.ConditionStalled, v1alpha1.ConditionReady, v1alpha1.ConditionReconciling} {
		if c := cond(conds, typ); c.Status == metav1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}

func describe(d Decision) string {
	var b strings.Builder
	b.WriteString(string(d.Phase))
	for _, c := range d.Conditions {
		b.WriteString("; " + c.Type + "=" + string(c.Status) + " " + c.Reason + ": " + c.Message)
	}
	return b.String()
}

// invariants are checked in order: later ones rely on the conditions being the five expected.
var invariants = []invariant.Of[Facts, Decision]{
	{Name: "phase in the enum", Fatal: true, Check: invPhaseInEnum},
	{Name: "phase of conditions", Fatal: true, Check: invPhaseOfConditions},
	{Name: "conditions in order", Fatal: true, Check: invConditionsInOrder},
	{Name: "one of Ready/Reconciling/Stalled", Fatal: true, Check: invOneActive},
	{Name: "Ready needs performers and config", Fatal: true, Check: invReadyInputs},
	{Name: "Ready needs a last good revision", Fatal: true, Check: invReadyLastGood},
	{Name: "legal transition", Fatal: true, Check: invTransition},
	{Name: "actions make sense", Fatal: true, Check: invActions},
	{Name: "finalizer removed last", Fatal: true, Check: invFinalizerLast},
	{Name: "failed is not good", Fatal: true, Check: invFailedNotGood},
}

var conditionTypes = []string{v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled, ConditionConfigReady, ConditionPerformersReady}

func isTrue(d Decision, typ string) bool {
	return cond(d.Conditions, typ).Status == metav1.ConditionTrue
}

func invPhaseInEnum(_ Facts, d Decision) error {
	if !slices.Contains(AllPhases, d.Phase) {
		return fmt.Errorf("phase %q outside the enum", d.Phase)
	}
	return nil
}

func invPhaseOfConditions(_ Facts, d Decision) error {
	if d.Phase != Phases.Of(d.Conditions) {
		return fmt.Errorf("phase %s != Phases.Of(conditions) %s", d.Phase, Phases.Of(d.Conditions))
	}
	return nil
}

func invConditionsInOrder(f Facts, d Decision) error {
	if len(d.Conditions) != len(conditionTypes) {
		return fmt.Errorf("conditions %v", d.Conditions)
	}
	for i, c := range d.Conditions {
		if c.Type != conditionTypes[i] || c.ObservedGeneration != f.Generation || c.Reason == "" {
			return fmt.Errorf("condition %d = %+v", i, c)
		}
	}
	return nil
}

// invOneActive: exactly one of Ready/Reconciling/Stalled is True, or Ready and Stalled after a
// rollback.
func invOneActive(_ Facts, d Decision) error {
	trues := 0
	for _, c := range d.Conditions[:3] {
		if c.Status == metav1.ConditionTrue {
			trues++
		}
	}
	stalled := cond(d.Conditions, v1alpha1.ConditionStalled)
	switch {
	case trues == 1:
	case trues == 2 && isTrue(d, v1alpha1.ConditionReady) && stalled.Status == metav1.ConditionTrue && stalled.Reason == ReasonRolledBack:
	default:
		return fmt.Errorf("%d of Ready/Reconciling/Stalled are True: %s", trues, describe(d))
	}
	return nil
}

func invReadyInputs(_ Facts, d Decision) error {
	if isTrue(d, v1alpha1.ConditionReady) && (!isTrue(d, ConditionPerformersReady) || !isTrue(d, ConditionConfigReady)) {
		return fmt.Errorf("ready without performers and config: %s", describe(d))
	}
	return nil
}

func invReadyLastGood(_ Facts, d Decision) error {
	if isTrue(d, v1alpha1.ConditionReady) && d.LastGoodRevision == "" {
		return errors.New("running without a last good revision")
	}
	return nil
}

func invTransition(f Facts, d Decision) error {
	return Transitions.Check(Phases.Of(f.Conditions), d.Phase)
}

// invActions checks every action against each of actionRules.
func invActions(f Facts, d Decision) error {
	for _, a := range d.Actions {
		for _, rule := range actionRules {
			if err := rule(f, d, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// actionRules each say when an action a is not allowed.
var actionRules = []func(f Facts, d Decision, a Action) error{
	func(f Facts, _ Decision, a Action) error {
		if f.Deleting && !slices.Contains([]Action{ActionDeleteDeployment, ActionDeleteConfigMaps, ActionDeleteManagedPerformers, ActionRemoveFinalizer}, a) {
			return fmt.Errorf("action %s while deleting", a)
		}
		return nil
	},
	func(f Facts, d Decision, a Action) error {
		if (a == ActionApplyDeployment || a == ActionEnsureConfigMap || a == ActionRollback) &&
			(!isTrue(d, ConditionPerformersReady) || len(f.MissingRefs) > 0 || f.DesiredRevision == "") {
			return fmt.Errorf("action %s with inputs not ready: %s", a, describe(d))
		}
		return nil
	},
	func(f Facts, _ Decision, a Action) error {
		if a == ActionRemoveFinalizer && f.ManagedPerformers > 0 {
			return fmt.Errorf("finalizer removed while %d performers the executor created remain (orphans)", f.ManagedPerformers)
		}
		return nil
	},
	func(f Facts, _ Decision, a Action) error {
		if a == ActionEnsureAccess && (!f.ManagePerformers || f.Access.Foreign) {
			return fmt.Errorf("EnsureAccess without managePerformers or over a foreign object: %+v", f.Access)
		}
		return nil
	},
	func(f Facts, _ Decision, a Action) error {
		if a == ActionApplyDeployment && f.Deployment != nil && f.FailedRevision == f.DesiredRevision && f.FailedRevision != "" && f.LastGoodRevision != "" {
			return fmt.Errorf("re-applied failed revision %s", f.FailedRevision)
		}
		return nil
	},
	func(f Facts, d Decision, a Action) error {
		if a == ActionRollback && (!f.LastGoodAvailable || d.LastGoodRevision == "") {
			return errors.New("rollback without a target")
		}
		return nil
	},
}

func invFinalizerLast(f Facts, d Decision) error {
	if slices.Contains(d.Actions, ActionRemoveFinalizer) && (!f.Deleting || (f.Deployment != nil && !f.Deployment.Foreign) || (f.ConfigMap.Exists && !f.ConfigMap.Foreign)) {
		return errors.New("finalizer removed with owned objects left")
	}
	return nil
}

func invFailedNotGood(_ Facts, d Decision) error {
	if d.FailedRevision != "" && d.FailedRevision == d.LastGoodRevision {
		return fmt.Errorf("revision %s both failed and good", d.FailedRevision)
	}
	return nil
}
