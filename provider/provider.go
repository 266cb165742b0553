// Package provider is the Gantry Terraform provider (terraform-plugin-framework, protocol 6).
// Its configuration takes the kubernetes provider's connection attributes and KUBE_* variables;
// resources map their model to the gantry.dev/v1alpha1 types, write them by server-side apply
// and wait on their status through internal/wait.
//
// No API call is made at plan: clients are built on the first CRUD or import call, after
// kube.Reach checks that the API server answers (bounded by connect_timeout), so an unreachable
// cluster fails the run instead of retrying forever. Mistakes that need no cluster are reported
// at plan by validators, naming the attribute.
package provider

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/providervalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var (
	_ provider.Provider                     = (*gantryProvider)(nil)
	_ provider.ProviderWithConfigValidators = (*gantryProvider)(nil)
	_ provider.ProviderWithValidateConfig   = (*gantryProvider)(nil)
	_ provider.ProviderWithListResources    = (*gantryProvider)(nil)
	_ provider.ProviderWithActions          = (*gantryProvider)(nil)
	_ provider.ProviderWithFunctions        = (*gantryProvider)(nil)
)

// New returns the provider factory for providerserver.Serve; version is the release version
// ("dev" for local builds).
func New(version string) func() provider.Provider {
	quietSDKLogs()
	return func() provider.Provider { return &gantryProvider{version: version} }
}

type gantryProvider struct {
	version string
	// configured is what the last Configure handed the resources (nil before one, or after one
	// that failed): the ReadResource fast path reads with the same clients (configuredData).
	configured atomic.Pointer[providerData]
}

// gantryProviderModel is the provider configuration block.
type gantryProviderModel struct {
	ConfigPath            types.String  `tfsdk:"config_path"`
	ConfigPaths           []string      `tfsdk:"config_paths"`
	ConfigContext         types.String  `tfsdk:"config_context"`
	ConfigContextAuthInfo types.String  `tfsdk:"config_context_auth_info"`
	ConfigContextCluster  types.String  `tfsdk:"config_context_cluster"`
	Host                  types.String  `tfsdk:"host"`
	Token                 types.String  `tfsdk:"token"`
	ClusterCACertificate  types.String  `tfsdk:"cluster_ca_certificate"`
	ClientCertificate     types.String  `tfsdk:"client_certificate"`
	ClientKey             types.String  `tfsdk:"client_key"`
	Insecure              types.Bool    `tfsdk:"insecure"`
	TLSServerName         types.String  `tfsdk:"tls_server_name"`
	ProxyURL              types.String  `tfsdk:"proxy_url"`
	Exec                  *execModel    `tfsdk:"exec"`
	QPS                   types.Float64 `tfsdk:"qps"`
	Burst                 types.Int64   `tfsdk:"burst"`
	ConnectTimeout        types.String  `tfsdk:"connect_timeout"`
}

type execModel struct {
	APIVersion types.String      `tfsdk:"api_version"`
	Command    types.String      `tfsdk:"command"`
	Args       []string          `tfsdk:"args"`
	Env        map[string]string `tfsdk:"env"`
}

func (p *gantryProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "gantry"
	resp.Version = p.version
}

