// Package gpuinfo is what the test images' servers (hack/images performer and model server)
// answer on GET /devices: the GPUs the kubelet's device manager allocated to their container,
// as nvidia's device plugin hands them over (the test device plugin, hack/images/deviceplugin,
// does the same), so real-node tests can check the allocation from outside.
package gpuinfo

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
)

// Report is "NVIDIA_VISIBLE_DEVICES=<value>\n" (empty when unset) followed by one line per
// NVIDIA device node in the container (/dev/nvidia*, /dev/nvidia-caps/*), sorted.
func Report() string {
	out := "NVIDIA_VISIBLE_DEVICES=" + os.Getenv("NVIDIA_VISIBLE_DEVICES") + "\n"
	var nodes []string
	for _, pattern := range []string{"/dev/nvidia*", "/dev/nvidia-caps/*"} {
		m, _ := filepath.Glob(pattern) // only ErrBadPattern, and these are fixed
		nodes = append(nodes, m...)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		if st, err := os.Stat(n); err == nil && !st.IsDir() {
			out += n + "\n"
		}
	}
	return out
}

// Handle registers GET /devices (Report) on mux.
func Handle(mux *http.ServeMux) {
	mux.HandleFunc("GET /devices", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, Report()) })
}
