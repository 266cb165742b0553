package aggregator

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
)

// sample is Hourglass's demo aggregator (demo/aggregator-chain.yaml) as an Aggregator: two
// chains, one AVS on the L2, the operator key from a Secret.
func sample() *v1alpha1.Aggregator {
	return &v1alpha1.Aggregator{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "avs"},
		Spec: v1alpha1.AggregatorSpec{
			Image:           "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2",
			OperatorAddress: "0x6B58f6762689DF33fe8fa3FC40Fb5a3089D3a8cc",
			OperatorKeys:    v1alpha1.OperatorKeys{SecretName: "agg-keys", ECDSAKey: "ecdsa"},
			L1ChainID:       31337,
			Chains: []v1alpha1.AggregatorChain{
				{Name: "ethereum", ChainID: 31337, RPCURL: "http://anvil-l1:8545", PollIntervalSeconds: 10},
				{Name: "base", ChainID: 31338, RPCURL: "http://anvil-l2:9545"},
			},
			AVSs: []v1alpha1.AggregatorAVS{{Address: "0xce2ac75be2e0951f1f7b288c7a6a9bfb6c331dc4", ChainIDs: []int64{31338}}},
		},
	}
}

// TestRenderConfig: the config is Hourglass's aggregator format, with an empty placeholder
// where the key goes, and the same inputs give the same bytes.
func TestRenderConfig(t *testing.T) {
	data, hash, err := RenderConfig(sample())
	if err != nil {
		t.Fatal(err)
	}
	want := `avss:
- address: 0xce2ac75be2e0951f1f7b288c7a6a9bfb6c331dc4
  chainIds:
  - 31338
chains:
- chainId: 31337
  name: ethereum
  pollIntervalSeconds: 10
  rpcUrl: http://anvil-l1:8545
- chainId: 31338
  name: base
  pollIntervalSeconds: 2
  rpcUrl: http://anvil-l2:9545
debug: false
l1ChainId: 31337
managementServerGrpcPort: 9000
operator:
  address: 0x6B58f6762689DF33fe8fa3FC40Fb5a3089D3a8cc
  operatorPrivateKey:
    privateKey: ""
  signingKeys:
    ecdsa:
      privateKey: ""
storage:
  type: memory
`
	if data != want {
		t.Errorf("config:\n%s\nwant:\n%s", data, want)
	}
	if _, again, _ := RenderConfig(sample()); again != hash || len(hash) != 64 {
		t.Errorf("hash %q, again %q", hash, again)
	}
	a := sample()
	a.Spec.Persistence = &v1alpha1.AggregatorPersistence{Size: resource.MustParse("5Gi")}
	a.Spec.OperatorKeys = v1alpha1.OperatorKeys{SecretName: "agg-keys", ECDSAKey: "ecdsa", BLSKeystoreKey: "ks", BLSKeystorePasswordKey: "pw"}
	data, _, _ = RenderConfig(a)
	for _, s := range []string{"storage:\n  badger:\n    dir: /var/lib/ponos/aggregator/badger\n  badgerConfig:\n    dir: /var/lib/ponos/aggregator/badger\n  type: badger\n", "    bls:\n      keystore: \"\"\n      password: \"\"\n"} {
		if !strings.Contains(data, s) {
			t.Errorf("config with persistence and a BLS keystore does not hold %q:\n%s", s, data)
		}
	}
}

