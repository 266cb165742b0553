package provider

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// evictFirstPods evicts, through the Eviction API (as `kubectl drain` and cluster autoscalers
// do), the first Pod of each named performer in ns once the real kubelet runs its container,
// while the apply still waits for it (the test performer listens only after
// PERFORMER_LISTEN_DELAY, so the Pod runs but is not Ready). It returns a function that stops
// the watch and reports the evicted Pods' UIDs by performer.
func evictFirstPods(t *testing.T, c *kube.Clients, ns string, performers ...string) func() map[string]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	evicted := map[string]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPerformer})
			for i := 0; err == nil && i < len(pods.Items); i++ {
				p := &pods.Items[i]
				name := p.Labels[v1alpha1.LabelPerformer]
				mu.Lock()
				_, seen := evicted[name]
				mu.Unlock()
				if seen || !containerRunning(p) || !slices.Contains(performers, name) {
					continue
				}
				ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}}
				if err := c.Core.PolicyV1().Evictions(ns).Evict(ctx, ev); err != nil {
					t.Logf("evict %s: %v (retrying)", p.Name, err)
					continue
				}
				t.Logf("evicted pod %s of performer %s (container running, not Ready) while the apply waits", p.Name, name)
				mu.Lock()
				evicted[name] = string(p.UID)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(cancel)
	return func() map[string]string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return evicted
	}
}

// containerRunning: the Pod's container has started and the Pod is not Ready yet.
func containerRunning(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
		return false
	}
	return !p.Status.ContainerStatuses[0].Ready
}

// TestAccRealNode_PerformerPodEvicted (issue 38 item 6): a performer's Pod evicted while the
// apply waits for it is not a failure. The apply waits for the replacement (the reconciler
// re-creates the Pod; with RollingUpdate the ReplicaSet does) and succeeds; the Performer's
// status.podDisruptions records the evicted Pod, and the next plan is empty.
func TestAccRealNode_PerformerPodEvicted(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	realNode(t, c)
	ns := testNamespace(t, c, "acc-realev")
	a, b := "evict-"+rand.String(5), "evict-ru-"+rand.String(5)
	config := realPerformerConfig(ns, a, testPerformerImage, `  env = { PERFORMER_LISTEN_DELAY = "6" }`) +
		fmt.Sprintf(`
resource "gantry_performer" "rolling" {
  name              = %q
  namespace         = %q
  image             = %q
  image_pull_policy = "IfNotPresent"
  strategy          = "RollingUpdate"
  node_selector     = { "gantry.dev/node-pool" = "real" }
  tolerations       = [%s]
  env               = { PERFORMER_LISTEN_DELAY = "6" }
  timeouts          = { create = "2m", update = "2m", delete = "2m" }
}
`, b, ns, testPerformerImage, realNodeToleration)
	var stop func() map[string]string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { stop = evictFirstPods(t, c, ns, a, b) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_performer.real", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue("gantry_performer.rolling", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
				Check: func(*terraform.State) error {
					evicted := stop()
					for _, name := range []string{a, b} {
						if err := checkEvictedAndReplaced(c, ns, name, evicted[name]); err != nil {
							return err
						}
					}
					return nil
				},
			},
			{Config: config, PlanOnly: true},
		},
	})
}

// checkEvictedAndReplaced: the performer's first Pod (uid) was evicted, it runs on another Pod
// now, and its status.podDisruptions counts the eviction.
func checkEvictedAndReplaced(c *kube.Clients, ns, name, uid string) error {
	if uid == "" {
		return fmt.Errorf("performer %s: no Pod of it was evicted while the apply waited (the test did not exercise an eviction)", name)
	}
	u, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	podName, _, _ := unstructured.NestedString(u.Object, "status", "podName")
	pod, err := c.Core.CoreV1().Pods(ns).Get(context.Background(), podName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("performer %s: status.podName %q: %v", name, podName, err)
	}
	if string(pod.UID) == uid {
		return fmt.Errorf("performer %s: still on the evicted Pod %s", name, podName)
	}
	count, _, _ := unstructured.NestedInt64(u.Object, "status", "podDisruptions", "count")
	reason, _, _ := unstructured.NestedString(u.Object, "status", "podDisruptions", "lastReason")
	if count < 1 {
		return fmt.Errorf("performer %s: status.podDisruptions = %v, want the eviction counted", name, u.Object["status"].(map[string]any)["podDisruptions"])
	}
	fmt.Printf("performer %s: Running on %s (node %s); status.podDisruptions count %d, lastReason %s\n", name, podName, pod.Spec.NodeName, count, reason)
	return nil
}
