package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Performer autoscaling (issue 40 item 8; Hourglass's roadmap 6.3 "HPA integration for
// performers") on the workspaces' model (workspace_autoscaling.go): gantry_performer's
// autoscaling block becomes spec.autoscaling, the same block and checks as gantry_workspace's,
// and needs strategy = "RollingUpdate" (the Deployment performer-<name> an autoscaler can
// scale; Recreate runs one bare Pod). The replicas the autoscaler sets are only read, into the
// computed current_replicas and desired_replicas, which no plan modifier touches: a plan that
// changes nothing keeps their refreshed values (no diff), one that changes something shows them
// as known after apply.

func performerAutoscalingAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: "Autoscaling of the performer's replicas that Terraform never fights: an autoscaler owns them between `min_replicas` and `max_replicas`.\n\n" +
			"It is Hourglass's roadmap item \"HPA integration for performers\" (Phase 6.3) on the model of `gantry_workspace`'s `autoscaling`. " +
			"Needs `strategy = \"RollingUpdate\"`: the performer then runs as the Deployment `performer-<name>`, which the autoscaler scales, and the " +
			"Service `performer-<name>` balances the executor's gRPC connections over its Ready pods. With `metric`, the reconciler creates a " +
			"HorizontalPodAutoscaler (`autoscaling/v2`) `performer-<name>` for that Deployment (owned by the performer, deleted with it); with " +
			"`external = true`, an autoscaler of yours does (a KEDA `ScaledObject` whose `scaleTargetRef` is the Deployment) and no HorizontalPodAutoscaler is made. " +
			"Either way the reconciler sets the Deployment's replicas only when it creates it (to `min_replicas`) and never writes them again, so it " +
			"never takes the autoscaler's count back, and Terraform never shows that count as a change: it is read into `current_replicas` and " +
			"`desired_replicas`. The apply waits until `min_replicas` pods of the current spec are Ready, and the performer stays `Running` while " +
			"at least that many are. Removing the block gives the Deployment its one replica back. " +
			"See the [Autoscaling workspaces and performers](../guides/workspace-autoscaling.md) guide.",
		Attributes: autoscalingAttributes("performer-<name>", "the performer is `Running`", "a performer's Deployment is capped as a workspace's",
			"The target is an absolute value per pod, not a percentage of `resources.requests.cpu`.",
			"A per-pod metric of the custom metrics API averaged over the pods (a `Pods` metric), e.g. the tasks each performer has in flight, "+
				"exported by the performer and served through a Prometheus adapter."),
	}
}

func performerCurrentReplicasAttribute() schema.Int64Attribute {
	return schema.Int64Attribute{Computed: true, MarkdownDescription: "The pods the performer has now (`status.currentReplicas`: the Deployment's pods, " +
		"or 1 for the bare Pod of `Recreate`), as read at the last refresh.\n\nRead only: an autoscaler changing it is never a diff (a plan that changes " +
		"nothing else keeps the refreshed value; one that changes something shows it as known after apply)."}
}

func performerDesiredReplicasAttribute() schema.Int64Attribute {
	return schema.Int64Attribute{Computed: true, MarkdownDescription: "The replicas asked for (`status.desiredReplicas`).\n\nWith `autoscaling` they are the " +
		"HorizontalPodAutoscaler's desired replicas (with an external autoscaler, the Deployment's replicas it set), else 1. Read only, as `current_replicas`."}
}

// validatePerformerAutoscaling checks gantry_performer's autoscaling block where its values
// are known: strategy must be RollingUpdate (the error names both attributes: an unset
// strategy is Recreate, the default), and the block itself as gantry_workspace's
// (checkAutoscalingBlock: bounds, metric).
func validatePerformerAutoscaling(root configValue, resp *resource.ValidateConfigResponse) {
	as := root.Attr("autoscaling")
	if as.Null() || as.Unknown() {
		return
	}
	at := path.Root("autoscaling")
	if st := root.Attr("strategy"); !st.Unknown() {
		strategy, _ := st.String()
		if strategy != string(v1alpha1.PerformerRollingUpdate) {
			shown := `unset (Recreate, the default)`
			if !st.Null() {
				shown = `"` + strategy + `"`
			}
			resp.Diagnostics.AddAttributeError(path.Root("strategy"), "Conflicting Attributes: strategy and autoscaling",
				"autoscaling needs strategy = \"RollingUpdate\" (strategy is "+shown+"): an autoscaler scales the Deployment performer-<name> that RollingUpdate runs, "+
					"and Recreate runs one bare Pod. Set strategy = \"RollingUpdate\", or remove autoscaling.")
		}
	}
	checkAutoscalingBlock(as, at, resp)
}
