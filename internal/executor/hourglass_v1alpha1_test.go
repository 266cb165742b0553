package executor

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The removed HourglassExecutor operator, as far as its config goes: its API types (the fields
// buildExecutorConfig reads) and buildExecutorConfig itself, verbatim from
// Layr-Labs/hourglass-monorepo@96df792^ hourglass-operator/api/v1alpha1/hourglassExecutorTypes.go
// and hourglass-operator/internal/controller/hourglassExecutorController.go (only the receiver
// dropped), so the tests compare Gantry's rendering with what that operator would write.

type oldChainConfig struct {
	Name               string `json:"name"`
	RPC                string `json:"rpc"`
	ChainID            int64  `json:"chainId"`
	TaskMailboxAddress string `json:"taskMailboxAddress"`
}

type oldKubernetesConfig struct {
	Namespace string `json:"namespace,omitempty"`
}

type oldHourglassExecutorConfig struct {
	AggregatorEndpoint string               `json:"aggregatorEndpoint"`
	OperatorKeys       map[string]string    `json:"operatorKeys"`
	Chains             []oldChainConfig     `json:"chains"`
	PerformerMode      string               `json:"performerMode,omitempty"`
	Kubernetes         *oldKubernetesConfig `json:"kubernetes,omitempty"`
	LogLevel           string               `json:"logLevel,omitempty"`
}

type oldHourglassExecutor struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Image            string                        `json:"image"`
		Replicas         *int32                        `json:"replicas,omitempty"`
		Config           oldHourglassExecutorConfig    `json:"config"`
		Resources        corev1.ResourceRequirements   `json:"resources,omitempty"`
		NodeSelector     map[string]string             `json:"nodeSelector,omitempty"`
		Tolerations      []corev1.Toleration           `json:"tolerations,omitempty"`
		ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	} `json:"spec"`
}

func oldBuildExecutorConfig(executor *oldHourglassExecutor) string {
	// Build YAML configuration for the executor
	// This is a simplified version - in practice, you'd use a proper YAML library
	config := fmt.Sprintf(`
aggregator_endpoint: "%s"
performer_mode: "%s"
log_level: "%s"
chains:
`, executor.Spec.Config.AggregatorEndpoint,
		executor.Spec.Config.PerformerMode,
		executor.Spec.Config.LogLevel)

	for _, chain := range executor.Spec.Config.Chains {
		config += fmt.Sprintf(`
  - name: "%s"
    rpc: "%s"
    chain_id: %d
    task_mailbox_address: "%s"
`, chain.Name, chain.RPC, chain.ChainID, chain.TaskMailboxAddress)
	}

	if executor.Spec.Config.Kubernetes != nil {
		config += fmt.Sprintf(`
kubernetes:
  namespace: "%s"
`, executor.Spec.Config.Kubernetes.Namespace)
	}

	return config
}

const (
	// v1alpha1Manifest is an HourglassExecutor of that operator's docs (keys replaced).
	v1alpha1Manifest = "testdata/hourglass-executor-v1alpha1/ha-executor.yaml"
	// v1alpha1Golden is the config.yaml that operator writes for it (oldBuildExecutorConfig).
	v1alpha1Golden = "testdata/hourglass-executor-v1alpha1/ha-executor.config.yaml"
)

// translateV1alpha1 is the translation the migration guide gives for an HourglassExecutor
// (gantry_executor with hourglass_compat.config_format = "hourglass-executor-v1alpha1"), as the
// Executor the provider writes: image, replicas, aggregator endpoint, log level, chains, the
// keys as a Secret (secretName and the keys in it, never their values), resources, node
// selector, tolerations, image pull secrets; in the namespace spec.config.kubernetes.namespace
// names (its performers'), which the rendering writes as kubernetes.namespace.
func translateV1alpha1(old *oldHourglassExecutor, secret string) *v1alpha1.Executor {
	ns := old.Namespace
	if k := old.Spec.Config.Kubernetes; k != nil && k.Namespace != "" {
		ns = k.Namespace
	}
	e := &v1alpha1.Executor{
		ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: ns},
		Spec: v1alpha1.ExecutorSpec{
			Image: old.Spec.Image, Replicas: old.Spec.Replicas, AggregatorEndpoint: old.Spec.Config.AggregatorEndpoint,
			LogLevel:         v1alpha1.ExecutorLogLevel(old.Spec.Config.LogLevel),
			OperatorKeys:     v1alpha1.OperatorKeys{SecretName: secret},
			Resources:        v1alpha1.ResourceRequirements{Limits: old.Spec.Resources.Limits, Requests: old.Spec.Resources.Requests},
			Scheduling:       v1alpha1.Scheduling{NodeSelector: old.Spec.NodeSelector, Tolerations: old.Spec.Tolerations},
			ImagePullSecrets: old.Spec.ImagePullSecrets,
			HourglassCompat:  &v1alpha1.HourglassCompat{ConfigFormat: v1alpha1.HourglassConfigFormatExecutorV1alpha1},
		},
	}
	if _, ok := old.Spec.Config.OperatorKeys["ecdsa"]; ok {
		e.Spec.OperatorKeys.ECDSAKey = "ecdsa"
	}
	if _, ok := old.Spec.Config.OperatorKeys["bls"]; ok {
		e.Spec.OperatorKeys.BLSKey = "bls"
	}
	for _, c := range old.Spec.Config.Chains {
		e.Spec.Chains = append(e.Spec.Chains, v1alpha1.Chain{Name: c.Name, ChainID: c.ChainID, RPCURL: c.RPC, TaskMailboxAddress: c.TaskMailboxAddress})
	}
	return e
}

