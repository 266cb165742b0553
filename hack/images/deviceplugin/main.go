// Command deviceplugin is a kubelet device plugin (v1beta1) advertising fake NVIDIA GPUs, so Pods
// requesting nvidia.com/gpu, a per-type resource or a MIG slice go through the kubelet's real
// device manager on the test cluster's real node, where kwok would admit anything. Each
// -resource NAME=COUNT is one plugin socket; device IDs and Allocate's answer (NVIDIA_VISIBLE_DEVICES,
// /dev/nvidia* nodes backed by /dev/null) follow nvidia's k8s-device-plugin on an H200 node.
// SIGTERM removes the sockets (allocatable drops to 0); -restart-delay mimics NVML's slow start
// after a driver restart, long enough for the node status to show the GPUs gone.
//
//	deviceplugin -node gantry-real -resource nvidia.com/gpu=2 -resource nvidia.com/mig-1g.18gb=7
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log"
	"maps"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// resourceFlags collects -resource NAME=COUNT.
type resourceFlags []string

func (r *resourceFlags) String() string     { return strings.Join(*r, ",") }
func (r *resourceFlags) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	var resources resourceFlags
	dir := flag.String("dir", pluginapi.DevicePluginPath, "the kubelet's device plugin directory (its kubelet.sock)")
	node := flag.String("node", os.Getenv("NODE_NAME"), "the node's name (device IDs derive from it; default $NODE_NAME)")
	flag.Var(&resources, "resource", "NAME=COUNT: advertise COUNT devices of extended resource NAME (repeatable)")
	restartDelay := flag.Duration("restart-delay", 0, "wait this long before registering when restarted under the same kubelet")
	flag.Parse()
	plugins, err := parsePlugins(*dir, *node, resources)
	if err != nil {
		log.Fatalf("deviceplugin: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := delayRestart(ctx, *dir, *restartDelay); err != nil {
		log.Fatalf("deviceplugin: %v", err)
	}
	run(ctx, *dir, plugins)
	log.Printf("deviceplugin: stopped")
}

// parsePlugins turns the -resource flags into plugins; an error names the bad flag.
func parsePlugins(dir, node string, specs []string) ([]*plugin, error) {
	if node == "" {
		return nil, errors.New("no node name (-node or $NODE_NAME)")
	}
	if len(specs) == 0 {
		return nil, errors.New("no -resource NAME=COUNT given")
	}
	var out []*plugin
	gpu := 0
	for _, s := range specs {
		name, count, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || n < 1 || !strings.Contains(name, "/") {
			return nil, fmt.Errorf("-resource %q: want NAME=COUNT, e.g. nvidia.com/gpu=2", s)
		}
		p := &plugin{resource: name, socket: filepath.Join(dir, "gantry-"+strings.NewReplacer("/", "_", ".", "-").Replace(name)+".sock")}
		mig := strings.HasPrefix(name, "nvidia.com/mig-")
		for i := range n {
			d := device{parent: gpu}
			if mig {
				d.id, d.cap = "MIG-"+uuidOf(node, name, i), i+1
			} else {
				d.id, d.parent = "GPU-"+uuidOf(node, name, i), gpu
				gpu++
			}
			p.devices = append(p.devices, d)
		}
		if mig {
			gpu++
		}
		out = append(out, p)
	}
	return out, nil
}