// TestDesiredStatefulSet: the chart's StatefulSet (one replica, command, port, the config
// Secret at /etc/secrets/hourglass) with the keys only as secretKeyRefs and persistence as a
// claim template.
func TestDesiredStatefulSet(t *testing.T) {
	a := sample()
	a.Spec.Persistence = &v1alpha1.AggregatorPersistence{Size: resource.MustParse("5Gi"), StorageClassName: "fast"}
	_, hash, _ := RenderConfig(a)
	sts, err := DesiredStatefulSet(a, hash)
	if err != nil {
		t.Fatal(err)
	}
	s := sts.Spec
	c := s.Template.Spec.Containers[0]
	switch {
	case sts.Name != "aggregator-demo" || *s.Replicas != 1 || s.ServiceName != "aggregator-demo" || s.PodManagementPolicy != appsv1.ParallelPodManagement:
		t.Errorf("statefulset %s replicas %d service %s policy %s", sts.Name, *s.Replicas, s.ServiceName, s.PodManagementPolicy)
	case strings.Join(c.Command, " ") != "aggregator run --config /etc/secrets/hourglass/config.yaml":
		t.Errorf("command %v", c.Command)
	case len(c.Ports) != 1 || c.Ports[0].Name != "management-grpc" || c.Ports[0].ContainerPort != 9000:
		t.Errorf("ports %+v", c.Ports)
	case s.Template.Spec.Volumes[0].Secret == nil || s.Template.Spec.Volumes[0].Secret.SecretName != "aggregator-demo-config":
		t.Errorf("volumes %+v", s.Template.Spec.Volumes)
	case len(s.VolumeClaimTemplates) != 1 || *s.VolumeClaimTemplates[0].Spec.StorageClassName != "fast" ||
		s.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "5Gi":
		t.Errorf("claims %+v", s.VolumeClaimTemplates)
	case s.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		t.Errorf("retention %+v", s.PersistentVolumeClaimRetentionPolicy)
	case s.Template.Annotations[v1alpha1.AnnotationConfigHash] != hash || executor.Revision(&s.Template) == "":
		t.Errorf("annotations %v", s.Template.Annotations)
	}
	for _, e := range c.Env {
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "agg-keys" {
			t.Errorf("env %+v is not a secretKeyRef of agg-keys", e)
		}
	}
	if len(c.Env) != 2 || c.Env[0].Name != executor.HourglassOperatorKeyEnv || c.Env[1].Name != executor.HourglassECDSASigningKeyEnv {
		t.Errorf("env %+v", c.Env)
	}
	a.Spec.Image = "other:1"
	other, _ := DesiredStatefulSet(a, hash)
	if executor.Revision(&other.Spec.Template) == executor.Revision(&s.Template) {
		t.Error("an image change keeps the revision")
	}
}

// TestObjectsUpToDate: the Secret and Service comparisons see a change of the config and of
// the port, and ignore what the API server adds.
func TestObjectsUpToDate(t *testing.T) {
	a := sample()
	data, hash, _ := RenderConfig(a)
	want := DesiredSecret(a, data, hash)
	live := want.DeepCopy()
	live.Data = map[string][]byte{v1alpha1.AggregatorConfigKey: []byte(data)}
	live.StringData = nil
	if !SecretUpToDate(live, want) {
		t.Error("the written Secret is not up to date")
	}
	live.Data[v1alpha1.AggregatorConfigKey] = []byte("edited")
	if SecretUpToDate(live, want) {
		t.Error("an edited Secret is up to date")
	}
	svc := DesiredService(a)
	liveSvc := svc.DeepCopy()
	liveSvc.Spec.SessionAffinity, liveSvc.Spec.Type = corev1.ServiceAffinityNone, corev1.ServiceTypeClusterIP
	if !ServiceUpToDate(liveSvc, svc) {
		t.Error("defaults make the Service differ")
	}
	a.Spec.ManagementPort = 9010
	if ServiceUpToDate(liveSvc, DesiredService(a)) {
		t.Error("a port change is not seen")
	}
	if Endpoint(a) != "aggregator-demo.avs.svc.cluster.local:9010" {
		t.Errorf("endpoint %s", Endpoint(a))
	}
}

// TestPodFacts: the kubelet's and the scheduler's words; waiting for a claim is not a failure.
func TestPodFacts(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "aggregator-demo-0"}, Status: corev1.PodStatus{
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/7 nodes are available: pod has unbound immediate PersistentVolumeClaims."}}}}
	if f := PodFacts(p); f.Binding == "" || f.Unschedulable != "" {
		t.Errorf("binding: %+v", f)
	}
	p.Status.Conditions[0].Message = "0/7 nodes are available: 7 Insufficient cpu."
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "aggregator", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
	f := PodFacts(p)
	if f.Unschedulable != "0/7 nodes are available: 7 Insufficient cpu." || len(f.Problems) != 1 ||
		f.Problems[0] != "pod aggregator-demo-0: container aggregator: ImagePullBackOff: Back-off pulling image" {
		t.Errorf("facts %+v", f)
	}
	if PodFacts(nil).Exists {
		t.Error("no pod exists")
	}
}