func (p *gantryProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The Gantry provider writes Gantry custom resources (`gantry.dev/v1alpha1`) to a Kubernetes " +
			"cluster and waits until the Gantry reconciler reports them ready, or fails the apply with the reason. " +
			"Connection settings are those of the `kubernetes` provider, with the same `KUBE_*` environment variables; " +
			"an attribute set in the configuration wins over its environment variable, and credentials are one unit: " +
			"when the configuration sets `token`, `client_certificate`/`client_key` or `exec`, the credential variables " +
			"`KUBE_TOKEN`, `KUBE_CLIENT_CERT_DATA` and `KUBE_CLIENT_KEY_DATA` are ignored. `KUBECONFIG` is not read. " +
			"The provider contacts the cluster only while applying, refreshing or importing, never to plan new " +
			"resources; an API server it cannot reach fails the run within `connect_timeout`.",
		Attributes: map[string]schema.Attribute{
			"config_path": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Path to a kubeconfig file; `~` is expanded. It must exist and parse when Terraform " +
					"plans. Environment variable: `KUBE_CONFIG_PATH`. Conflicts with `config_paths`.",
				Validators: []validator.String{checkString{"a readable kubeconfig file", readableKubeconfig, ""}},
			},
			"config_paths": schema.ListAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Kubeconfig files merged in order, like a `KUBECONFIG` list (the first file that sets a " +
					"value wins). Environment variable: `KUBE_CONFIG_PATHS` (`:`-separated on Unix, `;` on Windows).",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(
					stringvalidator.LengthAtLeast(1), checkString{"a readable kubeconfig file", readableKubeconfig, ""})},
			},
			"config_context": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Kubeconfig context to use instead of `current-context`. Environment variable: `KUBE_CTX`.",
			},
			"config_context_auth_info": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Kubeconfig user to use instead of the context's. Environment variable: `KUBE_CTX_AUTH_INFO`.",
			},
			"config_context_cluster": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Kubeconfig cluster to use instead of the context's. Environment variable: `KUBE_CTX_CLUSTER`.",
			},
			"host": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "API server URL, e.g. `https://203.0.113.10:6443` (`https://` is assumed when no scheme is " +
					"given). Overrides the kubeconfig's server. Environment variable: `KUBE_HOST`.",
				Validators: []validator.String{checkString{"an https:// or http:// URL, or host:port", kube.CheckHost, ""}},
			},
			"token": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "Bearer token. Environment variable: `KUBE_TOKEN`. Conflicts with `exec` and `client_certificate`.",
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM-encoded CA certificate(s) of the API server. Environment variable: `KUBE_CLUSTER_CA_CERT_DATA`.",
				Validators:          []validator.String{checkString{"PEM-encoded certificates", kube.CheckCACertificates, ""}},
			},
			"client_certificate": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "PEM-encoded client certificate for TLS authentication; needs `client_key`. " +
					"Environment variable: `KUBE_CLIENT_CERT_DATA`.",
				Validators: []validator.String{checkString{"a PEM-encoded certificate", kube.CheckClientCertificate, ""}},
			},
			"client_key": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "PEM-encoded private key of `client_certificate`. Environment variable: `KUBE_CLIENT_KEY_DATA`.",
				Validators:          []validator.String{checkString{"a PEM-encoded private key", kube.CheckClientKey, ""}},
			},
			"insecure": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Skip verification of the API server's certificate (not for production). Environment variable: `KUBE_INSECURE`.",
			},
			"tls_server_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Server name used to verify the API server's certificate. Environment variable: `KUBE_TLS_SERVER_NAME`.",
			},
			"proxy_url": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "URL of an HTTP(S) or SOCKS5 proxy for API requests, e.g. `http://proxy.internal:3128`. Environment variable: `KUBE_PROXY_URL`.",
				Validators:          []validator.String{proxyURLValidator{}},
			},
			"qps": schema.Float64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("Sustained API request rate of the client, in requests per second, at least 1 (default %v; "+
					"client-go's own default of 5, which the kubernetes provider keeps, throttles parallel applies). "+
					"Environment variable: `GANTRY_QPS`.", kube.DefaultQPS),
				Validators: []validator.Float64{float64validator.AtLeast(1)},
			},
			"burst": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("API request burst of the client, at least 1 (default %d; client-go's default is 10). "+
					"Environment variable: `GANTRY_BURST`.", kube.DefaultBurst),
				Validators: []validator.Int64{int64validator.AtLeast(1)},
			},
			"connect_timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("How long to try reaching an API server that has not answered yet, as a duration "+
					"(`\"20s\"`, `\"1m\"`; default `\"%s\"`).\n\nA refresh, apply or import against an endpoint that refuses "+
					"connections, does not resolve or does not answer fails after this long, quoting the last dial, DNS or TLS "+
					"error; a certificate that does not verify, or http:// to an HTTPS port (or the reverse), fails at once. It bounds only "+
					"the first contact of a run: once the API server has answered, waits ride out API server restarts until "+
					"their own `timeouts`. Environment variable: `%s`.", kube.DefaultConnectTimeout, kube.EnvConnectTimeout),
				Validators: []validator.String{checkString{"a duration greater than zero", validConnectTimeout, ""}},
			},
		},
		Blocks: map[string]schema.Block{
			"exec": schema.SingleNestedBlock{
				MarkdownDescription: "A client-go credential plugin that prints an `ExecCredential` (e.g. `aws eks get-token`) the provider authenticates with.\n\nIt is " +
					"run again whenever the credential it returned expires (its `expirationTimestamp`) or is rejected, so long " +
					"waits outlive short-lived tokens; the provider never caches a token itself. The command must exist where " +
					"Terraform runs. Conflicts with `token` and `client_certificate` (an error at plan). When `exec` is set, " +
					"`KUBE_TOKEN`, `KUBE_CLIENT_CERT_DATA` and `KUBE_CLIENT_KEY_DATA` are ignored, and so are the token, client " +
					"certificate and auth provider of the kubeconfig's user.",
				// A block's attributes cannot be Required (the framework would require them when the
				// block is absent too), so the block requires them when present.
				Validators: []validator.Object{objectvalidator.AlsoRequires(
					path.MatchRelative().AtName("api_version"), path.MatchRelative().AtName("command"))},
				Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "ExecCredential API version the plugin speaks: `client.authentication.k8s.io/v1` or " +
							"`client.authentication.k8s.io/v1beta1`. Required in the block.",
						Validators: []validator.String{stringvalidator.OneOf(kube.ExecAPIVersions...)},
					},
					"command": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Plugin executable, looked up in `PATH`. Required in the block.",
						Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
					},
					"args": schema.ListAttribute{
						Optional:            true,
						ElementType:         types.StringType,
						MarkdownDescription: "Arguments of the plugin.",
					},
					"env": schema.MapAttribute{
						Optional:            true,
						Sensitive:           true,
						ElementType:         types.StringType,
						MarkdownDescription: "Extra environment variables of the plugin, name → value.",
					},
				},
			},
		},
	}
}

