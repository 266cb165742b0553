package executor

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

// world simulates an Executor, its performers, ConfigMap and Deployment, driven by fuzz bytes:
// each step carries out the machine's last actions (as the controller does) or lets the
// cluster or the user act (the Deployment controller progressing or timing out, a spec
// change, a scale, a performer vanishing, a deletion). The machine's outputs are fed back as
// its memory exactly as the controller stores them.
type world struct {
	now        time.Time
	generation int64
	deleting   bool
	finalizer  bool
	variant    int // spec variant: the desired revision is "r<variant>"
	replicas   int32
	rollback   bool
	perfGone   bool
	perfWait   bool
	secretGone bool
	cms        map[string]bool // revisions with a ConfigMap
	dep        *Deployment
	rsKept     map[string]bool // revisions the Deployment's ReplicaSets hold
	conds      []metav1.Condition
	lastGood   string
	failedRev  string
	gone       bool
	manage     bool   // spec.managePerformers
	access     Access // the executor's ServiceAccount, Role and RoleBinding
	managed    int    // Performers the executor created
}

func (w *world) desired() string { return fmt.Sprintf("r%d", w.variant) }

func (w *world) facts() Facts {
	perfs := []PerformerRef{running("a"), running("b")}
	if w.perfGone {
		perfs[1] = PerformerRef{Name: "b"}
	}
	if w.perfWait {
		perfs[0].Phase = v1alpha1.PerformerScheduling
	}
	f := Facts{
		Now: w.now, Generation: w.generation, Deleting: w.deleting, HasFinalizer: w.finalizer,
		Conditions: append([]metav1.Condition(nil), w.conds...), LastGoodRevision: w.lastGood, FailedRevision: w.failedRev,
		RollbackEnabled: w.rollback, Performers: perfs, DesiredReplicas: w.replicas,
		LastGoodAvailable: w.rsKept[w.lastGood],
		ManagePerformers:  w.manage, Access: w.access, ManagedPerformers: w.managed,
	}
	if w.secretGone {
		f.MissingRefs = []string{"Secret ns/keys not found"}
	}
	if !w.perfGone && !w.perfWait {
		f.DesiredRevision = w.desired()
		f.ConfigMap.Exists = w.cms[w.desired()]
	} else {
		f.ConfigMap.Exists = len(w.cms) > 0 && w.deleting
	}
	if w.dep != nil {
		dd := *w.dep
		f.Deployment = &dd
	}
	return f
}

func (w *world) setTemplate(rev string, replicas int32) {
	if w.dep == nil {
		w.dep = &Deployment{}
	}
	if w.dep.Revision != rev {
		w.dep.Progressing = DeploymentCondition{Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}
		w.dep.UpdatedReplicas = 0
	}
	w.dep.Revision, w.dep.Image, w.dep.Replicas = rev, "img:"+rev, replicas
	w.dep.Generation++
	w.rsKept[rev] = true
}

// apply carries out a decision's actions on the world.
func (w *world) apply(d Decision) {
	for _, a := range d.Actions {
		switch a {
		case ActionAddFinalizer:
			w.finalizer = true
		case ActionRemoveFinalizer:
			w.gone = true
		case ActionEnsureConfigMap:
			w.cms[w.desired()] = true
		case ActionApplyDeployment:
			w.setTemplate(w.desired(), w.replicas)
		case ActionRollback:
			w.setTemplate(w.lastGood, w.replicas)
		case ActionScaleDeployment:
			w.setTemplate(w.dep.Revision, w.replicas)
		case ActionDeleteDeployment:
			w.dep.Deleting = true
		case ActionDeleteConfigMaps:
			w.cms = map[string]bool{}
		case ActionEnsureAccess:
			w.access = Access{Exists: true, UpToDate: true}
		case ActionDeleteAccess:
			w.access = Access{}
		case ActionDeleteManagedPerformers:
			w.managed = 0
		}
	}
}

