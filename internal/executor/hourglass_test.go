package executor

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// hourglassSample is Hourglass's own kubernetes-mode executor config (testdata names its
// upstream path and commit).
const hourglassSample = "testdata/hourglass/executor-config.yaml"

// leaves flattens a YAML document (as sigs.k8s.io/yaml decodes it) to dotted paths → values;
// list elements are path.<index>.
func leaves(prefix string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			leaves(strings.TrimPrefix(prefix+"."+k, "."), e, out)
		}
	case []any:
		for i, e := range x {
			leaves(fmt.Sprintf("%s.%d", prefix, i), e, out)
		}
	default:
		out[prefix] = v
	}
}

// viperOverlay applies the environment the way Hourglass's executor loader does (viper with
// AutomaticEnv, prefix "EXECUTOR_", replacer "." → "_": a key present in the file is
// overridden by EXECUTOR__<PATH upper-cased>, unless the variable is empty). Only map paths
// can be overridden, as in viper (list elements are values, not keys).
func viperOverlay(flat map[string]any, env map[string]string) {
	for p := range flat {
		if inList(p) {
			continue
		}
		name := "EXECUTOR__" + strings.ToUpper(strings.ReplaceAll(p, ".", "_"))
		if v, ok := env[name]; ok && v != "" {
			flat[p] = v
		}
	}
}

// inList reports whether a flattened path goes through a list element (a numeric segment).
func inList(p string) bool {
	for _, seg := range strings.Split(p, ".") {
		if _, err := strconv.Atoi(seg); err == nil {
			return true
		}
	}
	return false
}

// goldenExecutor is an Executor mirroring Hourglass's sample (same operator, chain, ports,
// namespace, AVS) in Hourglass compatibility mode, its keys in the Secret hg-keys.
func goldenExecutor() *v1alpha1.Executor {
	return &v1alpha1.Executor{
		ObjectMeta: metav1.ObjectMeta{Name: "hg", Namespace: "default"},
		Spec: v1alpha1.ExecutorSpec{
			Image:              "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2",
			AggregatorEndpoint: "aggregator.default.svc.cluster.local:9000",
			Chains: []v1alpha1.Chain{{Name: "ethereum", ChainID: 1, RPCURL: "http://host.docker.internal:8545",
				TaskMailboxAddress: "0x7306a649b451ae08781108445425bd4e8acf1e00"}},
			GRPCPort: 9000, ManagementPort: 9001,
			OperatorAddress: "0x6ca766d180398847cEb1a58f03e029D65d88a878",
			OperatorKeys: v1alpha1.OperatorKeys{SecretName: "hg-keys", ECDSAKey: "operator-private-key",
				BLSKeystoreKey: "bls-keystore", BLSKeystorePasswordKey: "bls-password"},
			AVSPerformers: []v1alpha1.AVSPerformer{{AVSAddress: "0xCE2Ac75bE2E0951F1F7B288c7a6A9BfB6c331DC4",
				AVSRegistrarAddress: "0x5897a9b8b746c78e0cae876962796949832e3357", ProcessType: "server", Image: "hello-performer:latest"}},
			HourglassCompat: &v1alpha1.HourglassCompat{},
		},
	}
}

