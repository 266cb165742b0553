package reconciler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// EmbeddedCRDs returns the CustomResourceDefinitions embedded in v1alpha1.CRDs (crds/*.yaml),
// as unstructured objects ready for server-side apply, in file order.
func EmbeddedCRDs() ([]*unstructured.Unstructured, error) {
	files, err := fs.Glob(v1alpha1.CRDs, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := fs.ReadFile(v1alpha1.CRDs, f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GetKind() != "CustomResourceDefinition" {
				return nil, fmt.Errorf("%s: unexpected kind %q", f, u.GetKind())
			}
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no CRDs embedded")
	}
	return out, nil
}

// InstallCRDs applies the embedded CRDs with server-side apply (field manager
// gantry-reconciler, forcing ownership of conflicting fields: the reconciler's CRDs win) and
// waits until each is Established, or until timeout. A CRD already in the cluster that declares
// fields the embedded one lacks (NewerFields: installed by a newer reconciler or chart) is left
// as it is, with a log line naming them, so an older replica restarting never downgrades it
// (which would make the API server drop those fields from the objects it serves) and two
// versions never flip it back and forth. Needs create/patch/get on
// customresourcedefinitions.apiextensions.k8s.io.
func InstallCRDs(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	c, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		return err
	}
	crds, err := EmbeddedCRDs()
	if err != nil {
		return err
	}
	for _, u := range crds {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		if err := c.Get(ctx, types.NamespacedName{Name: u.GetName()}, live); err == nil {
			if newer := NewerFields(live, u); len(newer) > 0 {
				// A newer reconciler (or chart) installed it: downgrading would make the API
				// server drop those fields from every object it serves.
				log.FromContext(ctx).Info("not downgrading a newer CRD: it declares fields this reconciler does not know; upgrade the reconciler",
					"crd", u.GetName(), "newerFields", newer)
				continue
			}
		}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply CRD %s: %w", u.GetName(), err)
		}
	}
	for _, u := range crds {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, types.NamespacedName{Name: u.GetName()}, &crd); err != nil {
				last = err.Error()
				return false, nil //nolint:nilerr // keep polling; last carries the error into the timeout message
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
				if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
					last = "NamesAccepted=False: " + cond.Message
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established after %s: %w (%s)", u.GetName(), timeout, err, last)
		}
	}
	return nil
}

// NewerFields lists the schema properties ("v1alpha1: spec.autoscaling.minReplicas") that live,
// a CRD in the cluster, declares and embedded, the reconciler's own, does not, per served
// version present in both, sorted; nil when live declares nothing more (equal or older).
func NewerFields(live, embedded *unstructured.Unstructured) []string {
	own := map[string]map[string]bool{}
	for _, v := range crdVersions(embedded) {
		own[v.name] = v.props
	}
	var out []string
	for _, v := range crdVersions(live) {
		mine, ok := own[v.name]
		if !ok {
			continue
		}
		for p := range v.props {
			if !mine[p] {
				out = append(out, v.name+": "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// crdVersion is one version of a CRD and the dotted paths of its schema's properties.
type crdVersion struct {
	name  string
	props map[string]bool
}

// crdVersions reads spec.versions[].schema.openAPIV3Schema of an unstructured CRD.
func crdVersions(u *unstructured.Unstructured) []crdVersion {
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	var out []crdVersion
	for _, v := range versions {
		vm, ok := v.(map[string]interface{})
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(vm, "name")
		schema, _, _ := unstructured.NestedMap(vm, "schema", "openAPIV3Schema")
		props := map[string]bool{}
		schemaPaths(schema, "", props)
		out = append(out, crdVersion{name: name, props: props})
	}
	return out
}

// schemaPaths adds the dotted path of every property under s (an OpenAPI v3 schema) to into,
// through nested objects and the items of arrays.
func schemaPaths(s map[string]interface{}, prefix string, into map[string]bool) {
	if props, ok := s["properties"].(map[string]interface{}); ok {
		for k, sub := range props {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			into[p] = true
			if m, ok := sub.(map[string]interface{}); ok {
				schemaPaths(m, p, into)
			}
		}
	}
	if items, ok := s["items"].(map[string]interface{}); ok {
		schemaPaths(items, prefix+"[]", into)
	}
}