func (p *gantryProvider) ConfigValidators(context.Context) []provider.ConfigValidator {
	return []provider.ConfigValidator{
		providervalidator.Conflicting(path.MatchRoot("config_path"), path.MatchRoot("config_paths")),
		providervalidator.Conflicting(path.MatchRoot("exec"), path.MatchRoot("token")),
		providervalidator.Conflicting(path.MatchRoot("exec"), path.MatchRoot("client_certificate")),
		providervalidator.Conflicting(path.MatchRoot("token"), path.MatchRoot("client_certificate")),
		providervalidator.RequiredTogether(path.MatchRoot("client_certificate"), path.MatchRoot("client_key")),
	}
}

// Configure records the connection settings. It never contacts the cluster and never fails
// on values that are unknown at plan time (e.g. a host from a cluster created in the same
// apply): Terraform configures the provider again with known values before applying. While
// Terraform destroys, the configuration's errors (a credential plugin that is not installed,
// and those DestroyTolerant kept from its validation) fail the requests that need the cluster
// instead of the destroy.
func (p *gantryProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	p.configured.Store(nil)
	var cfg gantryProviderModel
	if req.Config.Raw.IsFullyKnown() {
		resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	var data *providerData
	if !req.Config.Raw.IsFullyKnown() {
		tflog.Debug(ctx, "provider configuration has unknown values; clients will not be usable until it is known")
		if req.ClientCapabilities.DeferralAllowed {
			// As the kubernetes and helm providers: a client that can defer (Terraform Stacks,
			// `terraform plan -allow-deferral`) gets every plan, refresh, data source read and
			// import of this provider deferred until the configuration is known (e.g. a host
			// from a cluster created in the same run), instead of the error below.
			resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
		}
		data = newProviderData(kube.NewLazy(func() (*kube.Clients, error) { return nil, errConfigNotKnown }))
	} else {
		s := settingsFromModel(cfg)
		if s.Exec != nil {
			if _, err := exec.LookPath(s.Exec.Command); err != nil {
				detail := fmt.Sprintf("exec.command = %q: the credential plugin cannot be run on the machine Terraform runs on: %v. "+
					"Install it (e.g. the AWS CLI for `aws eks get-token`) or give its full path.", s.Exec.Command, err)
				if !deferConfigError(ctx, "Credential Plugin Not Found", detail) { // while destroying: DestroyTolerant
					resp.Diagnostics.AddAttributeError(path.Root("exec").AtName("command"), "Credential Plugin Not Found", detail)
					return
				}
			}
		}
		s.UserAgent = fmt.Sprintf("terraform-provider-gantry/%s (+https://registry.terraform.io/providers/gantry-dev/gantry) Terraform/%s", p.version, req.TerraformVersion)
		data = newProviderData(kube.LazyFromSettings(s))
	}
	if err := configErrorWhileDestroying(ctx); err != nil {
		// While destroying, a configuration with errors fails what needs the cluster, not the
		// destroy of what does not (DestroyTolerant).
		data = newProviderData(kube.NewLazy(func() (*kube.Clients, error) { return nil, err }))
	}
	data.version = p.version
	resp.ResourceData = data
	resp.DataSourceData = data
	resp.ListResourceData = data
	resp.ActionData = data
	resp.EphemeralResourceData = data
	p.configured.Store(data)
}

func (p *gantryProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewPerformerResource,
		NewExecutorResource,
		NewAggregatorResource,
		NewPackageSetResource,
		NewWorkspaceResource,
	}
}

