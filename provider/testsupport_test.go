package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// Fixtures shared by several test files: one copy each.

// badPerformer, badExecutor and badWorkspace are a minimal valid resource named "bad" plus
// body, the configurations the plan-time validation tables break one attribute of.
func badPerformer(body string) string {
	return "resource \"gantry_performer\" \"bad\" {\n  name  = \"bad\"\n  image = \"i\"\n" + body + "\n}\n"
}

func badExecutor(body string) string {
	return `resource "gantry_executor" "bad" {
  name                = "bad"
  image               = "x"
  aggregator_endpoint = "agg:9010"
  chains              = [{ name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x` + strings.Repeat("ab", 20) + `" }]
  operator_keys       = { secret_name = "k", ecdsa_key = "e" }
` + body + "\n}\n"
}

func badWorkspace(body string) string {
	return "resource \"gantry_workspace\" \"bad\" {\n  name = \"bad\"\n" + body + "\n}\n"
}

// realNodeEchoWorkspace is a CPU workspace serving the test model server on the real node
// (the real-node tests' workspace), named name in ns.
func realNodeEchoWorkspace(name, ns string) string {
	return fmt.Sprintf(`
resource "gantry_workspace" "real" {
  name      = %q
  namespace = %q
  resource = {
    gpu_count      = 0
    label_selector = { "gantry.dev/node-pool" = "real" }
  }
  tolerations = [%s]
  inference = {
    model = "gantry-echo"
    image = %q
    port  = 8000
  }
  timeouts = { create = "3m", update = "3m", delete = "2m" }
}
`, name, ns, realNodeToleration, testModelServerImage)
}

// noNodeClaimsLeft is a CheckDestroy: no NodeClaim matching list (the workspaces' namespace
// label) is left; what names the workspaces in the error.
func noNodeClaimsLeft(c *kube.Clients, list metav1.ListOptions, what string) func(*terraform.State) error {
	return func(*terraform.State) error {
		claims, err := c.Dynamic.Resource(nodeClaimGVR).List(context.Background(), list)
		if err != nil {
			return err
		}
		if len(claims.Items) > 0 {
			return fmt.Errorf("%d NodeClaims of the %s left after destroy", len(claims.Items), what)
		}
		return nil
	}
}

// releaseSigner signs releases with an ECDSA P-256 key made for the test, as
// `cosign sign-blob --key` does (ASN.1 DER over SHA-256, base64).
type releaseSigner struct {
	k   *ecdsa.PrivateKey
	pub string
}

func newReleaseSigner() (releaseSigner, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return releaseSigner{}, err
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	if err != nil {
		return releaseSigner{}, err
	}
	return releaseSigner{k: k, pub: string(pub)}, nil
}

// signRelease is the base64 signature of the release payload of pkgs signed at signedAt.
func (s releaseSigner) signRelease(pkgs []v1alpha1.Package, signedAt string) (string, error) {
	h := sha256.Sum256(packageset.ReleasePayload(pkgs, signedAt))
	sig, err := ecdsa.SignASN1(rand.Reader, s.k, h[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// watchPoolInFlight watches the pool's nodes and, after each node event, calls record with
// every node seen so far and whether it is in flight for any of sets (from the nodes'
// annotations, as the reconciler counts a fleet budget). record runs on the watch goroutine.
func watchPoolInFlight(t *testing.T, c *kube.Clients, pool string, sets []string, record func(inFlight map[string]bool)) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := c.Core.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: "gantry.dev/test-pool=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			flight := false
			for _, set := range sets {
				_, cordon := n.Annotations[v1alpha1.AnnotationCordonPrefix+set]
				var rec *packageset.NodeRecord
				if raw, has := n.Annotations[v1alpha1.AnnotationNodeStatePrefix+set]; has {
					rec = &packageset.NodeRecord{}
					_ = json.Unmarshal([]byte(raw), rec)
				}
				flight = flight || packageset.InFlightFor(rec, cordon && n.Spec.Unschedulable)
			}
			in[n.Name] = flight
			record(in)
		}
	}()
}

// waitKwokNodeReady waits up to 2 minutes until kwok manages the node name (it holds the
// node's Lease and its node-initialize stage set Ready=True). kwok skips a pod bound to a node
// it does not manage yet, and a workspace placed before then finds no Ready node.
func waitKwokNodeReady(t *testing.T, c *kube.Clients, name string) {
	t.Helper()
	err := kwait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := c.Core.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s not Ready: %v", name, err)
	}
}

// stateCheckFunc is a statecheck.StateCheck made of a function of the state: a check that also
// reads the cluster, for a configuration with modules (a step's legacy Check cannot read those).
type stateCheckFunc func(*tfjson.State) error

func (f stateCheckFunc) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = f(req.State)
}
