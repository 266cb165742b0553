package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// fakeKubelet is the kubelet's Registration service on dir/kubelet.sock.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	got chan *pluginapi.RegisterRequest
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.got <- r
	return &pluginapi.Empty{}, nil
}

func TestParsePlugins(t *testing.T) {
	ps, err := parsePlugins("/d", "n1", []string{"nvidia.com/gpu=2", "nvidia.com/mig-1g.18gb=3", "nvidia.com/h200=1"})
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	var parents []int
	for _, p := range ps {
		for _, d := range p.devices {
			if !uuid.MatchString(d.id) {
				t.Errorf("%s: device ID %q is not nvidia's form", p.resource, d.id)
			}
			parents = append(parents, d.parent)
		}
	}
	// gpu: GPUs 0 and 1; the three MIG slices of GPU 2; h200: GPU 3.
	if want := []int{0, 1, 2, 2, 2, 3}; !slices.Equal(parents, want) {
		t.Errorf("parents = %v, want %v", parents, want)
	}
	if ps[0].socket != "/d/gantry-nvidia-com_gpu.sock" {
		t.Errorf("socket = %s", ps[0].socket)
	}
	again, _ := parsePlugins("/d", "n1", []string{"nvidia.com/gpu=2"})
	if again[0].devices[1].id != ps[0].devices[1].id {
		t.Error("device IDs are not stable across runs")
	}
	for _, bad := range [][]string{{"gpu=2"}, {"nvidia.com/gpu"}, {"nvidia.com/gpu=0"}, nil} {
		if _, err := parsePlugins("/d", "n1", bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := parsePlugins("/d", "", []string{"nvidia.com/gpu=1"}); err == nil {
		t.Error("no node: no error")
	}
}

// TestRegisterListAllocate runs the plugins against a fake kubelet over real unix sockets: each
// registers, lists its devices Healthy, and Allocate hands a container NVIDIA_VISIBLE_DEVICES
// and its device nodes; the sockets are removed when the plugin stops.
func TestRegisterListAllocate(t *testing.T) {
	dir := t.TempDir()
	k := &fakeKubelet{got: make(chan *pluginapi.RegisterRequest, 4)}
	l, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ks := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(ks, k)
	go func() { _ = ks.Serve(l) }()
	defer ks.Stop()

	ps, err := parsePlugins(dir, "node-a", []string{"nvidia.com/gpu=2", "nvidia.com/mig-1g.18gb=7"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { run(ctx, dir, ps); close(done) }()
	names := map[string]string{}
	for range 2 {
		select {
		case r := <-k.got:
			if r.Version != pluginapi.Version {
				t.Errorf("version %s", r.Version)
			}
			names[r.ResourceName] = r.Endpoint
		case <-time.After(20 * time.Second):
			t.Fatalf("no registration (got %v)", names)
		}
	}
	if names["nvidia.com/gpu"] != "gantry-nvidia-com_gpu.sock" || names["nvidia.com/mig-1g.18gb"] == "" {
		t.Fatalf("registrations: %v", names)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, names["nvidia.com/gpu"]), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := pluginapi.NewDevicePluginClient(conn)
	lw, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := lw.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Devices) != 2 || list.Devices[0].Health != pluginapi.Healthy {
		t.Fatalf("devices: %v", list.Devices)
	}
	ids := []string{list.Devices[1].ID, list.Devices[0].ID}
	resp, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIDs: ids}}})
	if err != nil {
		t.Fatal(err)
	}
	cr := resp.ContainerResponses[0]
	if cr.Envs["NVIDIA_VISIBLE_DEVICES"] != strings.Join(ids, ",") {
		t.Errorf("NVIDIA_VISIBLE_DEVICES = %q", cr.Envs["NVIDIA_VISIBLE_DEVICES"])
	}
	var paths []string
	for _, d := range cr.Devices {
		paths = append(paths, d.ContainerPath)
	}
	if got := strings.Join(paths, " "); got != "/dev/nvidia-uvm /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl" {
		t.Errorf("device nodes: %s", got)
	}
	if _, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIDs: []string{"GPU-nope"}}}}); err == nil || !strings.Contains(err.Error(), `unknown device "GPU-nope"`) {
		t.Errorf("unknown device: %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
	if _, err := os.Stat(filepath.Join(dir, names["nvidia.com/gpu"])); !os.IsNotExist(err) {
		t.Errorf("socket left after stop: %v", err)
	}
}
