package executor

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// A key rotation (operatorKeys.secretVersion) changes the pod template — its annotation
// gantry.dev/operator-keys-version and so the revision — and nothing else; without a Secret
// the version is ignored.
func TestDesiredDeployment_operatorKeysVersionRollsPods(t *testing.T) {
	exec := func(secret, version string) *v1alpha1.Executor {
		e := &v1alpha1.Executor{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "avs"}}
		e.Spec.Image = "ghcr.io/layr-labs/hourglass-executor:v1"
		e.Spec.OperatorKeys = v1alpha1.OperatorKeys{SecretName: secret, ECDSAKey: "ecdsa", SecretVersion: version}
		if secret == "" {
			e.Spec.OperatorKeys = v1alpha1.OperatorKeys{RemoteSignerURL: "https://signer", SecretVersion: version}
		}
		return e
	}
	rev := func(e *v1alpha1.Executor) (string, map[string]string) {
		d, err := DesiredDeployment(e, "cm", "hash")
		if err != nil {
			t.Fatal(err)
		}
		return Revision(&d.Spec.Template), d.Spec.Template.Annotations
	}
	r0, a0 := rev(exec("keys", ""))
	r1, a1 := rev(exec("keys", "1"))
	r2, a2 := rev(exec("keys", "2"))
	if _, ok := a0[v1alpha1.AnnotationOperatorKeysVersion]; ok {
		t.Errorf("no version: annotation set: %v", a0)
	}
	if a1[v1alpha1.AnnotationOperatorKeysVersion] != "1" || a2[v1alpha1.AnnotationOperatorKeysVersion] != "2" {
		t.Errorf("annotations: %v, %v", a1, a2)
	}
	if r0 == r1 || r1 == r2 || r0 == r2 {
		t.Errorf("revisions do not change with the keys version: %s %s %s", r0, r1, r2)
	}
	if r3, a3 := rev(exec("", "3")); a3[v1alpha1.AnnotationOperatorKeysVersion] != "" || r3 == "" {
		t.Errorf("remote signer: version annotation %q (want none), revision %q", a3[v1alpha1.AnnotationOperatorKeysVersion], r3)
	}
}