// Actions are the day-2 operations of Terraform >= 1.14 (actions.go).
func (p *gantryProvider) Actions(context.Context) []func() action.Action {
	return []func() action.Action{
		NewPerformerRestartAction,
		NewPackageSetResumeAction,
		NewPackageSetRerunAction,
		NewPackageSetClearQuarantineAction,
	}
}

// ListResources are the list resources of `terraform query` (Terraform >= 1.14): one per
// resource type, of the same name (see list.go).
func (p *gantryProvider) ListResources(context.Context) []func() list.ListResource {
	return []func() list.ListResource{
		NewPerformerListResource,
		NewExecutorListResource,
		NewAggregatorListResource,
		NewPackageSetListResource,
		NewWorkspaceListResource,
	}
}

// DataSources: one per kind (data_sources.go) and gantry_nodes.
func (p *gantryProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewPerformerDataSource,
		NewExecutorDataSource,
		NewAggregatorDataSource,
		NewPackageSetDataSource,
		NewWorkspaceDataSource,
		NewNodesDataSource,
	}
}

// Functions are the provider-defined functions of Terraform >= 1.8 and OpenTofu >= 1.7
// (function_<name>.go): the preset and instance type catalogs and the package image rule,
// which need no cluster.
func (p *gantryProvider) Functions(context.Context) []func() function.Function {
	return []func() function.Function{
		NewPresetSizingFunction,
		NewInstanceTypeFunction,
		NewWorkspaceSizingFunction,
		NewPackageImageFunction,
	}
}

