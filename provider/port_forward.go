package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// The port forwards of the gantry_port_forward ephemeral resource (ephemeral_port_forward.go):
// the target named in the configuration resolved to a Ready pod and a port (the Service the
// reconciler made for a performer or workspace says which pods and which port), and a
// client-go port forward (tools/portforward: WebSocket, falling back to SPDY, as kubectl
// port-forward) from 127.0.0.1 to it that lives in the provider process until Close. When the
// connection to the pod is lost (the pod is deleted or restarted: client-go also drops the
// whole connection when one forwarded connection fails) the forward re-opens on the same
// local port to a Ready pod of the same target, until Close.

const (
	// pfOpenTimeout bounds how long Open waits for a forward to listen (the API server's
	// upgrade to the kubelet's stream).
	pfOpenTimeout = 30 * time.Second
	// pfCloseTimeout bounds how long Close waits for a forward's goroutines to end.
	pfCloseTimeout = 10 * time.Second
	// pfRetryMax is the longest pause between attempts to re-open a lost forward.
	pfRetryMax = 10 * time.Second
	// pfCheckTimeout bounds check_path's GET (retried while the forward does not answer).
	pfCheckTimeout = 15 * time.Second
	// pfCheckBodyLimit is how much of check_path's response body check_response keeps.
	pfCheckBodyLimit = 16 << 10
	// pfMaxPodsListed is how many pods a "no Ready pod" diagnostic lists.
	pfMaxPodsListed = 10
)

// pfTarget is what a gantry_port_forward configuration forwards to.
type pfTarget struct {
	// kind is "Performer" or "Workspace", or "" for pod_selector.
	kind      string
	name      string
	namespace string
	// labels is pod_selector.match_labels.
	labels map[string]string
	// port is remote_port; 0: the target's serving port.
	port int32
	// pod is pod_name; "": any Ready pod of the target.
	pod string
}

func (t pfTarget) String() string {
	if t.kind == "" {
		return fmt.Sprintf("the pods matching %s in namespace %s", labels.SelectorFromSet(t.labels), t.namespace)
	}
	return t.kind + " " + t.namespace + "/" + t.name
}

// pfEndpoint is a target resolved against the cluster.
type pfEndpoint struct {
	selector labels.Selector
	// port is a container port number or name.
	port intstr.IntOrString
	// status is the target object's summary and failing condition, for messages ("" for
	// pod_selector).
	status string
}

// pfError is a failure to open a forward that is about the target, not the API: its
// diagnostic names the target. absent means the target object does not exist.
type pfError struct {
	summary, detail string
	absent          bool
}

func (e *pfError) Error() string { return e.detail }

// pfAbsentHint ends the diagnostic of a target that does not exist.
const pfAbsentHint = "Terraform opens an ephemeral resource during plan as soon as its arguments are known. When this " +
	"configuration creates the target, make an argument known only once the target is applied, e.g. " +
	"`pod_name = gantry_performer.<name>.pod_name`: then a run that creates or changes it opens the forward during apply, " +
	"after the target is ready."

