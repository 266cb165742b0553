package provider

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// What the user writes reaches the cluster, empties and zeros included (issue 38 item 5; the
// table test is zero_roundtrip_*_test.go). Three helpers for the places a written empty got
// lost: a flatten that read an empty list back as null (emptyIfPrior), an empty object the API
// type requires that the spec's pruning removed (keepRequired), and server-side apply turning
// an object the configuration empties into null (applyKeepingEmpty).

// emptyIfPrior is the start of a flattened list: empty when prior (the state or plan the read
// refreshes) holds an empty list, so a configuration's [] reads back as [] and not as null
// (which every later plan would want to change back); nil otherwise.
func emptyIfPrior[T any](prior []T) []T {
	if prior != nil && len(prior) == 0 {
		return []T{}
	}
	return nil
}

// keepRequired puts back into m, the spec converted from v, the empty objects of fields v's
// API type declares without omitempty, which the CRD then requires: toSpecMap drops every empty
// value struct, but a compartment's or a wave's selector with neither labels nor expressions
// is `selector: {}` (every node), and without it the API server refuses the object
// ("selector: Required value"). It walks m along v: nested objects, and the elements of lists
// that have one element per element of v's slice.
func keepRequired(m map[string]interface{}, v reflect.Value) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" || name == "" || strings.Contains(opts, "inline") {
			continue
		}
		f := v.Field(i)
		switch e := m[name].(type) {
		case map[string]interface{}:
			keepRequired(e, f)
		case []interface{}:
			if f.Kind() == reflect.Slice && f.Len() == len(e) {
				for j, el := range e {
					if em, ok := el.(map[string]interface{}); ok {
						keepRequired(em, f.Index(j))
					}
				}
			}
		case nil:
			if _, present := m[name]; !present && f.Kind() == reflect.Struct && !strings.Contains(opts, "omitempty") {
				sub := map[string]interface{}{}
				keepRequired(sub, f)
				m[name] = sub
			}
		}
	}
}

// applyKeepingEmpty is applyObject, working around server-side apply turning an object the
// configuration empties into null: when obj writes {} where this field manager had written
// fields (hourglass_compat = {} after l1_chain was set, systemd_failed_units = {} after max,
// drain = {} after grace_period), structured-merge-diff removes the manager's fields and
// leaves null, which the CRD's schema refuses (422 "in body must be of type object: "null"";
// kubernetes/kubernetes#117447, #135841). On that refusal those objects are first emptied by a
// JSON patch (an update, which the merge keeps as {}), and obj is applied again. Any other
// outcome is applyObject's.
func applyKeepingEmpty(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, err := applyObject(ctx, ri, obj)
	if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `must be of type object: "null"`) {
		return out, err
	}
	live, gerr := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if gerr != nil {
		return nil, err
	}
	ops := emptiedObjects(obj.Object["spec"], live.Object["spec"], "/spec")
	if len(ops) == 0 {
		return nil, err
	}
	body, merr := json.Marshal(ops)
	if merr != nil {
		return nil, err
	}
	if _, perr := ri.Patch(ctx, obj.GetName(), k8stypes.JSONPatchType, body, metav1.PatchOptions{FieldManager: fieldManager}); perr != nil {
		return nil, err
	}
	tflog.Debug(ctx, "emptied the objects the configuration writes as {} before applying again (server-side apply would leave null)",
		map[string]interface{}{"operations": len(ops)})
	return applyObject(ctx, ri, obj)
}

// emptiedObjects lists the JSON patch operations that empty, in live, the objects want
// writes as {} and live holds filled; at is want's JSON pointer. Lists are walked element by
// element when they have the same length.
func emptiedObjects(want, live interface{}, at string) []map[string]interface{} {
	var ops []map[string]interface{}
	switch w := want.(type) {
	case map[string]interface{}:
		l, ok := live.(map[string]interface{})
		if !ok {
			return nil
		}
		if len(w) == 0 && len(l) > 0 {
			return []map[string]interface{}{{"op": "replace", "path": at, "value": map[string]interface{}{}}}
		}
		for k, e := range w {
			ops = append(ops, emptiedObjects(e, l[k], at+"/"+jsonPointerEscape(k))...)
		}
	case []interface{}:
		l, ok := live.([]interface{})
		if !ok || len(l) != len(w) {
			return nil
		}
		for i := range w {
			ops = append(ops, emptiedObjects(w[i], l[i], at+"/"+strconv.Itoa(i))...)
		}
	}
	return ops
}
