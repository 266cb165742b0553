package packageset

import (
	"fmt"
	"strings"
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

// Job names: a DNS-1123 label of at most 49 characters (JobName, SoakJobName: the pod and
// its job-name label need at most 63) for every set name the CRD allows (a DNS-1123 label of
// at most 40) and package name (at most 43, a letter at each end), including cuts that end
// on '-'; "<set, ≤18>-<package, ≤16>-<stage abbreviation or sk>-<10 hex>"; the same inputs give
// the same name, on every pass and in every release (golden names: a newer reconciler must
// find the Jobs an older one created).
func TestJobNames(t *testing.T) {
	stages := []Stage{unin, appl, conf, upgr, intr, post}
	abbrev := map[Stage]string{unin: "un", appl: "ap", conf: "cf", upgr: "up", intr: "in", post: "pi"}
	for _, tc := range []struct {
		name, set, node, pkg string
		prefix               string // "<set>-<package>-" as the names start
	}{
		{"short names", "gpu", "node-1", "tuned", "gpu-tuned-"},
		{"set at the 18-character cut", "gpu-drivers-pool-a", "node-1", "nvidia-driver", "gpu-drivers-pool-a-nvidia-driver-"},
		{"longest set and package", strings.Repeat("s", 40), strings.Repeat("n", 253), "p" + strings.Repeat("-x", 20) + "p",
			strings.Repeat("s", 18) + "-p-x-x-x-x-x-x-x-"},
		{"set cut on a '-'", "gpu-drivers-pool--a-b", "node-1", "tuned", "gpu-drivers-pool-tuned-"},
		{"set cut after a run of '-'", "a-----------------b", "node-1", "tuned", "a-tuned-"},
		{"package at the 16-character cut", "gpu", "node-1", "nvidia-container-toolkit", "gpu-nvidia-container-"},
		{"package cut on a '-'", "gpu", "node-1", "nvidia-driver-x-utils", "gpu-nvidia-driver-x-"},
		{"digits", "0set9", "10.0.0.1", "p0q", "0set9-p0q-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what, got, again, infix string) {
				t.Helper()
				if len(got) > 49 || !dnsLabel.MatchString(got) || !strings.HasPrefix(got, tc.prefix+infix+"-") || len(got) != len(tc.prefix)+len(infix)+1+10 {
					t.Errorf("%s = %q (%d characters), want %q + 10 hex digits, a DNS-1123 label of at most 49", what, got, len(got), tc.prefix+infix+"-")
				}
				if again != got {
					t.Errorf("%s not deterministic: %q then %q", what, got, again)
				}
			}
			for _, st := range stages {
				check("JobName "+string(st), JobName(tc.set, tc.node, tc.pkg, 7, st, 2), JobName(tc.set, tc.node, tc.pkg, 7, st, 2), abbrev[st])
			}
			check("SoakJobName", SoakJobName(tc.set, tc.node, tc.pkg, 7, 2, 1, 3), SoakJobName(tc.set, tc.node, tc.pkg, 7, 2, 1, 3), "sk")
		})
	}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"stage Job", JobName("gpu-drivers", "node-1", "nvidia-driver", 3, appl, 0), "gpu-drivers-nvidia-driver-ap-d8b5b834aa"},
		{"retried interrupt Job", JobName("gpu-drivers", "node-1", "nvidia-driver", 3, intr, 2), "gpu-drivers-nvidia-driver-in-c3050b5475"},
		// Round 0 of window 0 keeps the single soak check's name of earlier releases: the hash
		// of set, node, package, flow, "soak" and restarts alone.
		{"first soak check", SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 3, 0, 0, 0), "gpu-drivers-nvidia-driver-sk-e6e3078674"},
		{"first soak check: the earlier releases' formula", SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 3, 0, 0, 0),
			"gpu-drivers-nvidia-driver-sk-" + shortHash("gpu-drivers\x00node-1\x00nvidia-driver\x003\x00soak\x000")[:10]},
		{"later soak check", SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 3, 1, 2, 3), "gpu-drivers-nvidia-driver-sk-e92e31f40e"},
	} {
		t.Run("golden: "+tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%q, want %q", tc.got, tc.want)
			}
		})
	}
}

// Every input of a Job's identity gives a different name: set, node and package (also past
// the cut at 18 and 16 characters), flow, stage and attempt for stage Jobs; flow, restarts,
// soak window and round for soak checks; and no soak check is named like a stage Job.
func TestJobNamesUnique(t *testing.T) {
	sets := []string{"gpu-drivers-pool-a-1", "gpu-drivers-pool-a-2", "cpu"} // the first two share their 18-character cut
	nodes := []string{"node-1", "node-2"}
	pkgs := []string{"nvidia-container-toolkit", "nvidia-container-runtime", "tuned"} // the first two share their 16-character cut
	stages := []Stage{unin, appl, conf, upgr, intr, post}
	for _, tc := range []struct {
		name  string
		names func(set, node, pkg string) []string // the names of one set/node/package
		count int                                  // how many per set/node/package
	}{
		{"stage Jobs over flow, stage and attempt", func(set, node, pkg string) []string {
			var out []string
			for flow := 0; flow < 4; flow++ {
				for _, st := range stages {
					for attempt := int32(0); attempt < 4; attempt++ {
						out = append(out, JobName(set, node, pkg, flow, st, attempt))
					}
				}
			}
			return out
		}, 4 * 6 * 4},
		{"soak checks over flow, restarts, window and round", func(set, node, pkg string) []string {
			var out []string
			for flow := 0; flow < 3; flow++ {
				for restarts := int32(0); restarts < 3; restarts++ {
					for window := 0; window < 3; window++ {
						for round := 0; round < 4; round++ {
							out = append(out, SoakJobName(set, node, pkg, flow, restarts, window, round))
						}
					}
				}
			}
			return out
		}, 3 * 3 * 3 * 4},
		{"stage Jobs and soak checks together", func(set, node, pkg string) []string {
			var out []string
			for flow := 0; flow < 3; flow++ {
				for n := 0; n < 3; n++ {
					out = append(out, JobName(set, node, pkg, flow, conf, int32(n)), SoakJobName(set, node, pkg, flow, int32(n), 0, 0))
				}
			}
			return out
		}, 3 * 3 * 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]string{}
			for _, set := range sets {
				for _, node := range nodes {
					for _, pkg := range pkgs {
						names := tc.names(set, node, pkg)
						if len(names) != tc.count {
							t.Fatalf("%d names, want %d", len(names), tc.count)
						}
						for i, n := range names {
							who := fmt.Sprintf("%s/%s/%s #%d", set, node, pkg, i)
							if other, dup := seen[n]; dup {
								t.Fatalf("%s and %s are both named %s", other, who, n)
							}
							seen[n] = who
						}
					}
				}
			}
		})
	}
}
