package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/ephemeralvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// gantry_port_forward (Terraform >= 1.10, OpenTofu >= 1.11): a local endpoint of a performer,
// a workspace or any pods for the length of one plan or apply, as `kubectl port-forward`
// gives one: smoke tests in provisioners, another provider's configuration, a check block.
// The forward itself is port_forward.go.

var (
	_ ephemeral.EphemeralResourceWithConfigure        = (*portForwardEphemeralResource)(nil)
	_ ephemeral.EphemeralResourceWithClose            = (*portForwardEphemeralResource)(nil)
	_ ephemeral.EphemeralResourceWithConfigValidators = (*portForwardEphemeralResource)(nil)
)

// NewPortForwardEphemeralResource returns the gantry_port_forward ephemeral resource.
func NewPortForwardEphemeralResource() ephemeral.EphemeralResource {
	return &portForwardEphemeralResource{}
}

type portForwardEphemeralResource struct{ data *providerData }

type portForwardModel struct {
	Performer     *pfObjectModel    `tfsdk:"performer"`
	Workspace     *pfObjectModel    `tfsdk:"workspace"`
	PodSelector   *pfSelectorModel  `tfsdk:"pod_selector"`
	PodName       types.String      `tfsdk:"pod_name"`
	RemotePort    types.Int64       `tfsdk:"remote_port"`
	LocalPort     types.Int64       `tfsdk:"local_port"`
	CheckPath     types.String      `tfsdk:"check_path"`
	LocalAddress  types.String      `tfsdk:"local_address"`
	URL           types.String      `tfsdk:"url"`
	CheckResponse *pfCheckRespModel `tfsdk:"check_response"`
}

type pfObjectModel struct {
	Name      types.String `tfsdk:"name"`
	Namespace types.String `tfsdk:"namespace"`
}

type pfSelectorModel struct {
	Namespace   types.String      `tfsdk:"namespace"`
	MatchLabels map[string]string `tfsdk:"match_labels"`
}

type pfCheckRespModel struct {
	StatusCode types.Int64  `tfsdk:"status_code"`
	Body       types.String `tfsdk:"body"`
}

// pfPrivateKey is the private data key holding the forward's id.
const pfPrivateKey = "port_forward"

func (r *portForwardEphemeralResource) Metadata(_ context.Context, req ephemeral.MetadataRequest, resp *ephemeral.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_port_forward"
}

func (r *portForwardEphemeralResource) Configure(_ context.Context, req ephemeral.ConfigureRequest, resp *ephemeral.ConfigureResponse) {
	d, err := providerDataFrom(req.ProviderData)
	if err != nil {
		resp.Diagnostics.AddError("Unexpected Ephemeral Resource Configure Type", err.Error())
		return
	}
	r.data = d
}

func pfObjectAttribute(kind, what string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: fmt.Sprintf("The %s to forward to: the %s. Exactly one of `performer`, `workspace` and `pod_selector`.",
			kind, what),
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: fmt.Sprintf("Name of the %s.", kind),
				Validators:          []validator.String{dnsName{what: kind + " name"}},
			},
			"namespace": pfNamespaceAttribute(kind),
		},
	}
}

func pfNamespaceAttribute(of string) schema.StringAttribute {
	return schema.StringAttribute{
		Optional:            true,
		MarkdownDescription: fmt.Sprintf("Namespace of the %s; `default` when omitted.", of),
		Validators: []validator.String{
			stringvalidator.LengthBetween(1, 63),
			stringvalidator.RegexMatches(dns1123Label, "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"),
		},
	}
}

