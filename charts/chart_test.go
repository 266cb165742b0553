// Package charts tests the reconciler's Helm chart (charts/gantry-reconciler) with the helm and
// kubectl that `make tools` builds into bin/: lint (strict, values.schema.json), render with the
// values users set, the rendered flags accepted by the real reconciler binary, and a server-side
// dry run of the rendered manifests against the local API server (GANTRY_TEST_KUBECONFIG, as
// the controller tests; skipped without it).
package charts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const chart = "gantry-reconciler"

// kubeVersion is the local cluster's Kubernetes version (k8s.io/kubernetes in tools/kube/go.mod):
// helm built from source (make tools) otherwise assumes v1.20.0, below the chart's kubeVersion.
var kubeVersion = func() string {
	raw, err := os.ReadFile("../tools/kube/go.mod")
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "require" && f[1] == "k8s.io/kubernetes" {
			return strings.SplitN(strings.TrimPrefix(f[2], "v"), "-", 2)[0]
		}
	}
	panic("k8s.io/kubernetes not required in tools/kube/go.mod")
}()

// tool returns bin/<name> (built by make tools), failing the test when it is missing.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not built (make tools): %v", name, err)
	}
	return p
}

// run runs a command, returning its combined output and error.
func run(t *testing.T, stdin io.Reader, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// object is one rendered manifest: its kind, name and YAML.
type object struct {
	Kind, Name, Namespace string
	YAML                  []byte
}

// render runs helm template with the --set values and splits the manifests.
func render(t *testing.T, namespace string, set ...string) []object {
	t.Helper()
	args := []string{"template", "rel", chart, "--namespace", namespace, "--kube-version", kubeVersion}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := run(t, nil, tool(t, "helm"), args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var objs []object
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name, Namespace string
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if meta.Kind != "" {
			objs = append(objs, object{meta.Kind, meta.Metadata.Name, meta.Metadata.Namespace, doc})
		}
	}
	return objs
}

func find(objs []object, kind string) *object {
	for i := range objs {
		if objs[i].Kind == kind {
			return &objs[i]
		}
	}
	return nil
}

func deployment(t *testing.T, objs []object) appsv1.Deployment {
	t.Helper()
	o := find(objs, "Deployment")
	if o == nil {
		t.Fatal("no Deployment rendered")
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(o.YAML, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestChartLint(t *testing.T) {
	helm := tool(t, "helm")
	if out, err := run(t, nil, helm, "lint", "--strict", "--kube-version", kubeVersion, chart); err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
	for _, c := range []struct{ set, want string }{
		{"logEncoding=xml", "logEncoding"},
		{"image.digest=latest", "digest"},
		{"metrics.port=0", "port"},
		{"replicaCount=2,leaderElection.enabled=false", "replicaCount > 1 needs leaderElection.enabled"},
		{"serviceAccount.create=false", "serviceAccount.name is required"},
		{"unknownValue=1", "unknownValue"},
	} {
		out, err := run(t, nil, helm, "template", "rel", chart, "--kube-version", kubeVersion, "--set", c.set)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("--set %s: want an error naming %q, got %v\n%s", c.set, c.want, err, out)
		}
	}
}

func TestChartRender(t *testing.T) {
	objs := render(t, "gantry-system", "metrics.port=9090", "logLevel=debug", "image.tag=1.2.3",
		"watchNamespaces={team-a,team-b}", "resources.limits.memory=1Gi", "replicaCount=3")
	d := deployment(t, objs)
	c := d.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--leader-elect", "--leader-election-namespace=gantry-system", "--metrics-bind-address=:9090",
		"--health-probe-bind-address=:8081", "--zap-log-level=debug", "--namespaces=team-a,team-b"} {
		if !contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	if contains(c.Args, "--skip-crd-install") {
		t.Errorf("args %v skip the CRD install by default", c.Args)
	}
	if c.Image != "ghcr.io/gantry-dev/gantry-reconciler:1.2.3" || *d.Spec.Replicas != 3 || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("image %s, replicas %d, memory limit %s", c.Image, *d.Spec.Replicas, c.Resources.Limits.Memory())
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes %+v %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("pod security context %+v: not runAsNonRoot", sc)
	}
	if s := find(objs, "Service"); s == nil || !strings.Contains(string(s.YAML), "port: 9090") {
		t.Errorf("metrics Service on 9090 missing: %+v", s)
	}

	// The ClusterRole carries exactly the rules controller-gen generates from the reconciler.
	var got, want rbacv1.ClusterRole
	if err := yaml.Unmarshal(find(objs, "ClusterRole").YAML, &got); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Rules, want.Rules) {
		t.Errorf("ClusterRole rules differ from config/rbac/role.yaml (run make generate):\n%v\n%v", got.Rules, want.Rules)
	}

	// Switches.
	off := render(t, "ops", "metrics.enabled=false", "crds.install=false", "rbac.create=false", "leaderElection.namespace=leases",
		"image.digest=sha256:"+strings.Repeat("a", 64))
	c = deployment(t, off).Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--metrics-bind-address=0", "--skip-crd-install", "--leader-election-namespace=leases"} {
		if !contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	if !strings.HasSuffix(c.Image, "@sha256:"+strings.Repeat("a", 64)) {
		t.Errorf("image %s not pinned by digest", c.Image)
	}
	if strings.Contains(strings.Join(c.Args, " "), "--runtime-required-taint") {
		t.Errorf("args %v: --runtime-required-taint without runtimeRequiredTaint", c.Args)
	}
	rt := deployment(t, render(t, "ops", "runtimeRequiredTaint=skyhook.nvidia.com=runtime-required:NoSchedule")).Spec.Template.Spec.Containers[0]
	if !contains(rt.Args, "--runtime-required-taint=skyhook.nvidia.com=runtime-required:NoSchedule") {
		t.Errorf("args %v lack --runtime-required-taint", rt.Args)
	}
	if d := deployment(t, objs); d.Spec.Template.Spec.HostNetwork || len(d.Spec.Template.Spec.Containers[0].Env) != 2 ||
		d.Spec.Template.Spec.Containers[0].Env[1].Name != "POD_NAMESPACE" {
		t.Errorf("default: hostNetwork %v, env %v (want false, POD_NAME and POD_NAMESPACE only)", d.Spec.Template.Spec.HostNetwork, d.Spec.Template.Spec.Containers[0].Env)
	}
	hn := deployment(t, render(t, "ops", "hostNetwork=true", "replicaCount=1", "extraEnv[0].name=KUBERNETES_SERVICE_HOST", "extraEnv[0].value=127.0.0.1"))
	if ps := hn.Spec.Template.Spec; !ps.HostNetwork || ps.DNSPolicy != "ClusterFirstWithHostNet" ||
		len(ps.Containers[0].Env) != 3 || ps.Containers[0].Env[2].Name != "KUBERNETES_SERVICE_HOST" || ps.Containers[0].Env[2].Value != "127.0.0.1" {
		t.Errorf("hostNetwork=true, extraEnv: hostNetwork %v, dnsPolicy %q, env %v", ps.HostNetwork, ps.DNSPolicy, ps.Containers[0].Env)
	}
	for _, kind := range []string{"Service", "ClusterRole", "Role"} {
		if o := find(off, kind); o != nil {
			t.Errorf("%s %s rendered with it switched off", kind, o.Name)
		}
	}
}

// TestChartFlagsAccepted: every argument the chart renders is a flag of the real reconciler
// binary (it parses them all, then -h exits 0; an unknown flag exits 2).
func TestChartFlagsAccepted(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gantry-reconciler")
	if out, err := run(t, nil, "go", "build", "-o", bin, "../reconciler/cmd/gantry-reconciler"); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, set := range [][]string{nil, {"metrics.enabled=false", "crds.install=false", "watchNamespaces={a}", "logLevel=3", "logEncoding=console",
		"runtimeRequiredTaint=skyhook.nvidia.com=runtime-required:NoSchedule", "nodeProvisioning.nodeClass=karpenter.k8s.aws/EC2NodeClass/default"}} {
		c := deployment(t, render(t, "gantry-system", set...)).Spec.Template.Spec.Containers[0]
		if out, err := run(t, nil, bin, append(c.Args, "-h")...); err != nil {
			t.Errorf("gantry-reconciler %s -h: %v\n%s", strings.Join(c.Args, " "), err, out)
		}
	}
}

// TestChartServerDryRun applies the rendered chart with a server-side dry run against the local
// API server: every object passes the API server's validation and admission.
func TestChartServerDryRun(t *testing.T) {
	kubeconfig := os.Getenv("GANTRY_TEST_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("GANTRY_TEST_KUBECONFIG not set (make test starts the local cluster)")
	}
	kubectl := tool(t, "kubectl")
	ns := fmt.Sprintf("gantry-chart-%d", time.Now().UnixNano()%1_000_000)
	if out, err := run(t, nil, kubectl, "--kubeconfig", kubeconfig, "create", "namespace", ns); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = run(t, nil, kubectl, "--kubeconfig", kubeconfig, "delete", "namespace", ns, "--wait=false")
	})
	objs := render(t, ns)
	var all bytes.Buffer
	for _, o := range objs {
		all.WriteString("---\n")
		all.Write(o.YAML)
	}
	out, err := run(t, &all, kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "--dry-run=server",
		"--field-manager=helm-dry-run", "-f", "-")
	if err != nil {
		t.Fatalf("server dry run: %v\n%s", err, out)
	}
	for _, o := range objs {
		if !strings.Contains(out, "/"+o.Name+" serverside-applied (server dry run)") {
			t.Errorf("%s %s not applied by the dry run:\n%s", o.Kind, o.Name, out)
		}
	}
	t.Logf("%d objects pass a server-side dry run:\n%s", len(objs), out)
}

func contains(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}
