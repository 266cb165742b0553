package packageset

// Names of the objects the machine asks for (stage and soak check Jobs).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// JobName is the deterministic name of the Job running stage of pkg's flow on node, attempt
// restarts: the same inputs always give the same name, so a restarted reconciler never starts
// a second copy, and a new flow or attempt always a new one. At most 49 characters.
func JobName(set, node, pkg string, flow int, stage Stage, attempt int32) string {
	abbrev := map[Stage]string{v1alpha1.StageUninstall: "un", v1alpha1.StageApply: "ap", v1alpha1.StageConfig: "cf",
		v1alpha1.StageUpgrade: "up", v1alpha1.StageInterrupt: "in", v1alpha1.StagePostInterrupt: "pi", v1alpha1.StageUninstallInterrupt: "ui"}[stage]
	h := shortHash(fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%s\x00%d", set, node, pkg, flow, stage, attempt))[:10]
	return strings.Trim(cut(set, 18), "-") + "-" + strings.Trim(cut(pkg, 16), "-") + "-" + abbrev + "-" + h
}

// SoakJobName is the deterministic name of the Job re-running the check of pkg's last stage
// in soak round round (0 first) while node soaks after flow (attempt restarts: a retried flow
// soaks with new Jobs) in the node's soak window window (NodeRecord.Soaks: soaking again for
// the same flow runs new Jobs). Round 0 of window 0 keeps the name of the single soak check of
// earlier releases.
// At most 49 characters.
func SoakJobName(set, node, pkg string, flow int, restarts int32, window, round int) string {
	in := fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00soak\x00%d", set, node, pkg, flow, restarts)
	if round > 0 {
		in += fmt.Sprintf("\x00%d", round)
	}
	if window > 0 {
		in += fmt.Sprintf("\x00w%d", window)
	}
	h := shortHash(in)[:10]
	return strings.Trim(cut(set, 18), "-") + "-" + strings.Trim(cut(pkg, 16), "-") + "-sk-" + h
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
