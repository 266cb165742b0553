package v1alpha1

// Autoscaling shared by Workspaces (spec.autoscaling, inference) and Performers
// (spec.autoscaling, strategy RollingUpdate): internal/autoscale builds the
// HorizontalPodAutoscaler from it.

// Autoscaling is spec.autoscaling: the replica bounds and what scales between them.
// +kubebuilder:validation:XValidation:rule="self.maxReplicas >= self.minReplicas",message="spec.autoscaling.maxReplicas must be at least minReplicas"
// +kubebuilder:validation:XValidation:rule="(has(self.external) && self.external) != has(self.metric)",message="spec.autoscaling needs a metric (a HorizontalPodAutoscaler scales on it), or external = true (an external autoscaler such as a KEDA ScaledObject scales the Deployment) without one"
type Autoscaling struct {
	// MinReplicas is the fewest replicas (1-64): the Deployment is created with them, and the
	// object (workspace, performer) is Ready while at least this many are.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MinReplicas int32 `json:"minReplicas"`
	// MaxReplicas is the most replicas (1-64, at least minReplicas; 64 is a workspace's
	// spec.resource.count cap).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MaxReplicas int32 `json:"maxReplicas"`
	// External: an autoscaler of the user's owns the replicas (a KEDA ScaledObject whose
	// scaleTargetRef is the Deployment workspace-<name> or performer-<name>, with the same
	// bounds): no HorizontalPodAutoscaler is made, and the replicas are left to it.
	// +optional
	External bool `json:"external,omitempty"`
	// Metric is what the HorizontalPodAutoscaler scales on (not with external).
	// +optional
	Metric *AutoscalingMetric `json:"metric,omitempty"`
}

// AutoscalingMetric is one HorizontalPodAutoscaler metric (autoscaling/v2 MetricSpec), each with
// an average-value target: exactly one of cpuAverageValue (type Resource), pods (type Pods)
// and external (type External).
// +kubebuilder:validation:XValidation:rule="[has(self.cpuAverageValue), has(self.pods), has(self.external)].filter(x, x).size() == 1",message="spec.autoscaling.metric needs exactly one of cpuAverageValue, pods and external"
type AutoscalingMetric struct {
	// CPUAverageValue is the CPU each pod should use on average, a quantity such as "2" or
	// "1500m" (a Resource metric, target type AverageValue: a workspace's pods request no
	// CPU, so a utilization target would have nothing to be a percentage of).
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	CPUAverageValue string `json:"cpuAverageValue,omitempty"`
	// Pods is a per-pod metric of the custom metrics API (e.g. vLLM's
	// vllm:num_requests_waiting through a Prometheus adapter, the metric KAITO's KEDA scaler
	// uses, or a performer's tasks in flight), averaged over the pods (a Pods metric).
	// +optional
	Pods *AutoscalingMetricSource `json:"pods,omitempty"`
	// External is a metric of the external metrics API (a queue's length, a gateway's request
	// rate), divided by the pods (an External metric, target type AverageValue).
	// +optional
	External *AutoscalingMetricSource `json:"external,omitempty"`
}

// AutoscalingMetricSource names a custom or external metric and its average-value target.
type AutoscalingMetricSource struct {
	// Name of the metric, as the metrics API serves it (no '/' or '%').
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_:.][A-Za-z0-9_:.-]*$`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// AverageValue is the target value per pod, a quantity above 0 such as "5" or "500m".
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`
	// +kubebuilder:validation:MaxLength=32
	AverageValue string `json:"averageValue"`
	// Selector holds the metric's labels (key → value; the metric identifier's matchLabels), at
	// most 16.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	Selector map[string]string `json:"selector,omitempty"`
}
