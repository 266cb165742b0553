package provider

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	kwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// Waiting where upstream waits: conditions a controller in the cluster is
// about to resolve keep the apply waiting instead of failing it. Each test resolves the
// condition in the middle of the apply, from a goroutine that first sees the reconciler report
// the wait in status; the apply must then complete. Nothing here measures time.

// whenCondition polls the object (gvr, namespace ns, "" for cluster-scoped) until its
// condition typ has reason, then runs act; it reports act's error, or that the reason was
// never seen within limit (the apply then runs into its own timeout).
func whenCondition(c *kube.Clients, gvr schema.GroupVersionResource, ns, name, typ, reason string, limit time.Duration, act func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		var last []metav1.Condition
		err := kwait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			u, err := c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil // not created yet
			}
			last = wait.Conditions(u)
			cnd := wait.FindCondition(last, typ)
			return cnd != nil && cnd.Reason == reason && u.GetGeneration() == observedGeneration(u), nil
		})
		if err != nil {
			done <- fmt.Errorf("%s %s never reported %s=%s (last conditions %+v)", gvr.Resource, name, typ, reason, last)
			return
		}
		done <- act()
	}()
	return done
}

func observedGeneration(u *unstructured.Unstructured) int64 {
	g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return g
}

// resolved is a Check that the goroutine PreConfig started (*done) saw the wait and resolved
// it (it must have: the apply could not complete otherwise).
func resolved(done *<-chan error) func(*terraform.State) error {
	return func(*terraform.State) error {
		select {
		case err := <-*done:
			return err
		default:
			return errors.New("the apply completed before the condition it had to wait for was resolved")
		}
	}
}

// A runtime-required set whose second node also carries another controller's taint
// (example.com/driver=installing:NoSchedule, which the stage pods do not tolerate): the
// reconciler reports the set waiting (Ready reason WaitingForTaint), the apply keeps waiting
// instead of failing (and tainting the resource for replacement), the test removes the taint
// as the driver installer would, and the same apply completes with the status complete.
func TestAccPackageSet_runtimeRequiredWaitsForAnotherTaint(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-rrw-" + rand.String(5)
	accNodes(t, c, pool, 2)
	runtime, _ := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	driver := corev1.Taint{Key: "example.com/driver", Value: "installing", Effect: corev1.TaintEffectNoSchedule}
	setTaints := func(name string, mod func([]corev1.Taint) []corev1.Taint) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := c.Core.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			node.Spec.Taints = mod(node.Spec.Taints)
			_, err = c.Core.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
			return err
		})
	}
	second := pool + "-1"
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("%s-%d", pool, i)
		if err := setTaints(name, func(ts []corev1.Taint) []corev1.Taint {
			ts = append(ts, runtime)
			if name == second {
				ts = append(ts, driver)
			}
			return ts
		}); err != nil {
			t.Fatalf("taint node %s: %v", name, err)
		}
	}
	var done <-chan error
	addr := "gantry_package_set.test"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				done = whenCondition(c, wait.PackageSet.GVR, "", pool, v1alpha1.ConditionReady, packageset.ReasonWaitingForTaint, 2*time.Minute, func() error {
					return setTaints(second, func(ts []corev1.Taint) []corev1.Taint {
						var out []corev1.Taint
						for _, x := range ts {
							if x.Key != driver.Key {
								out = append(out, x)
							}
						}
						return out
					})
				})
			},
			Config: runtimeRequiredConfig(pool, "  runtime_required = true"),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("complete_nodes"), knownvalue.StringExact("2/2")),
			},
			Check: resolved(&done),
		}},
	})
}

// A tuning workspace whose input and output PersistentVolumeClaims exist but are not bound yet
// (no volume; the local cluster has no provisioner): the scheduler holds the pod ("unbound
// immediate PersistentVolumeClaims"), the reconciler reports ResourceReady reason
// WaitingForVolumeBinding, the apply keeps waiting; the test then creates the volumes, the
// PersistentVolume controller binds the claims and the same apply ends Succeeded.
func TestAccWorkspace_tuningWaitsForClaimsToBind(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-pvc")
	claims := []string{"train-data", "adapters"}
	for _, name := range claims {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")}}}}
		if _, err := c.Core.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createVolumes := func() error {
		for _, name := range claims {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/gantry-acc/" + name}},
				ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: name}}}
			if _, err := c.Core.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
				return err
			}
			t.Cleanup(func() {
				_ = c.Core.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
			})
		}
		return nil
	}
	var done <-chan error
	addr := "gantry_workspace.lora"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				done = whenCondition(c, wait.Workspace.GVR, ns, "lora", workspace.ConditionResourceReady, workspace.ReasonWaitingForVolumeBinding, 2*time.Minute, createVolumes)
			},
			Config: workspaceConfig(ns, "lora", `
  resource = { gpu_count = 1 }
  tuning = {
    method     = "lora"
    base_model = "phi-3-mini-4k-instruct"
    image      = "ghcr.io/gantry-dev/hello-tuner:1.0.0"
    input_pvc  = "train-data"
    output_pvc = "adapters"
  }
  timeouts = { create = "3m" }
`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Succeeded")),
			},
			Check: resolved(&done),
		}},
	})
}
