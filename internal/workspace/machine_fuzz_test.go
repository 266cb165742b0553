package workspace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

// FuzzDecide feeds arbitrary sequences of observations to the machine, carrying each pass's
// conditions into the next as the controller does (meta.SetStatusCondition), and checks the
// invariants after every pass: only KAITO's transitions, never back to Pending, terminal
// tuning states stay, exactly one of Ready/Reconciling/Stalled, the Pending trap is never
// silent, no creation while deleting, a tuning run's nodes released only as asked.
func FuzzDecide(f *testing.F) {
	f.Add(false, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(true, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(false, []byte{255, 17, 34, 200, 1, 1, 1, 9, 64, 128, 3})
	f.Add(true, []byte{7, 7, 7, 7, 200, 200, 13, 99, 1, 2})
	f.Add(false, []byte{9, 14, 0xd2, 9, 14, 0x52, 25, 14, 0xd2, 9, 6, 0x12})                       // autoscaled, with and without the HPA
	f.Add(true, []byte{0x19, 2, 0x42, 0x19, 0x26, 0x42, 0x19, 6, 0x42, 0x19, 6, 0xc2, 0x09, 6, 2}) // tuning with a claim, releaseNodesOnSuccess: runs, succeeds, releases
	f.Fuzz(func(t *testing.T, tuningMode bool, data []byte) {
		mode := inf
		if tuningMode {
			mode = tun
		}
		var conds []metav1.Condition
		deleting := false
		for len(data) >= 3 {
			a, b, c := data[0], data[1], data[2]
			data = data[3:]
			deleting = deleting || a&0x80 != 0 && b&1 != 0 // deletion is never undone
			fa := factsFrom(mode, a, b, c)
			fa.Deleting = deleting
			fa.Conditions = conds
			d, err := Decide(fa)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			invariant.Check(t, invariants, fa, d)
			if t.Failed() {
				t.FailNow()
			}
			for _, c := range d.Conditions {
				meta.SetStatusCondition(&conds, c)
			}
		}
	})
}

// factsFrom decodes three bytes into one observation of the world.
func factsFrom(mode Mode, a, b, c byte) Facts {
	f := Facts{Now: t0, Generation: int64(1 + a%3), Mode: mode, Replicas: int32(1 + b%3), HasFinalizer: a&1 != 0}
	if mode == tun {
		f.Replicas = 1
	}
	switch c % 4 {
	case 0:
		f.Capacity = Capacity{AllNodes: 7}
	case 1:
		f.Capacity = Capacity{MatchingNodes: 1, AllNodes: 7, GPUsPerReplica: 8, TotalGPUs: 8, PlaceableReplicas: 1}
	default:
		f.Capacity = roomy
	}
	if a&2 != 0 {
		f.SpecError = "spec.resource.labelSelector conflicts"
	}
	if mode == inf {
		if b&2 != 0 {
			f.Workload = &Workload{Foreign: b&64 != 0 && b&128 != 0, UpToDate: b&4 != 0, RolledOut: b&8 != 0}
		}
		f.Service = Object{Exists: b&16 != 0, UpToDate: b&16 != 0 && b&32 != 0, Foreign: b&16 != 0 && a&64 != 0 && a&32 != 0}
		if a&8 != 0 { // spec.autoscaling: minReplicas is f.Replicas; the reconciler's HPA unless external
			f.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: f.Replicas, MaxReplicas: 4, External: a&16 != 0}
			if f.Workload != nil {
				f.Workload.Replicas = int32(c & 3)
			}
		}
		f.Autoscaler = Object{Exists: c&64 != 0, UpToDate: c&64 != 0 && c&128 != 0, Foreign: c&64 != 0 && b&1 != 0 && a&32 != 0}
	} else {
		if b&2 != 0 {
			f.Job = &Job{Foreign: a&64 != 0 && a&32 != 0, Complete: b&4 != 0 && b&8 == 0, Failed: b&8 != 0 && b&4 == 0, Active: int32(b>>4) & 1, Succeeded: int32(b>>5) & 1, FailedPods: int32(b>>6) & 1}
		}
		// spec.tuning.releaseNodesOnSuccess, and a NodeClaim of the workspace's own.
		f.ReleaseNodesOnSuccess, f.Output = a&8 != 0, "image registry.example/a:1"
		if a&16 != 0 {
			f.Namespace, f.Name = "ml", "tune"
			f.Provisioning = Provisioning{Wanted: true, Available: true, NodeClass: kwokClass, InstanceType: "Standard_NC24ads_A100_v4", ReplicasPerNode: 1,
				Claims: []Claim{{Name: ClaimName("ml", "tune", 0), Ready: c&64 != 0, Deleting: c&128 != 0}}}
		}
	}
	for i := 0; i < int(c>>2)%4; i++ {
		p := Pod{Name: string(rune('a' + i)), Phase: corev1.PodPending}
		switch (c >> (4 + i)) & 3 {
		case 0:
			p.Unschedulable = "0/7 nodes are available"
		case 1:
			p.NodeName, p.NodeReady, p.Phase, p.Ready = "n", true, corev1.PodRunning, true
		case 2:
			p.NodeName, p.NodeReady, p.WaitingReason = "n", a&4 != 0, "ErrImagePull"
		case 3:
			p.NodeName, p.Phase, p.Terminated = "n", corev1.PodFailed, "Error (exit code 1)"
		}
		f.Pods = append(f.Pods, p)
	}
	return f
}