// settingsFromModel maps the configuration to kube.Settings; unset attributes stay zero so
// the KUBE_*/GANTRY_* environment fills them later (kube.Settings.WithEnv).
func settingsFromModel(m gantryProviderModel) kube.Settings {
	s := kube.Settings{
		ConfigPath:            m.ConfigPath.ValueString(),
		ConfigPaths:           m.ConfigPaths,
		ConfigContext:         m.ConfigContext.ValueString(),
		ConfigContextAuthInfo: m.ConfigContextAuthInfo.ValueString(),
		ConfigContextCluster:  m.ConfigContextCluster.ValueString(),
		Host:                  m.Host.ValueString(),
		Token:                 m.Token.ValueString(),
		ClusterCACertificate:  m.ClusterCACertificate.ValueString(),
		ClientCertificate:     m.ClientCertificate.ValueString(),
		ClientKey:             m.ClientKey.ValueString(),
		TLSServerName:         m.TLSServerName.ValueString(),
		ProxyURL:              m.ProxyURL.ValueString(),
		QPS:                   float32(m.QPS.ValueFloat64()),
		Burst:                 int(m.Burst.ValueInt64()),
		ConnectTimeout:        connectTimeout(m.ConnectTimeout), // checked at plan by its validator
	}
	if !m.Insecure.IsNull() {
		b := m.Insecure.ValueBool()
		s.Insecure = &b
	}
	if m.Exec != nil && !m.Exec.Command.IsNull() {
		s.Exec = &kube.ExecSettings{
			APIVersion: m.Exec.APIVersion.ValueString(),
			Command:    m.Exec.Command.ValueString(),
			Args:       m.Exec.Args,
			Env:        m.Exec.Env,
		}
	}
	return s
}

// providerData is shared by every resource of one provider instance: the lazily built
// clients and one wait registry (one shared informer per kind and namespace).
type providerData struct {
	clients *kube.Lazy
	// version is the provider's release version: a refresh reuses state read by the same
	// version only (readUnchanged).
	version string

	once sync.Once
	reg  *wait.Registry
	// reads are the nodes and pods the plans read, listed once; fleet is what the rollout
	// previews read besides (package sets, PodDisruptionBudgets), listed once.
	reads clusterReads
	fleet fleetCache
}

func newProviderData(clients *kube.Lazy) *providerData {
	return &providerData{clients: clients}
}

// get returns the clients and the wait registry, building them on first use.
func (d *providerData) get() (*kube.Clients, *wait.Registry, error) {
	if d == nil {
		return nil, nil, fmt.Errorf("the provider has not been configured; please report this issue to the provider developers")
	}
	c, err := d.clients.Get()
	if err != nil {
		return nil, nil, err
	}
	d.once.Do(func() {
		d.reg = wait.NewRegistry(c.Dynamic, c.Core)
		d.reg.Log = func(ctx context.Context, msg string, fields map[string]interface{}) { tflog.Debug(ctx, msg, fields) }
	})
	return c, d.reg, nil
}

// providerDataFrom is the checked ProviderData assertion every resource's Configure uses.
func providerDataFrom(data any) (*providerData, error) {
	if data == nil {
		return nil, nil // the provider is not configured yet (validation, early plan)
	}
	d, ok := data.(*providerData)
	if !ok {
		return nil, fmt.Errorf("expected *provider.providerData, got %T; please report this issue to the provider developers", data)
	}
	return d, nil
}

// connectTimeout returns the configured connect_timeout, or 0 (unset: KUBE_CONNECT_TIMEOUT or
// the default) when it is null, unknown or invalid (its attribute validator reports invalid
// values at plan).
func connectTimeout(v types.String) time.Duration {
	if v.IsNull() || v.IsUnknown() {
		return 0
	}
	d, err := kube.ParseConnectTimeout(v.ValueString())
	if err != nil {
		return 0
	}
	return d
}

// checkString is a validator.String from a check that returns what is wrong with a value
// (the internal/kube checks); null and unknown values are skipped, errors name the attribute.
type checkString struct {
	desc  string
	check func(string) error
	// title is the diagnostic's summary; "" means "Invalid Provider Configuration".
	title string
}

func (v checkString) Description(context.Context) string             { return v.desc }
func (v checkString) MarkdownDescription(ctx context.Context) string { return v.desc }

func (v checkString) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		title := v.title
		if title == "" {
			title = "Invalid Provider Configuration"
		}
		resp.Diagnostics.AddAttributeError(req.Path, title,
			fmt.Sprintf("%s: %s.", req.Path, err))
	}
}

