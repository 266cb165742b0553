package reconciler

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A CRD in the cluster that declares fields the reconciler's embedded copy lacks is newer: the
// reconciler names them and leaves it (InstallCRDs); an equal or older one is not.
func TestNewerFields(t *testing.T) {
	crds, err := EmbeddedCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var ws *unstructured.Unstructured
	for _, u := range crds {
		if u.GetName() == "workspaces.gantry.dev" {
			ws = u
		}
	}
	if ws == nil {
		t.Fatal("no embedded workspaces.gantry.dev")
	}
	if got := NewerFields(ws, ws); got != nil {
		t.Errorf("the same CRD: %v", got)
	}
	newer := ws.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(newer.Object, "spec", "versions")
	v0 := versions[0].(map[string]interface{})
	if err := unstructured.SetNestedField(v0, map[string]interface{}{"type": "object", "properties": map[string]interface{}{
		"warmPool": map[string]interface{}{"type": "integer"}}}, "schema", "openAPIV3Schema", "properties", "spec", "properties", "futureField"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(newer.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	want := []string{"v1alpha1: spec.futureField", "v1alpha1: spec.futureField.warmPool"}
	if got := NewerFields(newer, ws); !reflect.DeepEqual(got, want) {
		t.Errorf("newer CRD: %v, want %v", got, want)
	}
	if got := NewerFields(ws, newer); got != nil {
		t.Errorf("an older CRD in the cluster is not newer: %v", got)
	}
}