// TestHourglassConfigGolden renders the compatibility config for an Executor mirroring
// Hourglass's own sample and compares it with that sample field by field: the file as
// rendered (key fields empty), then as Hourglass's executor reads it (the key fields filled
// from the environment the Deployment gives the pod, with the Secret holding the sample's keys).
func TestHourglassConfigGolden(t *testing.T) {
	raw, err := os.ReadFile(hourglassSample)
	if err != nil {
		t.Fatal(err)
	}
	var sampleDoc any
	if err := yaml.Unmarshal(raw, &sampleDoc); err != nil {
		t.Fatal(err)
	}
	sample := map[string]any{}
	leaves("", sampleDoc, sample)

	e := goldenExecutor()
	data, _, err := RenderConfig(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	var renderedDoc any
	if err := yaml.Unmarshal([]byte(data), &renderedDoc); err != nil {
		t.Fatal(err)
	}
	rendered := map[string]any{}
	leaves("", renderedDoc, rendered)

	// No key material in the ConfigMap: the key paths are empty placeholders.
	keyPaths := []string{"operator.operatorPrivateKey.privateKey", "operator.signingKeys.bls.keystore", "operator.signingKeys.bls.password"}
	for _, p := range keyPaths {
		if v, ok := rendered[p]; !ok || v != "" {
			t.Errorf("rendered %s = %#v, want the empty placeholder", p, v)
		}
	}

	// The pod's environment, resolved against a Secret holding the sample's keys.
	secret := map[string]string{
		"operator-private-key": sample["operator.operatorPrivateKey.privateKey"].(string),
		"bls-keystore":         sample["operator.signingKeys.bls.keystore"].(string),
		"bls-password":         sample["operator.signingKeys.bls.password"].(string),
	}
	dep, err := DesiredDeployment(e, "executor-hg-0123456789", "0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, v := range dep.Spec.Template.Spec.Containers[0].Env {
		if v.Value != "" {
			t.Errorf("env %s has a literal value; compatibility mode passes keys only as secretKeyRef", v.Name)
		}
		if r := v.ValueFrom.SecretKeyRef; r != nil && r.Name == "hg-keys" {
			env[v.Name] = secret[r.Key]
		}
	}
	// viper matches keys case-insensitively: compare lower-cased paths.
	effective := map[string]any{}
	for p, v := range rendered {
		effective[strings.ToLower(p)] = v
	}
	viperOverlay(effective, env)
	want := map[string]any{}
	for p, v := range sample {
		want[strings.ToLower(p)] = v
	}

	paths := map[string]bool{}
	for p := range want {
		paths[p] = true
	}
	for p := range effective {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	short := func(v any) string {
		s := fmt.Sprintf("%v", v)
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		return s
	}
	for _, p := range sorted {
		w, inSample := want[p]
		g, inRendered := effective[p]
		same := inSample && inRendered && reflect.DeepEqual(w, g)
		t.Logf("| %s | %s | %s | %v |", p, short(g), short(w), same)
		if !same {
			t.Errorf("%s: rendered (as the executor reads it) %#v (present %v), Hourglass's sample %#v (present %v)", p, g, inRendered, w, inSample)
		}
	}
}

// TestHourglassDeployment checks the pod of compatibility mode: Hourglass's command line, the
// keys only as Secret references named as Hourglass's loader reads them, no keystore volume,
// config.yaml mounted, the ServiceAccount executor-<name>, and a Role on Hourglass's Performers.
func TestHourglassDeployment(t *testing.T) {
	e := goldenExecutor()
	data, hash, err := RenderConfig(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	cm := DesiredConfigMap(e, data, hash)
	if _, ok := cm.Data[v1alpha1.HourglassConfigKey]; !ok || len(cm.Data) != 1 {
		t.Fatalf("ConfigMap keys %v, want only %s", cm.Data, v1alpha1.HourglassConfigKey)
	}
	dep, err := DesiredDeployment(e, cm.Name, hash)
	if err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if want := []string{"executor", "run", "--config", "/etc/gantry/config.yaml"}; !reflect.DeepEqual(c.Command, want) || c.Args != nil {
		t.Errorf("command %q args %q, want %q", c.Command, c.Args, want)
	}
	var names []string
	for _, v := range c.Env {
		names = append(names, v.Name+"="+v.ValueFrom.SecretKeyRef.Key)
	}
	if want := []string{HourglassOperatorKeyEnv + "=operator-private-key", HourglassBLSKeystoreEnv + "=bls-keystore", HourglassBLSPasswordEnv + "=bls-password"}; !reflect.DeepEqual(names, want) {
		t.Errorf("env %q, want %q", names, want)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil {
		t.Errorf("volumes %+v, want only the config", pod.Volumes)
	}
	if pod.ServiceAccountName != "executor-hg" {
		t.Errorf("serviceAccountName %q, want executor-hg", pod.ServiceAccountName)
	}
	if c.LivenessProbe != nil || c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil {
		t.Errorf("probes: liveness %+v readiness %+v, want no liveness and a TCP readiness check", c.LivenessProbe, c.ReadinessProbe)
	}
	for _, p := range c.Ports {
		if p.Name == HealthPortName {
			t.Errorf("port %s: Hourglass's executor serves no HTTP health", p.Name)
		}
	}
	_, role, _ := DesiredAccess(e)
	if g := role.Rules[0].APIGroups[0]; g != v1alpha1.HourglassPerformerGroup {
		t.Errorf("Role group %q, want %q", g, v1alpha1.HourglassPerformerGroup)
	}

	// Without a BLS keystore the ECDSA key is also the signing key (signingKeys.ecdsa).
	e.Spec.OperatorKeys = v1alpha1.OperatorKeys{SecretName: "hg-keys", ECDSAKey: "ecdsa"}
	data, _, err = RenderConfig(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(data, "signingKeys:\n    ecdsa:\n      privateKey: \"\"\n") || strings.Contains(data, "bls:") {
		t.Errorf("config without a keystore:\n%s", data)
	}
	env := HourglassKeyEnv(e.Spec.OperatorKeys)
	if len(env) != 2 || env[1].Name != HourglassECDSASigningKeyEnv || env[1].ValueFrom.SecretKeyRef.Key != "ecdsa" {
		t.Errorf("env without a keystore %+v", env)
	}
}

// TestHourglassL1ChainAndImages covers l1Chain selection, debug, env order and image splitting.
func TestHourglassL1ChainAndImages(t *testing.T) {
	e := goldenExecutor()
	e.Spec.Chains = append(e.Spec.Chains, v1alpha1.Chain{Name: "base", ChainID: 8453, RPCURL: "https://base.example"})
	e.Spec.HourglassCompat.L1Chain = "base"
	e.Spec.LogLevel = "debug"
	e.Spec.AVSPerformers[0].Image = "registry.local:5000/acme/perf:1.2.0"
	e.Spec.AVSPerformers[0].Env = map[string]string{"B": "2", "A": "1"}
	data, _, err := RenderConfig(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	var c HourglassConfig
	if err := yaml.Unmarshal([]byte(data), &c); err != nil {
		t.Fatal(err)
	}
	if c.L1Chain != (HourglassChain{RPCURL: "https://base.example", ChainID: 8453}) || !c.Debug {
		t.Errorf("l1Chain %+v debug %v", c.L1Chain, c.Debug)
	}
	a := c.AVSPerformers[0]
	if *a.Image != (HourglassImage{Repository: "registry.local:5000/acme/perf", Tag: "1.2.0"}) ||
		!reflect.DeepEqual(a.Envs, []HourglassEnv{{"A", "1"}, {"B", "2"}}) || a.DeploymentMode != "kubernetes" {
		t.Errorf("avsPerformers[0] %+v image %+v", a, a.Image)
	}
	for _, tc := range []struct {
		in   string
		ok   bool
		repo string
	}{{"perf:1", true, "perf"}, {"registry:5000/perf", false, "registry:5000/perf"}, {"perf", false, "perf"}, {"perf:", false, "perf:"}} {
		repo, _, ok := SplitImage(tc.in)
		if ok != tc.ok || repo != tc.repo {
			t.Errorf("SplitImage(%q) = %q, %v", tc.in, repo, ok)
		}
	}
}