func (r *portForwardEphemeralResource) Schema(_ context.Context, _ ephemeral.SchemaRequest, resp *ephemeral.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A local endpoint of a performer, a workspace or any pods for the length of one Terraform run, as " +
			"`kubectl port-forward` gives one (Terraform 1.10 and later, OpenTofu 1.11 and later): a port on `127.0.0.1` " +
			"forwarded through the Kubernetes API server to a Ready pod of the target. Use it for smoke tests " +
			"(`local-exec` provisioners), to configure another provider against a service that is not exposed, or in " +
			"other ephemeral resources. Nothing is stored in plan or state.\n\n" +
			"Terraform opens the forward when something needs it, during plan as well as apply, and closes it at the end " +
			"of each (the provider then stops it: no listener, no connection is left). A performer or workspace is " +
			"reached through the Service its reconciler made (`performer-<name>`, `workspace-<name>`): its pods and its " +
			"serving port (a performer's `grpc_port`, a workspace's inference port). Open fails, naming the target, when " +
			"the target does not exist or has no Ready pod; the message lists its pods and why each is not Ready (phase, " +
			"scheduling, container states, the newest Warning event), as a failed apply does. If the connection to the " +
			"pod is lost during the run (the pod restarts or is replaced), the forward re-opens on the same local port " +
			"to a Ready pod of the target.\n\n" +
			"Terraform opens an ephemeral resource during plan as soon as its arguments are known. When the same " +
			"configuration creates the target, set `pod_name = gantry_performer.<name>.pod_name` (known once the " +
			"performer is applied): a run that creates or changes the performer then opens the forward during apply, " +
			"after the performer is Running (for another target, derive any argument from an attribute known only once it is " +
			"applied). With a client that can defer (`-allow-deferral`, Stacks), a target that " +
			"does not exist yet defers the forward instead of failing.",
		Attributes: map[string]schema.Attribute{
			"performer": pfObjectAttribute("Performer", "performer's Ready pod, on its gRPC port (`grpc_port`) unless `remote_port` is set"),
			"workspace": pfObjectAttribute("Workspace", "inference workspace's Ready pod (the leader of a multi-node group), on its "+
				"inference port unless `remote_port` is set; a tuning workspace needs `remote_port`"),
			"pod_selector": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Any pods to forward to: a Ready pod whose labels match. Needs `remote_port`. Exactly one of " +
					"`performer`, `workspace` and `pod_selector`.",
				Attributes: map[string]schema.Attribute{
					"namespace": pfNamespaceAttribute("pods"),
					"match_labels": schema.MapAttribute{
						ElementType:         types.StringType,
						Required:            true,
						MarkdownDescription: "Labels the pod must carry (all of them).",
						Validators:          []validator.Map{mapvalidator.SizeAtLeast(1), labelsValidator{}},
					},
				},
				Validators: []validator.Object{objectvalidator.AlsoRequires(path.MatchRoot("remote_port"))},
			},
			"pod_name": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "The pod forwarded to.\n\nSet it to forward to that pod (it must be one of the target's pods " +
					"and Ready), e.g. `gantry_performer.<name>.pod_name`, which also makes the forward open only once the " +
					"performer is applied; an empty string means any (and stays empty). Without it, a Ready pod of the target " +
					"(the first by name), whose name this attribute then holds. A forward that loses its pod during the run " +
					"re-opens to this pod when it is Ready again, else to another Ready pod of the target.",
				Validators: []validator.String{stringvalidator.Any(stringvalidator.LengthAtMost(0), dnsName{what: "pod name"})},
			},
			"remote_port": schema.Int64Attribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "The pod's port forwarded to. Required with `pod_selector`; for a performer or a workspace " +
					"it defaults to the port its Service serves.",
				Validators: []validator.Int64{int64validator.Between(1, 65535)},
			},
			"local_port": schema.Int64Attribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "The local port on `127.0.0.1`. Without it, a free port (another on each run): use " +
					"`local_address` or `url`. Open fails when the given port is in use.",
				Validators: []validator.Int64{int64validator.Between(1, 65535)},
			},
			"check_path": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "When set, Open sends one HTTP `GET` of this path (e.g. `/healthz`) through the forward and " +
					"fails unless the answer is 2xx or 3xx (redirects are not followed); the answer is in `check_response`. " +
					"Proves that traffic flows before anything uses the forward.",
				Validators: []validator.String{checkString{"an absolute URL path starting with /", checkPathError, "Invalid Port Forward Configuration"}},
			},
			"local_address": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`127.0.0.1:<local port>`: where the forward listens, for TCP and gRPC clients.",
			},
			"url": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`http://127.0.0.1:<local port>`.",
			},
			"check_response": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The answer to `check_path`'s GET; null without `check_path`.",
				Attributes: map[string]schema.Attribute{
					"status_code": schema.Int64Attribute{Computed: true, MarkdownDescription: "The HTTP status code."},
					"body": schema.StringAttribute{Computed: true, MarkdownDescription: fmt.Sprintf(
						"The response body (its first %d KiB).", pfCheckBodyLimit>>10)},
				},
			},
		},
	}
}

// checkPathError is what is wrong with check_path (nil when nothing).
func checkPathError(s string) error {
	u, err := url.Parse(s)
	switch {
	case !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//"):
		return fmt.Errorf("%q must start with a single /", s)
	case err != nil:
		return err
	case u.Scheme != "" || u.Host != "":
		return fmt.Errorf("%q must be a path, not a URL", s)
	}
	return nil
}

