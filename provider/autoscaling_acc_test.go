package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	gwait "github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// autoscaledAcc is what TestAccWorkspace_autoscaling and TestAccPerformer_autoscaling share:
// an object (kind, at addr in the configuration) whose Deployment dep an autoscaler scales,
// its summary attribute (the same name in status) and the value it has when the object is
// done, and the status replica counts that report the autoscaler's count.
type autoscaledAcc struct {
	c             *kube.Clients
	kind          gwait.Spec
	ns, name, dep string
	addr          string
	// summary is the summary attribute and status field ("state", "phase"), done its value
	// once the object serves ("Ready", "Running").
	summary, done string
	// counts are the status fields that must equal the autoscaler's count, e.g.
	// currentReplicas, desiredReplicas (and a performer's readyReplicas).
	counts []string
}

// hpaGone checks the HorizontalPodAutoscaler dep is there (want false) or gone (true), within
// 30 s: the reconciler deletes it in the pass that reports done, so it may still be going
// for a moment when the apply returns.
func (a autoscaledAcc) hpaGone(want bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		var last error
		_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := a.c.Core.AutoscalingV2().HorizontalPodAutoscalers(a.ns).Get(ctx, a.dep, metav1.GetOptions{})
			switch {
			case want && !apierrors.IsNotFound(err):
				last = fmt.Errorf("HorizontalPodAutoscaler %s/%s still exists (%v)", a.ns, a.dep, err)
			case !want && err != nil:
				last = fmt.Errorf("HorizontalPodAutoscaler %s/%s: %v", a.ns, a.dep, err)
			default:
				last = nil
			}
			return last == nil, nil
		})
		return last
	}
}

// waitReplicas waits (2 min) until the object's status reports want in each of a.counts and
// its summary is a.done; it fails the test naming the last status otherwise.
func (a autoscaledAcc) waitReplicas(t *testing.T, want int64) {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := a.c.Dynamic.Resource(a.kind.GVR).Namespace(a.ns).Get(ctx, a.name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = u
		for _, f := range a.counts {
			if n, _, _ := unstructured.NestedInt64(u.Object, "status", f); n != want {
				return false, nil
			}
		}
		s, _, _ := unstructured.NestedString(u.Object, "status", a.summary)
		return s == a.done, nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s did not report %d replicas %s: %v; last status %v", strings.ToLower(a.kind.Kind), a.ns, a.name, want, a.done, err, last.Object["status"])
	}
}

// createdStep applies cfg (min_replicas 1, a metric): the object is done with 1 replica, the
// HorizontalPodAutoscaler is there and the next plan is empty; extra are further state checks.
func (a autoscaledAcc) createdStep(cfg string, extra ...statecheck.StateCheck) resource.TestStep {
	return resource.TestStep{
		Config: cfg,
		ConfigStateChecks: append([]statecheck.StateCheck{
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New(a.summary), knownvalue.StringExact(a.done)),
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New("current_replicas"), knownvalue.Int64Exact(1)),
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New("desired_replicas"), knownvalue.Int64Exact(1)),
		}, append(extra,
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New("autoscaling").AtMapKey("external"), knownvalue.Null()))...),
		Check:            resource.ComposeTestCheckFunc(a.hpaGone(false), func(*terraform.State) error { return deploymentReplicas(a.c, a.ns, a.dep, 1) }),
		ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
	}
}

// scaledStep: the autoscaler (simulated: the scale subresource, as manager test-autoscaler)
// scales to 3; the reconciler reports it and leaves it, and the plan after the refresh of cfg
// is empty.
func (a autoscaledAcc) scaledStep(t *testing.T, cfg string) resource.TestStep {
	return resource.TestStep{
		PreConfig: func() {
			scaleDeployment(t, a.c, a.ns, a.dep, 3, "test-autoscaler")
			a.waitReplicas(t, 3)
			time.Sleep(5 * time.Second) // more reconciler passes (pods, the HPA's status)
			if err := deploymentReplicas(a.c, a.ns, a.dep, 3); err != nil {
				t.Fatal(err)
			}
		},
		Config:   cfg,
		PlanOnly: true, // the plan after the refresh must be empty
	}
}

// keptStep applies cfg again after scaledStep: nothing to change (empty plans before and after),
// state and Deployment keep the autoscaler's 3.
func (a autoscaledAcc) keptStep(cfg string) resource.TestStep {
	return resource.TestStep{
		Config: cfg,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New(a.summary), knownvalue.StringExact(a.done)),
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New("current_replicas"), knownvalue.Int64Exact(3)),
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New("desired_replicas"), knownvalue.Int64Exact(3)),
		},
		Check:            func(*terraform.State) error { return deploymentReplicas(a.c, a.ns, a.dep, 3) },
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}, PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
	}
}

// kedaStep applies keda (external = true): KEDA takes over, the HPA goes, the count stays.
func (a autoscaledAcc) kedaStep(keda string) resource.TestStep {
	return resource.TestStep{
		Config: keda,
		Check: resource.ComposeTestCheckFunc(a.hpaGone(true), func(*terraform.State) error {
			time.Sleep(3 * time.Second)
			return deploymentReplicas(a.c, a.ns, a.dep, 3)
		}),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New(a.summary), knownvalue.StringExact(a.done)),
			statecheck.ExpectKnownValue(a.addr, tfjsonpath.New("autoscaling").AtMapKey("external"), knownvalue.Bool(true)),
		},
		ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
	}
}

// kedaScaledStep: KEDA (manager keda-operator) scales to 2; the plan of keda is still empty.
func (a autoscaledAcc) kedaScaledStep(t *testing.T, keda string) resource.TestStep {
	return resource.TestStep{
		PreConfig: func() {
			scaleDeployment(t, a.c, a.ns, a.dep, 2, "keda-operator")
			a.waitReplicas(t, 2)
		},
		Config:   keda,
		PlanOnly: true,
	}
}

// scaleDeployment sets the Deployment's replicas through its scale subresource under manager,
// as the HorizontalPodAutoscaler controller (or KEDA) does.
func scaleDeployment(t *testing.T, c *kube.Clients, ns, name string, replicas int32, manager string) {
	t.Helper()
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := c.Core.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s.Spec.Replicas = replicas
		_, err = c.Core.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{FieldManager: manager})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("scale %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// deploymentReplicas fails the test unless the Deployment has want replicas.
func deploymentReplicas(c *kube.Clients, ns, name string, want int32) error {
	d, err := c.Core.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		return fmt.Errorf("deployment %s/%s has %v replicas, want %d (the autoscaler's count was taken back)", ns, name, d.Spec.Replicas, want)
	}
	return nil
}