func readOldManifest(t *testing.T) *oldHourglassExecutor {
	t.Helper()
	raw, err := os.ReadFile(v1alpha1Manifest)
	if err != nil {
		t.Fatal(err)
	}
	// The types above declare only what the config and the translation read: a lenient decode.
	var old oldHourglassExecutor
	if err := yaml.Unmarshal(raw, &old); err != nil {
		t.Fatal(err)
	}
	return &old
}

// TestHourglassExecutorV1alpha1Golden: for the HourglassExecutor of that operator's docs, the
// config.yaml Gantry renders from its translation is byte for byte the golden file, and the
// golden file is what that operator's buildExecutorConfig writes for the manifest.
func TestHourglassExecutorV1alpha1Golden(t *testing.T) {
	old := readOldManifest(t)
	golden, err := os.ReadFile(v1alpha1Golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := oldBuildExecutorConfig(old); got != string(golden) {
		t.Fatalf("the HourglassExecutor operator writes\n%q\nthe golden file is\n%q", got, golden)
	}
	e := translateV1alpha1(old, "ha-executor-keys")
	data, hash, err := RenderConfig(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if data != string(golden) {
		t.Errorf("Gantry renders\n%s\nwant (the HourglassExecutor operator's)\n%s", data, golden)
	}
	cm := DesiredConfigMap(e, data, hash)
	if want := map[string]string{v1alpha1.HourglassConfigKey: string(golden)}; !reflect.DeepEqual(cm.Data, want) {
		t.Errorf("ConfigMap data %q, want %q", cm.Data, want)
	}
	for _, k := range []string{"<ecdsa private key>", "<bls private key>"} {
		if strings.Contains(data, k) {
			t.Errorf("config holds the key %q", k)
		}
	}
}

// TestHourglassExecutorV1alpha1Config is the table: for each HourglassExecutor config, the
// config.yaml Gantry renders from its translation equals, byte for byte, what the
// HourglassExecutor operator writes (its performerMode kubernetes, its kubernetes.namespace the
// executor's namespace, logLevel defaulted to info as its CRD does), and parses as YAML to the
// values given. Values that operator wrote raw and broke the YAML with ('"', '\') are escaped:
// those rows compare the parsed values only.
func TestHourglassExecutorV1alpha1Config(t *testing.T) {
	eth := oldChainConfig{Name: "ethereum", RPC: "https://eth.example.com", ChainID: 1, TaskMailboxAddress: "0x132b466d9d5723531F68797519DfED701aC2C749"}
	base := oldChainConfig{Name: "base", RPC: "wss://base.example.com/ws?key=a&b=c", ChainID: 8453, TaskMailboxAddress: "0x" + strings.Repeat("ab", 20)}
	for _, tc := range []struct {
		name      string
		ns        string
		cfg       oldHourglassExecutorConfig
		want      string // "" : oldBuildExecutorConfig's output
		escaped   bool   // the value breaks that operator's YAML: compare parsed values only
		wantValue map[string]any
	}{
		{name: "one chain", ns: "avs",
			cfg: oldHourglassExecutorConfig{AggregatorEndpoint: "aggregator.avs.svc:9010", Chains: []oldChainConfig{eth}},
			want: `
aggregator_endpoint: "aggregator.avs.svc:9010"
performer_mode: "kubernetes"
log_level: "info"
chains:

  - name: "ethereum"
    rpc: "https://eth.example.com"
    chain_id: 1
    task_mailbox_address: "0x132b466d9d5723531F68797519DfED701aC2C749"

kubernetes:
  namespace: "avs"
`},
		{name: "two chains, debug, scheme in the endpoint", ns: "hourglass",
			cfg: oldHourglassExecutorConfig{AggregatorEndpoint: "dns:///aggregator.example.com:443", LogLevel: "debug", Chains: []oldChainConfig{base, eth}}},
		{name: "error level", ns: "default",
			cfg: oldHourglassExecutorConfig{AggregatorEndpoint: "grpcs://agg.example.com:9443/path", LogLevel: "error", Chains: []oldChainConfig{eth}}},
		{name: "a quote and a backslash in the RPC URL", ns: "avs", escaped: true,
			cfg: oldHourglassExecutorConfig{AggregatorEndpoint: "aggregator:9010",
				Chains: []oldChainConfig{{Name: "ethereum", RPC: `https://eth.example.com/"q"\x`, ChainID: 1, TaskMailboxAddress: eth.TaskMailboxAddress}}},
			wantValue: map[string]any{"chains.0.rpc": `https://eth.example.com/"q"\x`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := &oldHourglassExecutor{ObjectMeta: metav1.ObjectMeta{Name: "ex", Namespace: tc.ns}}
			old.Spec.Config = tc.cfg
			// What the HourglassExecutor CRD defaults (performerMode kubernetes, logLevel info)
			// and the section Gantry always writes (kubernetes.namespace: the executor's).
			if old.Spec.Config.PerformerMode == "" {
				old.Spec.Config.PerformerMode = "kubernetes"
			}
			if old.Spec.Config.LogLevel == "" {
				old.Spec.Config.LogLevel = "info"
			}
			old.Spec.Config.Kubernetes = &oldKubernetesConfig{Namespace: tc.ns}
			e := translateV1alpha1(old, "keys")
			e.Spec.LogLevel = v1alpha1.ExecutorLogLevel(tc.cfg.LogLevel) // unset: Gantry's default
			got, hash, err := RenderConfig(e, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("rendered\n%q\nwant\n%q", got, tc.want)
			}
			var doc any
			if err := yaml.Unmarshal([]byte(got), &doc); err != nil {
				t.Fatalf("rendered config does not parse: %v\n%s", err, got)
			}
			flat := map[string]any{}
			leaves("", doc, flat)
			if !tc.escaped {
				if w := oldBuildExecutorConfig(old); got != w {
					t.Errorf("rendered\n%q\nthe HourglassExecutor operator writes\n%q", got, w)
				}
			}
			want := map[string]any{"aggregator_endpoint": tc.cfg.AggregatorEndpoint, "performer_mode": "kubernetes",
				"log_level": old.Spec.Config.LogLevel, "kubernetes.namespace": tc.ns}
			for i, c := range old.Spec.Config.Chains {
				want[fmt.Sprintf("chains.%d.name", i)], want[fmt.Sprintf("chains.%d.rpc", i)] = c.Name, c.RPC
				want[fmt.Sprintf("chains.%d.chain_id", i)] = float64(c.ChainID)
				want[fmt.Sprintf("chains.%d.task_mailbox_address", i)] = c.TaskMailboxAddress
			}
			for k, v := range tc.wantValue {
				want[k] = v
			}
			if !reflect.DeepEqual(flat, want) {
				t.Errorf("parsed %v\nwant   %v", flat, want)
			}
			if _, h2, _ := RenderConfig(e, nil); h2 != hash || len(hash) != 64 {
				t.Errorf("hash %q then %q: not deterministic", hash, h2)
			}
		})
	}
}

// TestYAMLEscape: what needs no escaping is unchanged; the rest round-trips through YAML.
func TestYAMLEscape(t *testing.T) {
	for _, s := range []string{"plain", "https://x.example/a?b=c&d=e#f", "tab\there", `q"uote`, `back\slash`, "bell\a", "nl\nx", "ls\u2028x", "ünï"} {
		got := yamlEscape(s)
		if !strings.ContainsFunc(s, needsEscape) && got != s {
			t.Errorf("yamlEscape(%q) = %q, want it unchanged", s, got)
		}
		var v string
		if err := yaml.Unmarshal([]byte(`"`+got+`"`), &v); err != nil || v != s {
			t.Errorf("yamlEscape(%q) = %q parses to %q (%v)", s, got, v, err)
		}
	}
}

// TestHourglassExecutorV1alpha1Deployment: the pod runs as the HourglassExecutor operator ran
// it (the image's entrypoint, --config=/etc/hourglass/config.yaml, config.yaml mounted
// read-only at /etc/hourglass, port grpc 9090 only, liveness /healthz and readiness /readyz on
// 8080 with that operator's timings), with the translated resources, node selector,
// tolerations and pull secrets, the keys only as ECDSA_PRIVATE_KEY and BLS_PRIVATE_KEY
// secretKeyRefs, the ServiceAccount executor-<name> whose Role manages Hourglass Performers.
func TestHourglassExecutorV1alpha1Deployment(t *testing.T) {
	old := readOldManifest(t)
	e := translateV1alpha1(old, "ha-executor-keys")
	data, hash, err := RenderConfig(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	cm := DesiredConfigMap(e, data, hash)
	dep, err := DesiredDeployment(e, cm.Name, hash)
	if err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Name != "executor" || c.Image != "hourglass/executor:v1.2.0" || c.Command != nil || !reflect.DeepEqual(c.Args, []string{"--config=/etc/hourglass/config.yaml"}) {
		t.Errorf("container %s image %s command %q args %q", c.Name, c.Image, c.Command, c.Args)
	}
	if want := []corev1.ContainerPort{{Name: "grpc", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}; !reflect.DeepEqual(c.Ports, want) {
		t.Errorf("ports %+v, want %+v", c.Ports, want)
	}
	probe := func(path string, delay, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt(8080)}},
			InitialDelaySeconds: delay, PeriodSeconds: period}
	}
	if !reflect.DeepEqual(c.LivenessProbe, probe("/healthz", 30, 10)) || !reflect.DeepEqual(c.ReadinessProbe, probe("/readyz", 5, 5)) {
		t.Errorf("liveness %+v readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	if want := []corev1.VolumeMount{{Name: "config", MountPath: "/etc/hourglass", ReadOnly: true}}; !reflect.DeepEqual(c.VolumeMounts, want) {
		t.Errorf("mounts %+v, want %+v", c.VolumeMounts, want)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != cm.Name {
		t.Errorf("volumes %+v, want only the ConfigMap %s", pod.Volumes, cm.Name)
	}
	var env []string
	for _, v := range c.Env {
		if v.Value != "" || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil {
			t.Errorf("env %s is not a secretKeyRef", v.Name)
			continue
		}
		env = append(env, v.Name+"="+v.ValueFrom.SecretKeyRef.Name+"/"+v.ValueFrom.SecretKeyRef.Key)
	}
	if want := []string{"ECDSA_PRIVATE_KEY=ha-executor-keys/ecdsa", "BLS_PRIVATE_KEY=ha-executor-keys/bls"}; !reflect.DeepEqual(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
	if *dep.Spec.Replicas != 3 || pod.NodeSelector["node.kubernetes.io/instance-type"] != "m5.xlarge" ||
		len(pod.Tolerations) != 1 || pod.Tolerations[0].Value != "hourglass" ||
		!reflect.DeepEqual(pod.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "private-registry-secret"}}) {
		t.Errorf("replicas %d nodeSelector %v tolerations %+v pull secrets %+v", *dep.Spec.Replicas, pod.NodeSelector, pod.Tolerations, pod.ImagePullSecrets)
	}
	if q := c.Resources.Limits[corev1.ResourceMemory]; q.Cmp(resource.MustParse("8Gi")) != 0 {
		t.Errorf("memory limit %s, want 8Gi", q.String())
	}
	if pod.ServiceAccountName != "executor-ha-executor" {
		t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
	}
	_, role, _ := DesiredAccess(e)
	if g := role.Rules[0].APIGroups[0]; g != v1alpha1.HourglassPerformerGroup {
		t.Errorf("Role group %q, want %q", g, v1alpha1.HourglassPerformerGroup)
	}
}

// TestHourglassConfigFormats: configFormat ponos is the default (the same config and pod as
// leaving it unset), and switching the format changes the config, its hash and the pod
// template (so the Deployment rolls).
func TestHourglassConfigFormats(t *testing.T) {
	e := goldenExecutor()
	data, hash, err := RenderConfig(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	dep, err := DesiredDeployment(e, "cm", hash)
	if err != nil {
		t.Fatal(err)
	}
	e.Spec.HourglassCompat.ConfigFormat = v1alpha1.HourglassConfigFormatPonos
	data2, hash2, err := RenderConfig(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	dep2, err := DesiredDeployment(e, "cm", hash2)
	if err != nil {
		t.Fatal(err)
	}
	if data2 != data || Revision(&dep2.Spec.Template) != Revision(&dep.Spec.Template) || ConfigFormat(e) != "ponos" {
		t.Errorf("configFormat ponos differs from the default")
	}
	e.Spec.HourglassCompat = &v1alpha1.HourglassCompat{ConfigFormat: v1alpha1.HourglassConfigFormatExecutorV1alpha1}
	e.Spec.AVSPerformers = nil
	_, hash3, _ := RenderConfig(e, nil)
	dep3, err := DesiredDeployment(e, "cm", hash3)
	if err != nil {
		t.Fatal(err)
	}
	if hash3 == hash || Revision(&dep3.Spec.Template) == Revision(&dep.Spec.Template) {
		t.Errorf("switching to hourglass-executor-v1alpha1 kept the config hash or the revision")
	}
	if ConfigFormat(&v1alpha1.Executor{}) != "" || ConfigFile(&v1alpha1.Executor{}) != "/etc/gantry/executor-config.yaml" {
		t.Errorf("without hourglassCompat: format %q file %q", ConfigFormat(&v1alpha1.Executor{}), ConfigFile(&v1alpha1.Executor{}))
	}
}