func (r *portForwardEphemeralResource) ConfigValidators(context.Context) []ephemeral.ConfigValidator {
	return []ephemeral.ConfigValidator{
		ephemeralvalidator.ExactlyOneOf(path.MatchRoot("performer"), path.MatchRoot("workspace"), path.MatchRoot("pod_selector")),
	}
}

// target maps the (known) configuration to the forward's target.
func (m *portForwardModel) target() pfTarget {
	ns := func(v types.String) string {
		if v.ValueString() == "" {
			return "default"
		}
		return v.ValueString()
	}
	t := pfTarget{port: int32(m.RemotePort.ValueInt64()), pod: m.PodName.ValueString()}
	switch {
	case m.Performer != nil:
		t.kind, t.name, t.namespace = wait.Performer.Kind, m.Performer.Name.ValueString(), ns(m.Performer.Namespace)
	case m.Workspace != nil:
		t.kind, t.name, t.namespace = wait.Workspace.Kind, m.Workspace.Name.ValueString(), ns(m.Workspace.Namespace)
	case m.PodSelector != nil:
		t.namespace, t.labels = ns(m.PodSelector.Namespace), m.PodSelector.MatchLabels
	}
	return t
}

// targetPath is the attribute naming the target, for diagnostics.
func (m *portForwardModel) targetPath() path.Path {
	switch {
	case m.Performer != nil:
		return path.Root("performer")
	case m.Workspace != nil:
		return path.Root("workspace")
	}
	return path.Root("pod_selector")
}

// Open resolves the target to a Ready pod, opens the forward, runs check_path's GET through
// it and returns where it listens. A target that does not exist is deferred when the client
// allows it.
func (r *portForwardEphemeralResource) Open(ctx context.Context, req ephemeral.OpenRequest, resp *ephemeral.OpenResponse) {
	var m portForwardModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, _, err := r.data.get()
	if err != nil {
		if errors.Is(err, errConfigNotKnown) && req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &ephemeral.Deferred{Reason: ephemeral.DeferredReasonProviderConfigUnknown}
			return
		}
		resp.Diagnostics.Append(clientDiagnostic(err))
		return
	}
	t := m.target()
	f, pod, remote, err := openForward(ctx, c, t, uint16(m.LocalPort.ValueInt64()))
	var pe *pfError
	switch {
	case errors.As(err, &pe) && pe.absent && req.ClientCapabilities.DeferralAllowed:
		tflog.Info(ctx, "port forward target does not exist yet; deferring", map[string]interface{}{"target": t.String()})
		resp.Deferred = &ephemeral.Deferred{Reason: ephemeral.DeferredReasonAbsentPrereq}
		return
	case errors.As(err, &pe):
		resp.Diagnostics.AddAttributeError(m.targetPath(), pe.summary, pe.detail)
		return
	case err != nil:
		resp.Diagnostics.Append(pfOpenDiagnostic(t, err))
		return
	}
	addr := localAddress(f.local)
	if m.PodName.IsNull() { // a configured value stays as given (Terraform requires it), "" included
		m.PodName = types.StringValue(pod)
	}
	m.RemotePort, m.LocalPort = types.Int64Value(int64(remote)), types.Int64Value(int64(f.local))
	m.LocalAddress, m.URL = types.StringValue(addr), types.StringValue("http://"+addr)
	if p := m.CheckPath.ValueString(); p != "" {
		code, body, err := checkThrough(ctx, addr, p)
		if err == nil && (code < 200 || code > 399) {
			err = fmt.Errorf("GET %s answered %d: %s", p, code, truncate(body, 512))
		}
		if err != nil {
			f.close()
			resp.Diagnostics.AddAttributeError(path.Root("check_path"), "Port Forward Check Failed", fmt.Sprintf(
				"The forward from %s to pod %s/%s port %d (%s) opened, but check_path's GET through it failed: %v. The forward is closed.",
				addr, t.namespace, pod, remote, t, err))
			return
		}
		m.CheckResponse = &pfCheckRespModel{StatusCode: types.Int64Value(int64(code)), Body: types.StringValue(body)}
	}
	registerPortForward(f)
	id, _ := json.Marshal(map[string]string{"id": f.id})
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, pfPrivateKey, id)...)
	resp.Diagnostics.Append(resp.Result.Set(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		takePortForward(f.id).close()
		return
	}
	tflog.Info(ctx, "opened a port forward", map[string]interface{}{"target": t.String(), "pod": pod, "remote_port": remote, "local_address": addr})
}