func readableKubeconfig(p string) error {
	_, _, err := kube.LoadKubeconfigs([]string{p})
	return err
}

func validConnectTimeout(v string) error {
	_, err := kube.ParseConnectTimeout(v)
	return err
}

// ValidateConfig checks, at plan time and without contacting the cluster, what the attribute
// validators cannot see alone: client_certificate and client_key are a key pair, and
// config_context, config_context_auth_info and config_context_cluster name entries of the
// kubeconfig (config_path or config_paths, else KUBE_CONFIG_PATH or KUBE_CONFIG_PATHS).
// Unknown values are skipped; errors name the attribute.
func (p *gantryProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	str := func(name string) (string, bool) {
		var v types.String
		if d := req.Config.GetAttribute(ctx, path.Root(name), &v); d.HasError() || v.IsNull() || v.IsUnknown() {
			return "", false
		}
		return v.ValueString(), true
	}
	cert, certOK := str("client_certificate")
	key, keyOK := str("client_key")
	if certOK && keyOK && kube.CheckClientCertificate(cert) == nil && kube.CheckClientKey(key) == nil {
		if err := kube.CheckKeyPair(cert, key); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("client_key"), "Invalid Provider Configuration", err.Error()+".")
		}
	}

	paths, known := p.kubeconfigPaths(ctx, req)
	if !known || len(paths) == 0 {
		return
	}
	names := map[string]string{}
	for _, a := range []string{"config_context", "config_context_auth_info", "config_context_cluster"} {
		if v, ok := str(a); ok {
			names[a] = v
		}
	}
	if len(names) == 0 {
		return
	}
	cfg, _, err := kube.LoadKubeconfigs(paths)
	if err != nil {
		return // reported on config_path(s) by their validators, or at first use for KUBE_CONFIG_PATH(S)
	}
	cErr, aErr, clErr := kube.CheckContext(cfg, names["config_context"], names["config_context_auth_info"], names["config_context_cluster"])
	for i, err := range []error{cErr, aErr, clErr} {
		a := []string{"config_context", "config_context_auth_info", "config_context_cluster"}[i]
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root(a), "Invalid Provider Configuration",
				fmt.Sprintf("%s: %s (kubeconfig: %s).", a, err, strings.Join(paths, ", ")))
		}
	}
}

// kubeconfigPaths returns the kubeconfig files the provider will read: config_path, else
// config_paths, else KUBE_CONFIG_PATH, else KUBE_CONFIG_PATHS. known is false when the
// configuration's value is not known yet.
func (p *gantryProvider) kubeconfigPaths(ctx context.Context, req provider.ValidateConfigRequest) (paths []string, known bool) {
	var one types.String
	req.Config.GetAttribute(ctx, path.Root("config_path"), &one)
	if one.IsUnknown() {
		return nil, false
	}
	if !one.IsNull() {
		return []string{one.ValueString()}, true
	}
	var many types.List
	req.Config.GetAttribute(ctx, path.Root("config_paths"), &many)
	if many.IsUnknown() {
		return nil, false
	}
	if !many.IsNull() {
		for _, e := range many.Elements() {
			s, ok := e.(types.String)
			if !ok || s.IsUnknown() {
				return nil, false
			}
			paths = append(paths, s.ValueString())
		}
		return paths, true
	}
	s, err := kube.Settings{}.WithEnv(nil)
	if err != nil {
		return nil, true
	}
	if s.ConfigPath != "" {
		return []string{s.ConfigPath}, true
	}
	return s.ConfigPaths, true
}

// proxyURLValidator checks proxy_url at validate time with kube.CheckProxyURL (a value from
// KUBE_PROXY_URL is checked when the client is built, kube.Settings.WithEnv).
type proxyURLValidator struct{}

func (proxyURLValidator) Description(context.Context) string {
	return "an http://, https:// or socks5:// URL with a host"
}
func (v proxyURLValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (proxyURLValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := kube.CheckProxyURL(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Proxy URL", fmt.Sprintf("%s: %v.", req.Path, err))
	}
}
