package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
)

// woExecutorConfig is a performer and an executor whose operator keys are given by keys (HCL
// attributes inside operator_keys), with the ephemeral, sensitive variables ecdsa and bls
// (Terraform >= 1.10) that carry the keys as a pipeline would pass them (TF_VAR_*).
func woExecutorConfig(ns, keys string) string {
	return requiredGantry + fmt.Sprintf(`
provider "gantry" {}

variable "ecdsa" {
  type      = string
  default   = null
  sensitive = true
  ephemeral = true
}

variable "bls" {
  type      = string
  default   = null
  sensitive = true
  ephemeral = true
}

resource "gantry_performer" "p" {
  name      = "perf"
  namespace = %[1]q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}

resource "gantry_executor" "x" {
  name                = "exec"
  namespace           = %[1]q
  image               = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  performer_names     = [gantry_performer.p.name]
  chains = [{ name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x%[3]s" }]
  operator_keys = {
%[2]s
  }
}
`, ns, keys, strings.Repeat("ab", 20))
}

// Write-only operator keys (Terraform >= 1.11): the executor takes its ECDSA and BLS
// keys as write-only attributes. The provider writes them into the Secret exec-operator-keys,
// owned by the Executor, and the pods get them by reference; bumping
// private_keys_wo_version rotates them (new Secret data, the pod template's
// gantry.dev/operator-keys-version changes so the pods roll); moving to a remote signer
// deletes the Secret. No key appears in the state, in any saved plan (JSON) or in the trace
// logs of Terraform and the provider.
func TestAccExecutor_writeOnlyKeys(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.11.0", "write-only attributes")
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-wo")
	ecdsa1, bls1 := "0xecdsa1"+rand.String(24), "0xbls1"+rand.String(24)
	ecdsa2, bls2 := "0xecdsa2"+rand.String(24), "0xbls2"+rand.String(24)
	keys := func(version int) string {
		return fmt.Sprintf("    ecdsa_private_key_wo = var.ecdsa\n    bls_private_key_wo = var.bls\n    private_keys_wo_version = %d\n", version)
	}

	cli := newCLI(t)
	logFile := filepath.Join(t.TempDir(), "trace.log")
	base := append(cli.env, "TF_LOG=trace", "TF_LOG_PATH="+logFile)
	setKeys := func(ecdsa, bls string) {
		cli.env = append(append([]string(nil), base...), "TF_VAR_ecdsa="+ecdsa, "TF_VAR_bls="+bls)
	}
	setKeys(ecdsa1, bls1)
	dir := cli.workdir(t, woExecutorConfig(ns, keys(1)))
	apply := func(step string) {
		t.Helper()
		if out, code := cli.run(t, dir, "plan", "-out=tfplan", "-input=false", "-no-color"); code != 0 {
			t.Fatalf("%s: plan exited %d:\n%s", step, code, out)
		}
		planJSON, code := cli.run(t, dir, "show", "-json", "tfplan")
		if code != 0 {
			t.Fatalf("%s: show -json exited %d", step, code)
		}
		if err := os.WriteFile(filepath.Join(dir, "plan-"+step+".json"), []byte(planJSON), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, code := cli.run(t, dir, "apply", "-input=false", "-no-color", "tfplan"); code != 0 {
			t.Fatalf("%s: apply exited %d:\n%s", step, code, out)
		}
	}
	checkSecret := func(step, ecdsa, bls, version string) {
		t.Helper()
		s, err := c.Core.CoreV1().Secrets(ns).Get(context.Background(), "exec-operator-keys", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if string(s.Data[woECDSAKey]) != ecdsa || string(s.Data[woBLSKey]) != bls || s.Annotations[v1alpha1.AnnotationOperatorKeysVersion] != version {
			t.Errorf("%s: Secret exec-operator-keys holds other keys or version %q (want %s)", step, s.Annotations[v1alpha1.AnnotationOperatorKeysVersion], version)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Executor" || s.OwnerReferences[0].Name != "exec" {
			t.Errorf("%s: Secret owner references %v, want the Executor exec", step, s.OwnerReferences)
		}
		d, err := c.Core.AppsV1().Deployments(ns).Get(context.Background(), executor.DeploymentName("exec"), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := d.Spec.Template.Annotations[v1alpha1.AnnotationOperatorKeysVersion]; got != version {
			t.Errorf("%s: pod template %s = %q, want %q", step, v1alpha1.AnnotationOperatorKeysVersion, got, version)
		}
	}

	apply("create")
	checkSecret("create", ecdsa1, bls1, "1")

	// Rotation: new keys and version 2.
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(woExecutorConfig(ns, keys(2))), 0o600); err != nil {
		t.Fatal(err)
	}
	setKeys(ecdsa2, bls2)
	apply("rotate")
	checkSecret("rotate", ecdsa2, bls2, "2")
	if out, code := cli.run(t, dir, "plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Errorf("plan after the rotation: exit %d, want 0:\n%s", code, out)
	}

	// A remote signer instead: the provider-owned Secret goes.
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(woExecutorConfig(ns, `    remote_signer_url = "https://signer.example.com"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	apply("remote-signer")
	if _, err := c.Core.CoreV1().Secrets(ns).Get(context.Background(), "exec-operator-keys", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after moving to a remote signer the Secret exec-operator-keys is still there (err %v)", err)
	}

	// Nowhere in state, plans or logs.
	files, _ := filepath.Glob(filepath.Join(dir, "plan-*.json"))
	files = append(files, filepath.Join(dir, "terraform.tfstate"), logFile)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty: nothing was checked", f)
		}
		for _, k := range []string{ecdsa1, bls1, ecdsa2, bls2} {
			if strings.Contains(string(b), k) {
				t.Errorf("%s contains a write-only key", filepath.Base(f))
			}
		}
	}
}