// resolveTarget reads the target object and the Service the reconciler made for it: the
// selector of its pods and the port to forward to (remote_port, else the Service's target
// port). pod_selector needs no read.
func resolveTarget(ctx context.Context, c *kube.Clients, t pfTarget) (*pfEndpoint, error) {
	if t.kind == "" {
		return &pfEndpoint{selector: labels.SelectorFromSet(t.labels), port: intstr.FromInt32(t.port)}, nil
	}
	spec, svcName := wait.Performer, performer.ObjectName(t.name)
	if t.kind == wait.Workspace.Kind {
		spec, svcName = wait.Workspace, workspace.ObjectName(t.name)
	}
	u, err := c.Dynamic.Resource(spec.GVR).Namespace(t.namespace).Get(ctx, t.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &pfError{absent: true, summary: "Port Forward Target Not Found",
			detail: fmt.Sprintf("The cluster has no %s, so there is nothing to forward to. Check name and namespace. %s", t, pfAbsentHint)}
	}
	if err != nil {
		return nil, err
	}
	ep := &pfEndpoint{status: objectStatus(spec, u)}
	if t.kind == wait.Workspace.Kind {
		if _, tuning, _ := unstructured.NestedMap(u.Object, "spec", "tuning"); tuning {
			// A tuning workspace's Job serves nothing and has no Service: its pods by label.
			if t.port == 0 {
				return nil, &pfError{summary: "Port Forward Target Serves No Port",
					detail: fmt.Sprintf("%s is a tuning workspace: it has no inference port to forward to. Give remote_port to forward to a port of its job's pod.", t)}
			}
			ep.selector, ep.port = labels.SelectorFromSet(labels.Set{workspace.LabelWorkspace: t.name}), intstr.FromInt32(t.port)
			return ep, nil
		}
	}
	svc, err := c.Core.CoreV1().Services(t.namespace).Get(ctx, svcName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &pfError{summary: "Port Forward Target Not Ready",
			detail: fmt.Sprintf("%s has no Service %s yet (%s): the gantry-reconciler creates it. Is the reconciler running? %s",
				t, svcName, ep.status, pfAbsentHint)}
	}
	if err != nil {
		return nil, err
	}
	ep.selector = labels.SelectorFromSet(svc.Spec.Selector)
	switch {
	case t.port != 0:
		ep.port = intstr.FromInt32(t.port)
	case len(svc.Spec.Ports) == 0:
		return nil, &pfError{summary: "Port Forward Target Serves No Port", detail: fmt.Sprintf("The Service %s of %s has no port.", svcName, t)}
	case svc.Spec.Ports[0].TargetPort.Type == intstr.String || svc.Spec.Ports[0].TargetPort.IntVal != 0:
		ep.port = svc.Spec.Ports[0].TargetPort
	default:
		ep.port = intstr.FromInt32(svc.Spec.Ports[0].Port)
	}
	return ep, nil
}

// objectStatus is a Gantry object's summary and the condition that says why it is not ready,
// e.g. `phase Failed; Ready=False (ImagePullBackOff): ...`.
func objectStatus(spec wait.Spec, u *unstructured.Unstructured) string {
	summary, _, _ := unstructured.NestedString(u.Object, spec.SummaryPath...)
	if summary == "" {
		summary = "(none yet)"
	}
	out := spec.SummaryPath[len(spec.SummaryPath)-1] + " " + summary
	conds := wait.Conditions(u)
	if c := wait.FindCondition(conds, "Stalled"); c != nil && c.Status == metav1.ConditionTrue {
		return out + fmt.Sprintf("; Stalled=True (%s): %s", c.Reason, c.Message)
	}
	if c := wait.FindCondition(conds, "Ready"); c != nil && c.Status != metav1.ConditionTrue {
		return out + fmt.Sprintf("; Ready=%s (%s): %s", c.Status, c.Reason, c.Message)
	}
	return out
}

// pickPod lists the target's pods and returns a Ready one (t.pod when given), with the port
// number to forward to.
func pickPod(ctx context.Context, core kubernetes.Interface, t pfTarget, ep *pfEndpoint) (*corev1.Pod, int32, error) {
	list, err := core.CoreV1().Pods(t.namespace).List(ctx, metav1.ListOptions{LabelSelector: ep.selector.String()})
	if err != nil {
		return nil, 0, err
	}
	pods := list.Items
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	p, notReady := readyPod(pods, t.pod)
	if p == nil {
		return nil, 0, noReadyPodError(ctx, core, t, ep, pods, notReady)
	}
	port, err := podPort(p, ep.port)
	if err != nil {
		return nil, 0, &pfError{summary: "Port Forward Target Serves No Port", detail: fmt.Sprintf("%s: %v.", t, err)}
	}
	return p, port, nil
}

// readyPod returns the first Ready pod (only want, when given) and, for the others considered,
// "name: why not ready".
func readyPod(pods []corev1.Pod, want string) (*corev1.Pod, []podNotReadyReason) {
	var notReady []podNotReadyReason
	for i := range pods {
		p := &pods[i]
		if want != "" && p.Name != want {
			continue
		}
		why := podNotReady(p)
		if why == "" {
			return p, nil
		}
		notReady = append(notReady, podNotReadyReason{pod: p.Name, why: why})
	}
	return nil, notReady
}

