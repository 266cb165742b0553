package packageset

import "github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"

const (
	unin = v1alpha1.StageUninstall
	appl = v1alpha1.StageApply
	conf = v1alpha1.StageConfig
	upgr = v1alpha1.StageUpgrade
	intr = v1alpha1.StageInterrupt
	post = v1alpha1.StagePostInterrupt
)

func driver(v string) Want {
	return Want{Name: "driver", Version: v, Image: "ghcr.io/x/driver:" + v, Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}, Uninstall: true, StageTimeout: DefaultStageTimeout}
}

func tool(v string) Want {
	return Want{Name: "tool", Version: v, Image: "ghcr.io/x/tool:" + v, StageTimeout: DefaultStageTimeout}
}

func ptr[T any](v T) *T { return &v }
