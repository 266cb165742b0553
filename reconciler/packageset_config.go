package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// Package config ConfigMaps. Each (set, package, config content) has one immutable ConfigMap
// in the Job namespace, named packageset.ConfigMapName, labelled managed-by, package set and
// package (so the manager's ConfigMap cache, restricted to managed-by, holds them), and owned
// by the PackageSet: deleting the set deletes them (Kubernetes garbage collector, after the
// finalizer's uninstall stages, which still mount theirs, are done). The stage Jobs mount the
// one of the spec their record keeps, so a rollback or a removed package's uninstall runs with
// its own version's config. While the set is complete, pruneConfigMaps deletes the ones no
// wanted package or node record refers to any more (e.g. the previous content after a
// config change converged); a later Job that needs one again re-creates it.

// ensureConfigMap makes sure the set's config ConfigMap name (for pkg, holding data) exists
// before a Job mounts it: the informer cache answers (no API request per Job); on a miss it is
// created (AlreadyExists is success) and remembered until the cache shows it, so the Jobs of
// one pass on many nodes create it once. A ConfigMap deleted behind our back (seen gone by
// the cache) is created again.
func (r *PackageSetReconciler) ensureConfigMap(ctx context.Context, set *v1alpha1.PackageSet, pkg, name string, data map[string]string) error {
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.JobNamespace, Name: name}, &corev1.ConfigMap{})
	switch {
	case err == nil:
		delete(r.cfgCreated, name)
		return nil
	case !apierrors.IsNotFound(err):
		return err
	case r.cfgCreated[name]:
		return nil // created by us, not in the cache yet
	}
	immutable := true
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.JobNamespace, Labels: map[string]string{
			v1alpha1.LabelManagedBy: performer.ManagedBy, v1alpha1.LabelPackageSet: set.Name, v1alpha1.LabelPackage: pkg}},
		Immutable: &immutable,
		Data:      data,
	}
	if err := controllerutil.SetOwnerReference(set, cm, r.Scheme); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	r.cfgCreated[name] = true
	return nil
}

// pruneConfigMaps deletes the set's config ConfigMaps (listed from the cache) that neither a
// wanted package nor any node record (its spec, its previous version's spec) of plans refers
// to (packageset.ConfigMapsInUse). The caller runs it only while the set is complete: no
// stage pod is then waiting to mount one. Errors: a failed delete (NotFound is success).
func (r *PackageSetReconciler) pruneConfigMaps(ctx context.Context, set *v1alpha1.PackageSet, wants []packageset.Want, plans []packageset.NodePlan) error {
	var list corev1.ConfigMapList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.JobNamespace), client.MatchingLabels{v1alpha1.LabelPackageSet: set.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return nil
	}
	records := make([]*packageset.NodeRecord, 0, len(plans))
	for _, np := range plans {
		records = append(records, np.Record)
	}
	inUse := packageset.ConfigMapsInUse(set.Name, wants, records)
	for i := range list.Items {
		cm := &list.Items[i]
		if inUse[cm.Name] || !ownedBy(cm, set) {
			continue
		}
		del := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace}}
		if err := r.Client.Delete(ctx, del, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return err
		}
		r.cfgMu.Lock()
		delete(r.cfgCreated, cm.Name)
		r.cfgMu.Unlock()
		r.Recorder.Eventf(set, corev1.EventTypeNormal, "ConfigPruned", "deleted config ConfigMap %s/%s: no node or package refers to it", cm.Namespace, cm.Name)
	}
	return nil
}

// ownedBy: o has an owner reference to set (by UID).
func ownedBy(o metav1.Object, set *v1alpha1.PackageSet) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == set.UID {
			return true
		}
	}
	return false
}