type podNotReadyReason struct{ pod, why string }

// noReadyPodError says which pods the target has and why none is Ready: the pod's phase,
// scheduling, container states and Ready condition, and its newest Warning event (the
// kubelet's "Readiness probe failed", the scheduler's FailedScheduling), as the wait engine
// reports a failed apply.
func noReadyPodError(ctx context.Context, core kubernetes.Interface, t pfTarget, ep *pfEndpoint, pods []corev1.Pod, notReady []podNotReadyReason) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s has no Ready pod to forward to", t)
	if ep.status != "" {
		fmt.Fprintf(&b, " (%s)", ep.status)
	}
	switch {
	case t.pod != "" && len(notReady) == 0:
		names := make([]string, 0, len(pods))
		for _, p := range pods {
			names = append(names, p.Name)
		}
		fmt.Fprintf(&b, ": pod_name %q is not one of its pods (selector %s; pods: %s).", t.pod, ep.selector, orNone(names))
	case len(pods) == 0:
		fmt.Fprintf(&b, ": no pod matches the selector %s in namespace %s.", ep.selector, t.namespace)
	default:
		fmt.Fprintf(&b, ". Its pods (selector %s):", ep.selector)
		for i, r := range notReady {
			if i == pfMaxPodsListed {
				fmt.Fprintf(&b, "\n  ... and %d more", len(notReady)-i)
				break
			}
			fmt.Fprintf(&b, "\n  - %s: %s", r.pod, r.why)
			if i < 3 {
				if ev := newestWarning(ctx, core, t.namespace, r.pod); ev != "" {
					fmt.Fprintf(&b, "; last warning: %s", ev)
				}
			}
		}
	}
	b.WriteString("\n\nA forward opens only to a Ready pod. Fix what the pods report, or make the forward open once the target is ready.")
	return &pfError{summary: "No Ready Pod To Forward To", detail: b.String()}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// newestWarning is a pod's newest Warning event as "Reason: message" ("" when none or the
// events cannot be read).
func newestWarning(ctx context.Context, core kubernetes.Interface, ns, pod string) string {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod, "type": corev1.EventTypeWarning}.AsSelector().String()
	evs, err := core.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	newest := &evs.Items[0]
	for i := range evs.Items {
		if eventTimeOf(&evs.Items[i]).After(eventTimeOf(newest)) {
			newest = &evs.Items[i]
		}
	}
	return newest.Reason + ": " + strings.TrimSpace(newest.Message)
}

