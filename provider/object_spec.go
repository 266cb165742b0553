package provider

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Building the objects the provider applies from a model's spec struct, and reading status
// fields back.

// newObject builds a gantry.dev/v1alpha1 object of kind to server-side apply: metadata.name
// and namespace, labels and annotations when not empty, and spec.
func newObject(kind, name, namespace string, labels, annotations map[string]string, spec map[string]interface{}) *unstructured.Unstructured {
	meta := map[string]interface{}{"name": name, "namespace": namespace}
	if len(labels) > 0 {
		meta["labels"] = stringMapToInterface(labels)
	}
	if len(annotations) > 0 {
		meta["annotations"] = stringMapToInterface(annotations)
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": kind, "metadata": meta, "spec": spec,
	}}
}

// statusString is the string status.<field> of u as a computed attribute: null when absent or "".
func statusString(u *unstructured.Unstructured, field string) types.String {
	v, _, _ := unstructured.NestedString(u.Object, "status", field)
	if v == "" {
		return types.StringNull()
	}
	return types.StringValue(v)
}

func normalizeJSON(v interface{}) (interface{}, error) {
	if v == nil {
		return map[string]interface{}{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out interface{}
	return out, json.Unmarshal(b, &out)
}

func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// toSpecMap converts a typed spec (a pointer to an API struct) to the unstructured map the
// provider applies, with the empty objects no one wrote removed (pruneEmptyAs). Errors: the
// converter's, for a value it cannot represent.
func toSpecMap(spec interface{}) (map[string]interface{}, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		return nil, err
	}
	pruneEmptyAs(m, reflect.ValueOf(spec))
	return m, nil
}

// pruneEmptyAs removes nil values and empty maps from m, bottom-up, walking the typed value v
// that m was converted from. A value struct (resources, scheduling) converts to "{}" whether
// or not anyone set it, and applying that would make the provider the owner of empty objects,
// so it goes when empty; an object behind a non-nil pointer is one the user wrote (for example
// hourglass_compat = {}, the migration guide's own example) and stays, empty or not. Where v
// does not describe m (maps of maps, raw JSON), it falls back to pruneEmpty. Empty lists are kept.
func pruneEmptyAs(m map[string]interface{}, v reflect.Value) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			pruneEmpty(m)
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		pruneEmpty(m)
		return
	}
	fields := jsonFields(v)
	for k, e := range m {
		f, typed := fields[k]
		switch t := e.(type) {
		case nil:
			delete(m, k)
		case map[string]interface{}:
			if !typed {
				pruneEmpty(t)
			} else {
				pruneEmptyAs(t, f)
			}
			written := typed && f.Kind() == reflect.Pointer && !f.IsNil()
			if len(t) == 0 && !written {
				delete(m, k)
			}
		case []interface{}:
			pruneEmptyList(t, f, typed)
		}
	}
}

// pruneEmptyList prunes each object of the list t, walking the slice f when typed.
func pruneEmptyList(t []interface{}, f reflect.Value, typed bool) {
	sameLen := typed && (f.Kind() == reflect.Slice || f.Kind() == reflect.Array) && f.Len() == len(t)
	for i, e := range t {
		em, ok := e.(map[string]interface{})
		switch {
		case !ok:
		case sameLen:
			pruneEmptyAs(em, f.Index(i))
		default:
			pruneEmpty(em)
		}
	}
}

// jsonFields maps the JSON names of struct v's fields (inline fields flattened) to their values.
func jsonFields(v reflect.Value) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") || (name == "" && sf.Anonymous) {
			if fv := v.Field(i); fv.Kind() == reflect.Struct {
				maps.Copy(out, jsonFields(fv))
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = v.Field(i)
	}
	return out
}

// pruneEmpty removes nil values and empty maps from m, bottom-up, where no typed value says
// which of them were written (see pruneEmptyAs). Empty lists are kept.
func pruneEmpty(m map[string]interface{}) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]interface{}:
			pruneEmpty(t)
			if len(t) == 0 {
				delete(m, k)
			}
		case []interface{}:
			for _, e := range t {
				if em, ok := e.(map[string]interface{}); ok {
					pruneEmpty(em)
				}
			}
		}
	}
}
