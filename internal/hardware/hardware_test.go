package hardware

import (
	"errors"
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func gpus(n int64) corev1.ResourceList {
	return corev1.ResourceList{ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
}

func ptr(s string) *string { return &s }

var gpuToleration = corev1.Toleration{Key: TaintGPU, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

func TestPlace(t *testing.T) {
	userTol := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "avs", Effect: corev1.TaintEffectNoSchedule}
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}

	tests := []struct {
		name  string
		hw    v1alpha1.HardwareRequirements
		sched v1alpha1.Scheduling
		want  Placement
		// wantErr, when set, is the expected error (compared with reflect.DeepEqual).
		wantErr error
	}{
		{
			name: "no hardware, no scheduling: empty placement",
			want: Placement{},
		},
		{
			name: "GPU count only",
			hw:   v1alpha1.HardwareRequirements{GPUCount: 2},
			want: Placement{
				Requests:     gpus(2),
				Limits:       gpus(2),
				NodeSelector: map[string]string{LabelGPUPresent: "true"},
				Tolerations:  []corev1.Toleration{gpuToleration},
			},
		},
		{
			name: "GPU count and type: product label, no invented resource",
			hw:   v1alpha1.HardwareRequirements{GPUCount: 1, GPUType: "NVIDIA-H100-80GB-HBM3"},
			want: Placement{
				Requests:     gpus(1),
				Limits:       gpus(1),
				NodeSelector: map[string]string{LabelGPUPresent: "true", LabelGPUProduct: "NVIDIA-H100-80GB-HBM3"},
				Tolerations:  []corev1.Toleration{gpuToleration},
			},
		},
		{
			name: "GPU resource as Hourglass requests it: nvidia.com/<type> instead of nvidia.com/gpu",
			hw:   v1alpha1.HardwareRequirements{GPUCount: 2, GPUResource: "nvidia.com/a100"},
			want: Placement{
				Requests:     corev1.ResourceList{"nvidia.com/a100": *resource.NewQuantity(2, resource.DecimalSI)},
				Limits:       corev1.ResourceList{"nvidia.com/a100": *resource.NewQuantity(2, resource.DecimalSI)},
				NodeSelector: map[string]string{LabelGPUPresent: "true"},
				Tolerations:  []corev1.Toleration{gpuToleration},
			},
		},
		{
			name:    "GPU resource without a count",
			hw:      v1alpha1.HardwareRequirements{GPUResource: "nvidia.com/a100"},
			wantErr: &InvalidError{Field: "spec.hardwareRequirements.gpuCount", Detail: "must be > 0 with gpuResource nvidia.com/a100"},
		},
		{
			name: "TEE sgx",
			hw:   v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEESGX},
			want: Placement{NodeSelector: map[string]string{LabelSGX: "true"}, RuntimeClassName: ptr("enclave-cc")},
		},
		{
			name: "TEE sev-snp",
			hw:   v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEESEVSNP},
			want: Placement{NodeSelector: map[string]string{LabelSEVSNP: "true"}, RuntimeClassName: ptr("kata-qemu-snp")},
		},
		{
			name: "TEE tdx",
			hw:   v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEETDX},
			want: Placement{NodeSelector: map[string]string{LabelTDX: "true"}, RuntimeClassName: ptr("kata-qemu-tdx")},
		},
		{
			name: "TEE and GPU together",
			hw:   v1alpha1.HardwareRequirements{GPUCount: 4, GPUType: "NVIDIA-H100-80GB-HBM3", TEERequired: true, TEEType: v1alpha1.TEETDX},
			want: Placement{
				Requests:         gpus(4),
				Limits:           gpus(4),
				NodeSelector:     map[string]string{LabelGPUPresent: "true", LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", LabelTDX: "true"},
				Tolerations:      []corev1.Toleration{gpuToleration},
				RuntimeClassName: ptr("kata-qemu-tdx"),
			},
		},
		{
			name: "custom labels go to the node selector",
			hw:   v1alpha1.HardwareRequirements{CustomLabels: map[string]string{"zone": "a", "rack": "r1"}},
			want: Placement{NodeSelector: map[string]string{"zone": "a", "rack": "r1"}},
		},
		{
			name: "custom label equal to a hardware label is not a conflict",
			hw:   v1alpha1.HardwareRequirements{GPUCount: 1, CustomLabels: map[string]string{LabelGPUPresent: "true"}},
			want: Placement{
				Requests: gpus(1), Limits: gpus(1),
				NodeSelector: map[string]string{LabelGPUPresent: "true"},
				Tolerations:  []corev1.Toleration{gpuToleration},
			},
		},
		{
			name: "user nodeSelector and tolerations merged, duplicates dropped, sorted",
			hw:   v1alpha1.HardwareRequirements{GPUCount: 1},
			sched: v1alpha1.Scheduling{
				NodeSelector: map[string]string{"pool": "avs", LabelGPUPresent: "true"},
				Tolerations:  []corev1.Toleration{userTol, gpuToleration, userTol},
			},
			want: Placement{
				Requests: gpus(1), Limits: gpus(1),
				NodeSelector: map[string]string{LabelGPUPresent: "true", "pool": "avs"},
				Tolerations:  []corev1.Toleration{userTol, gpuToleration},
			},
		},
		{
			name:  "user runtimeClassName wins over the TEE default",
			hw:    v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEESEVSNP},
			sched: v1alpha1.Scheduling{RuntimeClassName: ptr("kata-qemu-snp-debug")},
			want:  Placement{NodeSelector: map[string]string{LabelSEVSNP: "true"}, RuntimeClassName: ptr("kata-qemu-snp-debug")},
		},
		{
			name:  "user runtimeClassName without TEE, affinity and priority class copied",
			sched: v1alpha1.Scheduling{RuntimeClassName: ptr("gvisor"), Affinity: affinity, PriorityClassName: ptr("high")},
			want:  Placement{RuntimeClassName: ptr("gvisor"), Affinity: affinity, PriorityClassName: "high"},
		},
		{
			name:  "conflict: user gpu.product differs from gpuType",
			hw:    v1alpha1.HardwareRequirements{GPUCount: 1, GPUType: "NVIDIA-H100-80GB-HBM3"},
			sched: v1alpha1.Scheduling{NodeSelector: map[string]string{LabelGPUProduct: "NVIDIA-A100-SXM4-80GB"}},
			wantErr: &ConflictError{
				Field: `spec.scheduling.nodeSelector["nvidia.com/gpu.product"]`, Value: "NVIDIA-A100-SXM4-80GB",
				Source: "spec.hardwareRequirements.gpuType", Implied: "NVIDIA-H100-80GB-HBM3",
			},
		},
		{
			name:  "conflict: user says gpu.present=false with gpuCount",
			hw:    v1alpha1.HardwareRequirements{GPUCount: 1},
			sched: v1alpha1.Scheduling{NodeSelector: map[string]string{LabelGPUPresent: "false"}},
			wantErr: &ConflictError{
				Field: `spec.scheduling.nodeSelector["nvidia.com/gpu.present"]`, Value: "false",
				Source: "spec.hardwareRequirements.gpuCount", Implied: "true",
			},
		},
		{
			name: "conflict: custom label contradicts TEE label",
			hw:   v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEETDX, CustomLabels: map[string]string{LabelTDX: "false"}},
			wantErr: &ConflictError{
				Field: `spec.hardwareRequirements.customLabels["feature.node.kubernetes.io/cpu-security.tdx.enabled"]`, Value: "false",
				Source: "spec.hardwareRequirements.teeType", Implied: "true",
			},
		},
		{
			name:  "conflict: user nodeSelector contradicts custom label",
			hw:    v1alpha1.HardwareRequirements{CustomLabels: map[string]string{"zone": "a"}},
			sched: v1alpha1.Scheduling{NodeSelector: map[string]string{"zone": "b"}},
			wantErr: &ConflictError{
				Field: `spec.scheduling.nodeSelector["zone"]`, Value: "b",
				Source: `spec.hardwareRequirements.customLabels["zone"]`, Implied: "a",
			},
		},
		{
			name:    "invalid: teeRequired without teeType",
			hw:      v1alpha1.HardwareRequirements{TEERequired: true},
			wantErr: &InvalidError{Field: "spec.hardwareRequirements.teeType", Detail: `teeRequired needs teeType sgx, sev-snp or tdx, got ""`},
		},
		{
			name:    "invalid: teeType without teeRequired",
			hw:      v1alpha1.HardwareRequirements{TEEType: v1alpha1.TEESGX},
			wantErr: &InvalidError{Field: "spec.hardwareRequirements.teeType", Detail: "requires teeRequired: true"},
		},
		{
			name:    "invalid: gpuType without gpuCount",
			hw:      v1alpha1.HardwareRequirements{GPUType: "NVIDIA-H100-80GB-HBM3"},
			wantErr: &InvalidError{Field: "spec.hardwareRequirements.gpuType", Detail: "requires gpuCount > 0"},
		},
		{
			name:    "invalid: negative gpuCount",
			hw:      v1alpha1.HardwareRequirements{GPUCount: -1},
			wantErr: &InvalidError{Field: "spec.hardwareRequirements.gpuCount", Detail: "must be >= 0, got -1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Place(tt.hw, tt.sched)
			if tt.wantErr != nil {
				if !reflect.DeepEqual(err, tt.wantErr) {
					t.Fatalf("error = %#v (%v), want %#v", err, err, tt.wantErr)
				}
				var ce *ConflictError
				var ie *InvalidError
				if !errors.As(err, &ce) && !errors.As(err, &ie) {
					t.Fatalf("error %T is not typed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("placement mismatch\n got: %#v\nwant: %#v", got, tt.want)
			}
		})
	}
}

