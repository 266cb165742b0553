package reconciler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
// waits until each is Established, or until timeout. Needs create/patch/get on
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
