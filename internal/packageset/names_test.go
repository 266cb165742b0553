package packageset

import (
	"testing"
)

func TestJobNameDeterministic(t *testing.T) {
	a := JobName("gpu-drivers", "node-1", "nvidia-driver", 3, appl, 0)
	if a != JobName("gpu-drivers", "node-1", "nvidia-driver", 3, appl, 0) || len(a) > 49 {
		t.Fatalf("JobName %q", a)
	}
	for _, other := range []string{
		JobName("gpu-drivers", "node-2", "nvidia-driver", 3, appl, 0), JobName("gpu-drivers", "node-1", "nvidia-driver", 4, appl, 0),
		JobName("gpu-drivers", "node-1", "nvidia-driver", 3, conf, 0), JobName("gpu-drivers", "node-1", "nvidia-driver", 3, appl, 1),
	} {
		if other == a {
			t.Errorf("collision %s", a)
		}
	}
}