func TestPlaceDeterministic(t *testing.T) {
	a := corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists}
	b := corev1.Toleration{Key: "b", Operator: corev1.TolerationOpExists}
	hw := v1alpha1.HardwareRequirements{GPUCount: 1}
	p1, err1 := Place(hw, v1alpha1.Scheduling{Tolerations: []corev1.Toleration{a, b}})
	p2, err2 := Place(hw, v1alpha1.Scheduling{Tolerations: []corev1.Toleration{b, a, b}})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !reflect.DeepEqual(p1, p2) {
		t.Fatalf("order-dependent tolerations:\n%v\n%v", p1.Tolerations, p2.Tolerations)
	}
}

func TestContainerResources(t *testing.T) {
	cpu := resource.MustParse("500m")
	p, err := Place(v1alpha1.HardwareRequirements{GPUCount: 2}, v1alpha1.Scheduling{})
	if err != nil {
		t.Fatal(err)
	}
	user := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}}
	got, err := p.ContainerResources(user)
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, ResourceGPU: *resource.NewQuantity(2, resource.DecimalSI)},
		Limits:   gpus(2),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, ok := user.Requests[ResourceGPU]; ok {
		t.Fatal("input modified")
	}

	// An equal GPU quantity in spec.resources is accepted; a different one is an InvalidError.
	same := corev1.ResourceRequirements{Limits: gpus(2)}
	if _, err := p.ContainerResources(same); err != nil {
		t.Fatalf("equal GPU limit rejected: %v", err)
	}
	diff := corev1.ResourceRequirements{Limits: gpus(3)}
	_, err = p.ContainerResources(diff)
	var ie *InvalidError
	if !errors.As(err, &ie) || ie.Field != `spec.resources.limits["nvidia.com/gpu"]` {
		t.Fatalf("error = %v, want InvalidError on spec.resources.limits", err)
	}

	// No hardware: resources unchanged.
	none, _ := Place(v1alpha1.HardwareRequirements{}, v1alpha1.Scheduling{})
	got, err = none.ContainerResources(user)
	if err != nil || !reflect.DeepEqual(got, user) {
		t.Fatalf("got %v %v, want %v", got, err, user)
	}
}

func TestMissingLabels(t *testing.T) {
	nodes := []map[string]string{
		{LabelTDX: "true", "kubernetes.io/os": "linux"},
		{LabelGPUProduct: "NVIDIA-H100-80GB-HBM3"},
	}
	got := MissingLabels(nodes, map[string]string{LabelSGX: "true", LabelTDX: "true", LabelGPUProduct: "NVIDIA-B200", "kubernetes.io/os": "linux"})
	want := []string{
		LabelSGX + "=true (TEE type sgx)",
		LabelGPUProduct + "=NVIDIA-B200 (GPU type NVIDIA-B200)",
	}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MissingLabels = %q, want %q", got, want)
	}
	if got := MissingLabels(nodes, map[string]string{LabelTDX: "true"}); got != nil {
		t.Fatalf("MissingLabels = %q, want none", got)
	}
}
