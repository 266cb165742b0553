package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	kwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Writing to the API server: server-side apply with retries, convergence of what apply
// cannot remove, and delete-and-wait.

// fieldManager is the server-side apply field manager of every object the provider writes.
const fieldManager = "terraform-provider-gantry"

// resourceFor returns the namespaced dynamic client of gvr.
func resourceFor(dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	return dyn.Resource(gvr).Namespace(namespace)
}

// serverSideApply writes obj with server-side apply as fieldManager, forcing conflicts: the
// configuration is the source of truth for every field it sets.
func serverSideApply(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
}

// writeBackoff paces the retries of a write after a transient API error (retryWrite): 0.5 s
// doubling to at most 5 s, so a write resumes within 5 s of the API server answering again.
var writeBackoff = kwait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 5 * time.Second}

// retryWrite runs write until it succeeds, fails with an error that is not transient, or ctx
// ends (the resource's create, update or delete timeout). Transient is failure.Transient less
// conflicts and AlreadyExists, which the callers handle themselves: 5xx (among them the API
// server's "Timeout: request did not complete within requested timeout" while etcd does not
// answer), 429, timeouts and connection errors. Every write retried here is idempotent
// (server-side apply, a delete with a UID precondition, an apply followed by a converge that is
// computed again from the apply's answer). When ctx ends it returns the last API error,
// wrapped with how long and how many times the write was tried; a permanent error is returned
// as it is.
func retryWrite(ctx context.Context, what string, write func(context.Context) error) error {
	start, b := time.Now(), writeBackoff
	for attempt := 1; ; attempt++ {
		err := write(ctx)
		if err == nil || !failure.Transient(err) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%s retried for %s, %d attempts, until the timeout)", err, what, time.Since(start).Round(time.Second), attempt)
		}
		tflog.Warn(ctx, what+": transient API error, retrying", map[string]interface{}{"attempt": attempt, "error": err.Error()})
		timer := time.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (%s retried for %s, %d attempts, until the timeout)", err, what, time.Since(start).Round(time.Second), attempt)
		case <-timer.C:
		}
	}
}

// applyObject writes obj with serverSideApply and then converges (see converge), returning
// the object as the API server has it afterwards. Transient API errors are retried until ctx
// ends (retryWrite).
func applyObject(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := retryWrite(ctx, "server-side apply of "+obj.GetKind()+" "+objectID(obj.GetNamespace(), obj.GetName()), func(ctx context.Context) error {
		var err error
		out, err = applyOnce(ctx, ri, obj)
		return err
	})
	return out, err
}

// applyOnce is one serverSideApply and converge of obj.
func applyOnce(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live, err := serverSideApply(ctx, ri, obj)
	if err != nil {
		return nil, err
	}
	out, err := converge(ctx, ri, obj, live)
	if apierrors.IsNotFound(err) && live.GetDeletionTimestamp() != nil {
		// The apply let a pending deletion finish (e.g. uninstall_on_delete = false on a package
		// set whose destroy stopped): the object is gone; the caller sees it as being deleted.
		return live, nil
	}
	return out, err
}

// deleteAndWait deletes live (the object as last read) with background propagation and a UID
// precondition, so a re-created namesake is never deleted by mistake, then waits until it is
// gone. NotFound is success; Conflict means a newer object of that name exists, so ours is
// gone too. known (nil or live) seeds the wait with the object already read. Errors: API
// failures and wait errors, as diagnostics.
func deleteAndWait(ctx context.Context, ri dynamic.ResourceInterface, reg *wait.Registry, spec wait.Spec, live, known *unstructured.Unstructured) diag.Diagnostics {
	var diags diag.Diagnostics
	ns, name, uid := live.GetNamespace(), live.GetName(), live.GetUID()
	policy := metav1.DeletePropagationBackground
	err := retryWrite(ctx, "delete of "+spec.Kind+" "+objectID(ns, name), func(ctx context.Context) error {
		return ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	})
	if apierrors.IsNotFound(err) {
		return diags
	}
	if err != nil && !apierrors.IsConflict(err) {
		diags.Append(apiDiagnostic(spec.Kind, "Deleting", err))
		return diags
	}
	tflog.Debug(ctx, spec.Kind+" deleted; waiting until it is gone")
	if err := reg.WaitDeleted(ctx, spec, wait.Target{Namespace: ns, Name: name, UID: string(uid), Known: known}); err != nil {
		diags.Append(waitDiagnostic(spec.Kind, opDelete, objectID(ns, name), err))
	}
	return diags
}

// converge removes what server-side apply leaves behind: entries of maps and map-lists (env,
// node_selector, labels, ...) that another field manager added and the configuration does not
// have. Apply only removes fields this manager owned, so without this step such entries would
// show as drift on every plan. desired is the applied object; live is apply's response. It
// sends one JSON patch when something differs and returns the patched object (or live).
func converge(ctx context.Context, ri dynamic.ResourceInterface, desired, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var ops []map[string]interface{}
	want, err := normalizeJSON(desired.Object["spec"])
	if err != nil {
		return nil, err
	}
	have, err := normalizeJSON(live.Object["spec"])
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(want, have) {
		ops = append(ops, map[string]interface{}{"op": "replace", "path": "/spec", "value": want})
	}
	for _, f := range []struct {
		field string
		want  map[string]string
		have  map[string]string
	}{
		{"labels", desired.GetLabels(), live.GetLabels()},
		{"annotations", desired.GetAnnotations(), live.GetAnnotations()},
	} {
		for k := range f.have {
			if _, ok := f.want[k]; !ok && !isSystemKey(k) {
				ops = append(ops, map[string]interface{}{"op": "remove", "path": "/metadata/" + f.field + "/" + jsonPointerEscape(k)})
			}
		}
	}
	if len(ops) == 0 {
		return live, nil
	}
	tflog.Debug(ctx, "removing fields other managers added", map[string]interface{}{"object": live.GetNamespace() + "/" + live.GetName(), "operations": len(ops)})
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	return ri.Patch(ctx, live.GetName(), k8stypes.JSONPatchType, body, metav1.PatchOptions{FieldManager: fieldManager})
}
