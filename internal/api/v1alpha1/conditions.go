package v1alpha1

// Condition types shared by every Gantry kind. They follow kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus) so `kubectl wait --for=condition=Ready`, Flux and
// Argo CD health checks work unchanged: Reconciling=True while work is under way,
// Stalled=True when progress needs a change from the user, Ready=True when done.
// Ready is always present once an object has been reconciled.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Annotation and label keys, all under the gantry.dev/ prefix.
const (
	// LabelPerformer is set on a Performer's Pod and used as its Service selector; value: the Performer's name.
	LabelPerformer = "gantry.dev/performer"
	// LabelManagedBy marks objects the reconciler owns; value: ManagedBy.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the LabelManagedBy value of every object the reconciler creates; its
	// informer caches hold only objects carrying it.
	ManagedBy = "gantry-reconciler"
	// AnnotationSpecHash on an owned Pod holds the hash of the Performer spec fields that
	// require a new Pod (image, version, command, env, ...); a mismatch means an upgrade.
	AnnotationSpecHash = "gantry.dev/spec-hash"
	// AnnotationOperatorKeysVersion on an executor's pod template holds
	// spec.operatorKeys.secretVersion, so a key rotation rolls the pods.
	AnnotationOperatorKeysVersion = "gantry.dev/operator-keys-version"
	// AnnotationRestartedAt on a Performer asks for its Pod to be replaced (the
	// gantry_performer_restart action, or kubectl annotate): the value (a timestamp) is part of
	// the Pod's spec hash, so a new value is an upgrade of the Pod, and is copied to the Pod.
	AnnotationRestartedAt = "gantry.dev/restartedAt"
	// AnnotationReconcileRequestedAt on a Performer or Workspace asks the reconciler to say
	// when it has handled the object as it is now: its value (any token; the provider writes
	// the apply's time, RFC 3339 with nanoseconds) is copied to status.lastHandledReconcileAt
	// by the pass that read it, as Flux's reconcile.fluxcd.io/requestedAt. A change of labels
	// leaves metadata.generation as it is, yet the labels reach the pods (a rollout): after
	// such an apply only this handshake tells that the status is about the new labels.
	AnnotationReconcileRequestedAt = "gantry.dev/reconcileRequestedAt"
	// Finalizer is put on every Gantry object so deletion waits for the owned objects to go.
	Finalizer = "gantry.dev/finalizer"
)
