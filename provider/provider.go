// Package provider is the Gantry Terraform provider (terraform-plugin-framework, protocol 6):
// the provider configuration (the kubernetes provider's connection attributes and KUBE_*
// environment variables, plus qps/burst) and one file per resource type. Resources map their
// Terraform model to the gantry.dev/v1alpha1 API types, write them with server-side apply and
// wait on their status through internal/wait.
//
// The provider makes no API call at plan time: Configure only records the settings, and the
// clients and the shared wait registry are built on the first Create, Read, Update, Delete or
// ImportState.
package provider

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/providervalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
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
)

// New returns the provider factory for providerserver.Serve; version is the release version
// ("dev" for local builds).
func New(version string) func() provider.Provider {
	quietSDKLogs()
	return func() provider.Provider { return &gantryProvider{version: version} }
}

type gantryProvider struct {
	version string
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
			"an attribute set in the configuration wins over its environment variable. `KUBECONFIG` is not read. " +
			"The provider contacts the cluster only while applying, refreshing or importing, never to plan.",
		Attributes: map[string]schema.Attribute{
			"config_path": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Path to a kubeconfig file; `~` is expanded. Environment variable: `KUBE_CONFIG_PATH`. " +
					"Conflicts with `config_paths`.",
			},
			"config_paths": schema.ListAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Kubeconfig files merged in order, like a `KUBECONFIG` list (the first file that sets a " +
					"value wins). Environment variable: `KUBE_CONFIG_PATHS` (`:`-separated on Unix, `;` on Windows).",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
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
			},
			"token": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "Bearer token. Environment variable: `KUBE_TOKEN`. Conflicts with `exec` and `client_certificate`.",
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM-encoded CA certificate(s) of the API server. Environment variable: `KUBE_CLUSTER_CA_CERT_DATA`.",
			},
			"client_certificate": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "PEM-encoded client certificate for TLS authentication; needs `client_key`. " +
					"Environment variable: `KUBE_CLIENT_CERT_DATA`.",
			},
			"client_key": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "PEM-encoded private key of `client_certificate`. Environment variable: `KUBE_CLIENT_KEY_DATA`.",
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
				MarkdownDescription: "URL of an HTTP(S) or SOCKS5 proxy for API requests. Environment variable: `KUBE_PROXY_URL`.",
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
		},
		Blocks: map[string]schema.Block{
			"exec": schema.SingleNestedBlock{
				MarkdownDescription: "A client-go credential plugin that prints an `ExecCredential` (e.g. `aws eks get-token`), " +
					"run on every token refresh, so long waits outlive short-lived tokens. The command must exist where " +
					"Terraform runs. Conflicts with `token` and `client_certificate`.",
				// A block's attributes cannot be Required (the framework would require them when the
				// block is absent too), so the block requires them when present.
				Validators: []validator.Object{objectvalidator.AlsoRequires(
					path.MatchRelative().AtName("api_version"), path.MatchRelative().AtName("command"))},
				Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "ExecCredential API version, e.g. `client.authentication.k8s.io/v1beta1`. Required in the block.",
						Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
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
// apply): Terraform configures the provider again with known values before applying.
func (p *gantryProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
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
		data = newProviderData(kube.NewLazy(func() (*kube.Clients, error) {
			return nil, fmt.Errorf("the provider configuration contains values that are not known yet " +
				"(they depend on resources not created yet); apply those first, e.g. with -target")
		}))
	} else {
		s := settingsFromModel(cfg)
		s.UserAgent = fmt.Sprintf("terraform-provider-gantry/%s (+https://registry.terraform.io/providers/gantry-dev/gantry) Terraform/%s", p.version, req.TerraformVersion)
		data = newProviderData(kube.LazyFromSettings(s))
	}
	resp.ResourceData = data
	resp.DataSourceData = data
}

func (p *gantryProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewPerformerResource,
		NewExecutorResource,
		NewPackageSetResource,
		NewWorkspaceResource,
	}
}

func (p *gantryProvider) DataSources(context.Context) []func() datasource.DataSource {
	return nil
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

	once sync.Once
	reg  *wait.Registry
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