// delayRestart waits delay when dir/gantry-fake-gpu.started says this plugin already started
// under the kubelet now serving dir/kubelet.sock, then records this start there; an error only
// when the marker cannot be written.
func delayRestart(ctx context.Context, dir string, delay time.Duration) error {
	stamp, ok := waitForSocket(ctx, filepath.Join(dir, "kubelet.sock"))
	if !ok {
		return nil // ctx ended: run stops at once
	}
	marker := filepath.Join(dir, "gantry-fake-gpu.started")
	if b, err := os.ReadFile(marker); err == nil && string(b) == stamp && delay > 0 {
		log.Printf("deviceplugin: restarted under the same kubelet: registering in %s", delay)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
	return os.WriteFile(marker, []byte(stamp), 0o644)
}

// uuidOf is a stable UUID-shaped string (8-4-4-4-12 hex digits) for device i of resource on node.
func uuidOf(node, resource string, i int) string {
	h := fmt.Sprintf("%x", sha256.Sum256([]byte(node+"/"+resource+"/"+strconv.Itoa(i))))
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// run serves and registers every plugin until ctx ends, serving and registering again whenever
// the kubelet restarts (its socket changes) or a plugin's socket disappears.
func run(ctx context.Context, dir string, plugins []*plugin) {
	kubelet := filepath.Join(dir, "kubelet.sock")
	for {
		stamp, ok := waitForSocket(ctx, kubelet)
		if !ok {
			return // ctx ended: a clean stop
		}
		var servers []*grpc.Server
		for _, p := range plugins {
			s, err := p.serve(kubelet)
			if err != nil {
				log.Printf("deviceplugin: %s: %v (retrying)", p.resource, err)
				break
			}
			servers = append(servers, s)
		}
		if len(servers) == len(plugins) {
			log.Printf("deviceplugin: registered %d resources with %s", len(plugins), kubelet)
			watch(ctx, kubelet, stamp, plugins)
		}
		for _, s := range servers {
			s.Stop()
		}
		for _, p := range plugins {
			_ = os.Remove(p.socket)
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(time.Second)
	}
}

// waitForSocket waits until path exists and returns its identity (inode and modification time);
// ok is false when ctx ends first.
func waitForSocket(ctx context.Context, path string) (stamp string, ok bool) {
	for {
		if st, err := os.Stat(path); err == nil {
			return socketStamp(st), true
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(time.Second):
		}
	}
}

func socketStamp(st os.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d/%d", sys.Ino, st.ModTime().UnixNano())
	}
	return st.ModTime().String()
}

// watch returns when ctx ends, the kubelet's socket changes or one of ours is gone.
func watch(ctx context.Context, kubelet, stamp string, plugins []*plugin) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		st, err := os.Stat(kubelet)
		if err != nil || socketStamp(st) != stamp {
			log.Printf("deviceplugin: the kubelet restarted; registering again")
			return
		}
		for _, p := range plugins {
			if _, err := os.Stat(p.socket); err != nil {
				log.Printf("deviceplugin: %s is gone; serving again", p.socket)
				return
			}
		}
	}
}

// device is one advertised device: id as nvidia's plugin names it, the physical GPU index it is
// (or is a MIG slice of: cap > 0).
type device struct {
	id     string
	parent int
	cap    int
}

// plugin serves one extended resource.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	resource string
	socket   string
	devices  []device
}

// serve listens on the plugin's socket, serves the DevicePlugin service and registers with the
// kubelet; the error says which step failed.
func (p *plugin) serve(kubelet string) (*grpc.Server, error) {
	_ = os.Remove(p.socket)
	l, err := net.Listen("unix", p.socket)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(s, p)
	go func() { _ = s.Serve(l) }()
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("dial the kubelet: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: filepath.Base(p.socket), ResourceName: p.resource,
		Options: &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("register %s: %w", p.resource, err)
	}
	return s, nil
}

// GetDevicePluginOptions: no PreStartContainer, no preferred allocation.
func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends every device Healthy once and holds the stream until the kubelet or the
// plugin ends it.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	resp := &pluginapi.ListAndWatchResponse{}
	for _, d := range p.devices {
		resp.Devices = append(resp.Devices, &pluginapi.Device{ID: d.id, Health: pluginapi.Healthy})
	}
	if err := s.Send(resp); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

// Allocate gives each container NVIDIA_VISIBLE_DEVICES and the device nodes of its devices; an
// unknown device ID is an error naming it (the kubelet then fails the Pod's admission).
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	byID := map[string]device{}
	for _, d := range p.devices {
		byID[d.id] = d
	}
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		cr := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIDs, ",")}}
		nodes := map[string]bool{"/dev/nvidiactl": true, "/dev/nvidia-uvm": true}
		for _, id := range c.DevicesIDs {
			d, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("%s: unknown device %q", p.resource, id)
			}
			nodes[fmt.Sprintf("/dev/nvidia%d", d.parent)] = true
			if d.cap > 0 {
				nodes[fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", d.cap)] = true
			}
		}
		for _, path := range slices.Sorted(maps.Keys(nodes)) {
			cr.Devices = append(cr.Devices, &pluginapi.DeviceSpec{ContainerPath: path, HostPath: "/dev/null", Permissions: "rw"})
		}
		resp.ContainerResponses = append(resp.ContainerResponses, cr)
	}
	return resp, nil
}