// openForward finds a Ready pod of t and opens a forward to it on 127.0.0.1:local (0: a
// free port); it returns the forward (not registered yet), the pod and the remote port.
func openForward(ctx context.Context, c *kube.Clients, t pfTarget, local uint16) (*portForward, string, int32, error) {
	ep, err := resolveTarget(ctx, c, t)
	if err != nil {
		return nil, "", 0, asReadError(t.kind, err)
	}
	p, remote, err := pickPod(ctx, c.Core, t, ep)
	if err != nil {
		return nil, "", 0, asReadError("Pod", err)
	}
	logCtx := context.WithoutCancel(ctx)
	f := &portForward{
		id:   rand.String(16),
		dial: func(pod string) (httpstream.Dialer, error) { return podDialer(c.Config, c.Core, t.namespace, pod) },
		repick: func(ctx context.Context) (string, int32, error) {
			ep, err := resolveTarget(ctx, c, t)
			if err != nil {
				return "", 0, err
			}
			p, port, err := pickPod(ctx, c.Core, t, ep)
			if err != nil && t.pod != "" { // the pod given is gone or not Ready: any Ready pod of the target
				unpinned := t
				unpinned.pod = ""
				p, port, err = pickPod(ctx, c.Core, unpinned, ep)
			}
			if err != nil {
				return "", 0, err
			}
			return p.Name, port, nil
		},
		log: func(msg string, fields map[string]interface{}) {
			fields["target"] = t.String()
			tflog.Info(logCtx, msg, fields)
		},
	}
	if err := startPortForward(ctx, f, p.Name, remote, local); err != nil {
		return nil, "", 0, fmt.Errorf("pod %s (node %s) port %d: %w", p.Name, p.Spec.NodeName, remote, err)
	}
	return f, p.Name, remote, nil
}

// pfReadError is an API error reading the target or its pods.
type pfReadError struct {
	what string
	err  error
}

func (e *pfReadError) Error() string { return e.err.Error() }
func (e *pfReadError) Unwrap() error { return e.err }

// asReadError wraps an API error (not a *pfError) of reading what.
func asReadError(what string, err error) error {
	var pe *pfError
	if errors.As(err, &pe) {
		return err
	}
	if what == "" {
		what = "Pod"
	}
	return &pfReadError{what: what, err: err}
}

// pfOpenDiagnostic reports a forward that could not open for another reason than its target:
// an API error reading the target, or the forward itself (the upgrade refused, the local port
// in use).
func pfOpenDiagnostic(t pfTarget, err error) diag.Diagnostic {
	if strings.Contains(err.Error(), "unable to listen") || strings.Contains(err.Error(), "unable to create listener") {
		return diag.NewAttributeErrorDiagnostic(path.Root("local_port"), "Port Forward Failed",
			fmt.Sprintf("Could not listen for the forward to %s on 127.0.0.1: %v. Choose another local_port, or omit it for a free one.", t, err))
	}
	var re *pfReadError
	if errors.As(err, &re) {
		return apiDiagnostic(re.what, "Reading", re.err)
	}
	return diag.NewErrorDiagnostic("Port Forward Failed", fmt.Sprintf(
		"Could not open a port forward to %s through the Kubernetes API server: %v. The credentials need `get` and `create` "+
			"on `pods/portforward` in the namespace (the Terraform runner's ClusterRole gantry-terraform-runner-port-forward), "+
			"and the pod's node must serve port forwards (a kubelet; simulated nodes may not).", t, err))
}

// Close stops the forward Open started (nothing when this process has none: a provider
// restarted since, or an Open that failed).
func (r *portForwardEphemeralResource) Close(ctx context.Context, req ephemeral.CloseRequest, resp *ephemeral.CloseResponse) {
	b, diags := req.Private.GetKey(ctx, pfPrivateKey)
	resp.Diagnostics.Append(diags...)
	var k struct {
		ID string `json:"id"`
	}
	if len(b) == 0 || json.Unmarshal(b, &k) != nil {
		return
	}
	if f := takePortForward(k.ID); f != nil {
		f.close()
		tflog.Info(ctx, "closed a port forward", map[string]interface{}{"local_port": f.local, "pod": f.currentPod(), "reopened": f.reopenCount()})
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