func eventTimeOf(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// podNotReady says why a pod is not Ready ("" when it is Ready and running): terminating, its
// phase, scheduling, its containers' states, its Ready condition.
func podNotReady(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	ready := false
	var parts []string
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue:
			ready = true
		case c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue:
			parts = append(parts, fmt.Sprintf("not scheduled (%s): %s", c.Reason, c.Message))
		}
	}
	if ready && p.Status.Phase == corev1.PodRunning {
		return ""
	}
	phase := "phase " + string(p.Status.Phase)
	if p.Status.Reason != "" {
		phase += " (" + p.Status.Reason + ")"
	}
	if p.Status.Message != "" {
		phase += ": " + p.Status.Message
	}
	parts = append([]string{phase}, parts...)
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if why := containerNotReady(s); why != "" {
			parts = append(parts, why)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
			parts = append(parts, fmt.Sprintf("Ready=%s (%s): %s", c.Status, c.Reason, c.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// containerNotReady says why a container is not ready ("" when it is ready or completed).
func containerNotReady(s corev1.ContainerStatus) string {
	switch {
	case s.State.Waiting != nil:
		w := fmt.Sprintf("container %s waiting (%s)", s.Name, s.State.Waiting.Reason)
		if s.State.Waiting.Message != "" {
			w += ": " + s.State.Waiting.Message
		}
		if t := s.LastTerminationState.Terminated; t != nil {
			w += fmt.Sprintf(", last terminated (%s, exit code %d)", t.Reason, t.ExitCode)
		}
		return w
	case s.State.Terminated != nil && s.State.Terminated.ExitCode != 0:
		t := s.State.Terminated
		return strings.TrimSuffix(fmt.Sprintf("container %s terminated (%s, exit code %d): %s", s.Name, t.Reason, t.ExitCode, t.Message), ": ")
	case s.State.Running != nil && !s.Ready:
		return fmt.Sprintf("container %s running, not ready (its readiness probe has not passed)", s.Name)
	}
	return ""
}

// podPort is the number of port on the pod: a number as is, a name looked up in its
// containers' ports.
func podPort(p *corev1.Pod, port intstr.IntOrString) (int32, error) {
	if port.Type == intstr.Int {
		return port.IntVal, nil
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == port.StrVal {
				return cp.ContainerPort, nil
			}
		}
	}
	return 0, fmt.Errorf("pod %s has no container port named %q", p.Name, port.StrVal)
}

// podDialer dials the pod's portforward subresource through the API server: WebSocket first,
// SPDY when the server does not upgrade to it (kubectl port-forward's order).
func podDialer(cfg *rest.Config, core kubernetes.Interface, namespace, pod string) (httpstream.Dialer, error) {
	u := core.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	ws, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialer(ws, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// portForward is one open forward: listening on 127.0.0.1:local, to a Ready pod of its
// target, until close.
type portForward struct {
	id string
	// dial returns the dialer of a pod's portforward subresource.
	dial func(pod string) (httpstream.Dialer, error)
	// repick finds a Ready pod of the target again (a lost connection).
	repick func(ctx context.Context) (pod string, port int32, err error)
	// log reports what the forward does after Open returned.
	log func(msg string, fields map[string]interface{})

	// ctx is canceled by close; every attempt stops with it.
	ctx    context.Context
	cancel context.CancelFunc
	// done is closed when the supervising goroutine has ended.
	done chan struct{}

	local uint16

	mu       sync.Mutex
	pod      string
	reopened int
}

// startPortForward opens a forward from 127.0.0.1:local (0: a free port) to pod:remote and
// returns once it listens; it then runs until close.
func startPortForward(ctx context.Context, f *portForward, pod string, remote int32, local uint16) error {
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.done = make(chan struct{})
	result, port, err := f.attempt(ctx, pod, remote, local)
	if err != nil {
		f.cancel()
		close(f.done)
		return err
	}
	f.local, f.pod = port, pod
	go f.supervise(result)
	return nil
}

// lockedBuffer collects what client-go writes to a forward's error output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.b.String())
}

// attempt runs one client-go PortForwarder to pod:remote on 127.0.0.1:local until f closes or
// the connection to the pod is lost. It returns once the forward listens, with the local port
// and the channel that receives how the forward ended; or the error when it could not open
// (ctx done or pfOpenTimeout passed included).
func (f *portForward) attempt(ctx context.Context, pod string, remote int32, local uint16) (<-chan error, uint16, error) {
	d, err := f.dial(pod)
	if err != nil {
		return nil, 0, err
	}
	var errOut lockedBuffer
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(d, []string{"127.0.0.1"}, []string{fmt.Sprintf("%d:%d", local, remote)}, stop, ready, io.Discard, &errOut)
	if err != nil {
		return nil, 0, err
	}
	// The attempt stops with f, or when it fails to open in time (abort): its forward then
	// ends as soon as client-go's dial returns.
	actx, abort := context.WithCancel(f.ctx)
	ended, result := make(chan error, 1), make(chan error, 1)
	go func() { ended <- pf.ForwardPorts() }()
	go func() {
		defer abort()
		select {
		case <-actx.Done():
			close(stop)
			result <- <-ended
		case err := <-ended:
			result <- err
		}
	}()
	timer := time.NewTimer(pfOpenTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		ports, err := pf.GetPorts()
		if err != nil || len(ports) == 0 {
			abort()
			return nil, 0, fmt.Errorf("the forward listens but reports no port: %v", err)
		}
		return result, ports[0].Local, nil
	case err := <-result:
		if out := errOut.String(); out != "" {
			err = fmt.Errorf("%w (%s)", err, out)
		}
		return nil, 0, err
	case <-ctx.Done():
		abort()
		return nil, 0, ctx.Err()
	case <-timer.C:
		abort()
		return nil, 0, fmt.Errorf("the forward did not open within %s", pfOpenTimeout)
	}
}

// supervise waits for the forward to end; when it ends by a lost connection (not close), it
// re-opens it on the same local port to a Ready pod of the target, retrying with backoff
// until it listens again or f closes.
func (f *portForward) supervise(result <-chan error) {
	defer close(f.done)
	for {
		err := <-result
		if f.ctx.Err() != nil {
			return
		}
		f.log("port forward lost its connection to the pod; re-opening it", map[string]interface{}{"pod": f.currentPod(), "error": fmt.Sprint(err)})
		if result = f.reopen(); result == nil {
			return
		}
	}
}

// reopen opens the forward again (nil when f closed first).
func (f *portForward) reopen() <-chan error {
	delay := 500 * time.Millisecond
	for {
		t := time.NewTimer(delay)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		delay = min(2*delay, pfRetryMax)
		pod, remote, err := f.repick(f.ctx)
		if err == nil {
			var result <-chan error
			if result, _, err = f.attempt(f.ctx, pod, remote, f.local); err == nil {
				f.mu.Lock()
				f.pod, f.reopened = pod, f.reopened+1
				f.mu.Unlock()
				f.log("port forward re-opened", map[string]interface{}{"pod": pod, "local_port": f.local})
				return result
			}
		}
		if f.ctx.Err() != nil {
			return nil
		}
		f.log("port forward could not re-open yet; retrying", map[string]interface{}{"error": err.Error(), "retry_in": delay.String()})
	}
}

func (f *portForward) currentPod() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pod
}

// reopenCount is how many times the forward re-opened after a lost connection.
func (f *portForward) reopenCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reopened
}

// close stops the forward and waits (at most pfCloseTimeout) until its goroutines have ended.
func (f *portForward) close() {
	f.cancel()
	select {
	case <-f.done:
	case <-time.After(pfCloseTimeout):
		f.log("port forward did not stop in time", map[string]interface{}{"timeout": pfCloseTimeout.String()})
	}
}

// portForwards are the forwards open in this provider process, by id (the ephemeral
// resource's private data), so Close finds its own.
var portForwards = struct {
	sync.Mutex
	m map[string]*portForward
}{m: map[string]*portForward{}}

func registerPortForward(f *portForward) {
	portForwards.Lock()
	defer portForwards.Unlock()
	portForwards.m[f.id] = f
}

// takePortForward removes and returns the forward of id (nil when this process has none).
func takePortForward(id string) *portForward {
	portForwards.Lock()
	defer portForwards.Unlock()
	f := portForwards.m[id]
	delete(portForwards.m, id)
	return f
}

// openPortForwards is the number of forwards open in this process.
func openPortForwards() int {
	portForwards.Lock()
	defer portForwards.Unlock()
	return len(portForwards.m)
}

// checkThrough GETs http://addr<path> through an open forward: the status code and the first
// pfCheckBodyLimit bytes of the body. Redirects are not followed (they may leave the
// forward). A request that gets no response is retried (the forward re-opens a connection
// that failed) until pfCheckTimeout.
func checkThrough(ctx context.Context, addr, path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, pfCheckTimeout)
	defer cancel()
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	u := (&url.URL{Scheme: "http", Host: addr}).String() + path
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, "", err
		}
		resp, err := cl.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(io.LimitReader(resp.Body, pfCheckBodyLimit))
			_ = resp.Body.Close()
			return resp.StatusCode, string(b), rerr
		}
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, "", fmt.Errorf("GET %s: %w", u, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
}

// localAddress is 127.0.0.1:port.
func localAddress(port uint16) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))) }