// step lets the cluster or the user do one thing, chosen by b.
func (w *world) step(b byte) {
	w.now = w.now.Add(time.Duration(b%7) * time.Second)
	switch b % 12 {
	case 0: // the Deployment controller observes and completes the rollout
		if w.dep != nil && !w.dep.Deleting {
			n := w.dep.Replicas
			w.dep.ObservedGeneration = w.dep.Generation
			w.dep.StatusReplicas, w.dep.UpdatedReplicas, w.dep.ReadyReplicas, w.dep.AvailableReplicas, w.dep.UnavailableReplicas = n, n, n, n, 0
			w.dep.Progressing = DeploymentCondition{Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}
		}
	case 1: // the rollout times out
		if w.dep != nil && !w.dep.Deleting {
			w.dep.ObservedGeneration = w.dep.Generation
			w.dep.UpdatedReplicas, w.dep.UnavailableReplicas, w.dep.StatusReplicas = 1, 1, w.dep.Replicas+1
			w.dep.Progressing = DeploymentCondition{Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "timed out"}
		}
	case 2: // observed, still progressing; or the executor's pods create a Performer (while they may)
		if b&0x80 != 0 && w.access.UpToDate && w.dep != nil {
			w.managed++
		} else if w.dep != nil {
			w.dep.ObservedGeneration = w.dep.Generation
		}
	case 3: // spec change: a new revision
		w.variant = (w.variant + 1) % 4
		w.generation++
	case 4: // scale
		w.replicas = (w.replicas + 1) % 4
		w.generation++
	case 5:
		w.rollback = !w.rollback
		w.generation++
	case 6:
		w.perfGone = !w.perfGone
	case 7:
		if b&0x80 != 0 {
			w.manage = !w.manage
			w.generation++
		} else {
			w.perfWait = !w.perfWait
		}
	case 8:
		w.secretGone = !w.secretGone
	case 9:
		w.deleting = true
	case 10: // the Deployment finishes deleting (or someone deletes it)
		if w.dep != nil && (w.dep.Deleting || b&0x80 != 0) {
			w.dep = nil
			w.rsKept = map[string]bool{}
		}
	case 11: // old ReplicaSets pruned by the history limit
		if b&0x40 != 0 {
			w.rsKept = map[string]bool{}
			if w.dep != nil {
				w.rsKept[w.dep.Revision] = true
			}
		}
	}
}

// FuzzDecide drives the machine through random worlds and checks its invariants on every
// pass, and that the machine's own memory never makes it reject a transition.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 0, 1, 0, 0, 9, 0, 10, 0, 0})
	f.Add([]byte{0, 0, 0, 3, 0, 1, 0, 0, 0, 4, 0, 0})
	f.Add([]byte{6, 0, 6, 0, 0, 3, 0, 2, 1, 0, 5, 0, 1, 0, 0})
	f.Add([]byte{0, 0, 0, 5, 3, 0, 1, 0, 5, 0, 0, 0, 11, 3, 0, 1, 0})
	f.Add([]byte{8, 0, 8, 0, 7, 0, 7, 0, 0, 0, 138, 0, 0, 9, 0, 10, 0})
	f.Add([]byte{135, 0, 0, 130, 130, 0, 135, 0, 130, 135, 0, 130, 9, 130, 10, 0, 0})
	f.Fuzz(func(t *testing.T, steps []byte) {
		w := &world{now: time.Unix(1_700_000_000, 0), generation: 1, replicas: 2, rollback: true,
			cms: map[string]bool{}, rsKept: map[string]bool{}}
		for i := 0; i < len(steps)*2+4 && !w.gone; i++ {
			if i%2 == 1 && i/2 < len(steps) {
				w.step(steps[i/2])
				continue
			}
			facts := w.facts()
			d, err := Decide(facts)
			if err != nil {
				t.Fatalf("pass %d: %v (facts %+v)", i, err, facts)
			}
			invariant.Check(t, invariants, facts, d)
			for _, c := range d.Conditions {
				c.LastTransitionTime = metav1.NewTime(w.now)
				meta.SetStatusCondition(&w.conds, c)
			}
			w.lastGood, w.failedRev = d.LastGoodRevision, d.FailedRevision
			w.apply(d)
		}
	})
}
