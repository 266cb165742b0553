// Package kube turns the provider's connection settings into a client-go *rest.Config and
// clients as hashicorp/terraform-provider-kubernetes does: the same attributes and KUBE_*
// variables, kubeconfig files only when config_path(s) are given (KUBECONFIG is not read),
// in-cluster configuration when nothing is given; loading is clientcmd's. The rate limit is
// raised to QPS 50 / burst 100 (GANTRY_QPS, GANTRY_BURST) because waiting on many resources in
// parallel is normal here. Only Reach contacts the cluster, so an unreachable endpoint fails
// within connect_timeout instead of being retried forever.
package kube

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/homedir"
)

// Defaults for the client rate limiter (requests per second and burst). client-go's own
// defaults (5/10) throttle a provider that applies and waits on tens of objects at once.
const (
	DefaultQPS   float32 = 50
	DefaultBurst int     = 100
)

// Environment variables read for settings the configuration leaves unset. The KUBE_* names are
// those of the kubernetes provider.
const (
	EnvConfigPath            = "KUBE_CONFIG_PATH"
	EnvConfigPaths           = "KUBE_CONFIG_PATHS" // list separated by os.PathListSeparator (":" on Unix)
	EnvConfigContext         = "KUBE_CTX"
	EnvConfigContextAuthInfo = "KUBE_CTX_AUTH_INFO"
	EnvConfigContextCluster  = "KUBE_CTX_CLUSTER"
	EnvHost                  = "KUBE_HOST"
	EnvToken                 = "KUBE_TOKEN"
	EnvClusterCACertData     = "KUBE_CLUSTER_CA_CERT_DATA"
	EnvClientCertData        = "KUBE_CLIENT_CERT_DATA"
	EnvClientKeyData         = "KUBE_CLIENT_KEY_DATA"
	EnvInsecure              = "KUBE_INSECURE"
	EnvTLSServerName         = "KUBE_TLS_SERVER_NAME"
	EnvProxyURL              = "KUBE_PROXY_URL"
	EnvQPS                   = "GANTRY_QPS"
	EnvBurst                 = "GANTRY_BURST"
)

// Settings are the provider's connection settings. The zero value of a field means "not set":
// WithEnv fills such fields from the environment, RESTConfig applies what is set on top of the
// kubeconfig file(s), if any.
type Settings struct {
	// ConfigPath is one kubeconfig file; "~" is expanded. Env: KUBE_CONFIG_PATH.
	ConfigPath string
	// ConfigPaths are kubeconfig files merged in order (the first file that sets a value wins,
	// as with KUBECONFIG). Env: KUBE_CONFIG_PATHS.
	ConfigPaths []string
	// ConfigContext selects a kubeconfig context instead of current-context. Env: KUBE_CTX.
	ConfigContext string
	// ConfigContextAuthInfo overrides the context's user. Env: KUBE_CTX_AUTH_INFO.
	ConfigContextAuthInfo string
	// ConfigContextCluster overrides the context's cluster. Env: KUBE_CTX_CLUSTER.
	ConfigContextCluster string
	// Host is the API server URL or host[:port] (https is assumed). Env: KUBE_HOST.
	Host string
	// Token is a bearer token. Env: KUBE_TOKEN.
	Token string
	// ClusterCACertificate is PEM-encoded CA data. Env: KUBE_CLUSTER_CA_CERT_DATA.
	ClusterCACertificate string
	// ClientCertificate is PEM-encoded client certificate data. Env: KUBE_CLIENT_CERT_DATA.
	ClientCertificate string
	// ClientKey is the PEM-encoded private key of ClientCertificate. Env: KUBE_CLIENT_KEY_DATA.
	ClientKey string
	// Insecure skips server certificate verification; nil means unset. Env: KUBE_INSECURE.
	Insecure *bool
	// TLSServerName is the server name used to verify the server certificate. Env: KUBE_TLS_SERVER_NAME.
	TLSServerName string
	// ProxyURL is the URL of an HTTP(S) or SOCKS5 proxy. Env: KUBE_PROXY_URL.
	ProxyURL string
	// Exec configures a client-go credential plugin; nil means none.
	Exec *ExecSettings
	// QPS is the client's sustained request rate in requests/second (>= 1); 0 means unset
	// (GANTRY_QPS, else DefaultQPS).
	QPS float32
	// Burst is the client's request burst (>= 1); 0 means unset (GANTRY_BURST, else DefaultBurst).
	Burst int
	// ConnectTimeout bounds the first contact with the API server (see Reach); 0 means unset
	// (KUBE_CONNECT_TIMEOUT, else DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// UserAgent is sent with every request; empty means client-go's default.
	UserAgent string
}

// hasCredentials reports whether s names a credential of its own (token, client certificate
// or key, exec plugin); the credential environment variables are then not read.
func (s Settings) hasCredentials() bool {
	return s.Token != "" || s.ClientCertificate != "" || s.ClientKey != "" || s.Exec != nil
}

// ExecSettings configure a client-go exec credential plugin (client.authentication.k8s.io).
type ExecSettings struct {
	// APIVersion is the ExecCredential API version, e.g. "client.authentication.k8s.io/v1beta1".
	APIVersion string
	// Command is the plugin executable, looked up in PATH.
	Command string
	// Args are its arguments.
	Args []string
	// Env are extra environment variables for the plugin, name → value.
	Env map[string]string
}

// WithEnv returns s with every unset field filled from the environment through lookup
// (os.LookupEnv in production; a map in tests) and QPS, Burst and ConnectTimeout defaulted.
// Explicit settings always win over the environment, and credentials are one unit: when s
// sets any of Token, ClientCertificate, ClientKey or Exec, none of KUBE_TOKEN,
// KUBE_CLIENT_CERT_DATA and KUBE_CLIENT_KEY_DATA is read (so an exported KUBE_TOKEN never
// replaces a configured exec plugin). It fails on an unparsable KUBE_INSECURE, GANTRY_QPS,
// GANTRY_BURST or KUBE_CONNECT_TIMEOUT, and on a proxy URL (set or from KUBE_PROXY_URL) that
// CheckProxyURL refuses.
func (s Settings) WithEnv(lookup func(string) (string, bool)) (Settings, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	s.stringsFromEnv(lookup)
	if err := s.numbersFromEnv(lookup); err != nil {
		return s, err
	}
	if s.ProxyURL != "" {
		if err := CheckProxyURL(s.ProxyURL); err != nil {
			return s, fmt.Errorf("proxy_url (or %s) %w", EnvProxyURL, err)
		}
	}
	return s, nil
}

// CheckProxyURL returns an error saying why s is not a proxy URL client-go can use: a URL
// with scheme http, https or socks5 and a host (e.g. http://proxy.internal:3128); nil when it is.
func CheckProxyURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5":
		return fmt.Errorf("%q has scheme %q; a proxy URL starts with http://, https:// or socks5:// (e.g. http://proxy.internal:3128)", s, u.Scheme)
	case u.Host == "":
		return fmt.Errorf("%q names no host; a proxy URL is e.g. http://proxy.internal:3128", s)
	}
	return nil
}

// stringsFromEnv fills the unset string settings and ConfigPaths from the environment (the
// credential variables only when s has no credential of its own).
func (s *Settings) stringsFromEnv(lookup func(string) (string, bool)) {
	str := func(dst *string, env string) {
		if *dst == "" {
			if v, ok := lookup(env); ok {
				*dst = v
			}
		}
	}
	str(&s.ConfigPath, EnvConfigPath)
	str(&s.ConfigContext, EnvConfigContext)
	str(&s.ConfigContextAuthInfo, EnvConfigContextAuthInfo)
	str(&s.ConfigContextCluster, EnvConfigContextCluster)
	str(&s.Host, EnvHost)
	if !s.hasCredentials() {
		str(&s.Token, EnvToken)
		str(&s.ClientCertificate, EnvClientCertData)
		str(&s.ClientKey, EnvClientKeyData)
	}
	str(&s.ClusterCACertificate, EnvClusterCACertData)
	str(&s.TLSServerName, EnvTLSServerName)
	str(&s.ProxyURL, EnvProxyURL)
	if len(s.ConfigPaths) == 0 {
		if v, ok := lookup(EnvConfigPaths); ok && v != "" {
			for _, p := range filepath.SplitList(v) {
				if p != "" {
					s.ConfigPaths = append(s.ConfigPaths, p)
				}
			}
		}
	}
}

// numbersFromEnv fills the unset Insecure from the environment and QPS, Burst and
// ConnectTimeout from the environment or their defaults, in that order; it stops at the first
// unparsable value (what it filled before stays).
func (s *Settings) numbersFromEnv(lookup func(string) (string, bool)) error {
	if s.Insecure == nil {
		if v, ok := lookup(EnvInsecure); ok && v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s=%q: not a boolean", EnvInsecure, v)
			}
			s.Insecure = &b
		}
	}
	if s.QPS == 0 {
		s.QPS = DefaultQPS
		if v, ok := lookup(EnvQPS); ok && v != "" {
			f, err := strconv.ParseFloat(v, 32)
			if err != nil || f < 1 {
				return fmt.Errorf("%s=%q: want a number >= 1 (requests per second)", EnvQPS, v)
			}
			s.QPS = float32(f)
		}
	}
	if s.Burst == 0 {
		s.Burst = DefaultBurst
		if v, ok := lookup(EnvBurst); ok && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("%s=%q: want an integer >= 1", EnvBurst, v)
			}
			s.Burst = n
		}
	}
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = DefaultConnectTimeout
		if v, ok := lookup(EnvConnectTimeout); ok && v != "" {
			d, err := ParseConnectTimeout(v)
			if err != nil {
				return fmt.Errorf("%s=%w", EnvConnectTimeout, err)
			}
			s.ConnectTimeout = d
		}
	}
	return nil
}

// ErrNoConfig is returned by RESTConfig when nothing says where the cluster is.
var ErrNoConfig = errors.New("no Kubernetes configuration: set config_path (or KUBE_CONFIG_PATH), " +
	"config_paths (KUBE_CONFIG_PATHS), or host (KUBE_HOST) with credentials, or run inside a cluster; " +
	"like the kubernetes provider, the KUBECONFIG environment variable is not read")

// RESTConfig builds a *rest.Config from s (call WithEnv first to honour the environment):
// kubeconfig files from ConfigPath or ConfigPaths (a missing file is an error), context
// selection, then the explicit overrides on top (Exec replaces the kubeconfig user's
// credentials; never interactive). With none of these set it uses in-cluster configuration,
// else ErrNoConfig. QPS and Burst are copied as they are (0 keeps client-go's default).
func RESTConfig(s Settings) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{} // no KUBECONFIG, no ~/.kube/config
	var paths []string
	switch {
	case s.ConfigPath != "":
		paths = []string{s.ConfigPath}
	case len(s.ConfigPaths) > 0:
		paths = s.ConfigPaths
	}
	expanded := make([]string, 0, len(paths))
	for _, p := range paths {
		e, err := expandPath(p)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(e); err != nil {
			return nil, fmt.Errorf("kubeconfig %q: %w", p, err)
		}
		expanded = append(expanded, e)
	}
	switch len(expanded) {
	case 0:
	case 1:
		rules.ExplicitPath = expanded[0]
	default:
		rules.Precedence = expanded
	}

	overrides := &clientcmd.ConfigOverrides{}
	if len(expanded) > 0 {
		overrides.CurrentContext = s.ConfigContext
		overrides.Context.AuthInfo = s.ConfigContextAuthInfo
		overrides.Context.Cluster = s.ConfigContextCluster
	}
	if s.Host != "" {
		// The override must be a complete URL: clientcmd applies overrides after it has
		// defaulted the scheme, so "example:6443" would otherwise not get https://.
		host := s.Host
		if !strings.Contains(host, "://") {
			host = "https://" + host
		}
		overrides.ClusterInfo.Server = host
	}
	if s.ClusterCACertificate != "" {
		overrides.ClusterInfo.CertificateAuthorityData = []byte(s.ClusterCACertificate)
	}
	if s.Insecure != nil {
		overrides.ClusterInfo.InsecureSkipTLSVerify = *s.Insecure
	}
	if s.TLSServerName != "" {
		overrides.ClusterInfo.TLSServerName = s.TLSServerName
	}
	if s.ProxyURL != "" {
		overrides.ClusterDefaults.ProxyURL = s.ProxyURL
		overrides.ClusterInfo.ProxyURL = s.ProxyURL
	}
	if s.ClientCertificate != "" {
		overrides.AuthInfo.ClientCertificateData = []byte(s.ClientCertificate)
	}
	if s.ClientKey != "" {
		overrides.AuthInfo.ClientKeyData = []byte(s.ClientKey)
	}
	if s.Token != "" {
		overrides.AuthInfo.Token = s.Token
	}
	if s.Exec != nil {
		exec := &clientcmdapi.ExecConfig{
			APIVersion:      s.Exec.APIVersion,
			Command:         s.Exec.Command,
			Args:            append([]string(nil), s.Exec.Args...),
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}
		for _, k := range slices.Sorted(maps.Keys(s.Exec.Env)) {
			exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: s.Exec.Env[k]})
		}
		overrides.AuthInfo.Exec = exec
	}

	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, ErrNoConfig
		}
		return nil, fmt.Errorf("building the Kubernetes client configuration: %w", err)
	}
	if cfg.Host == "" {
		return nil, ErrNoConfig
	}
	if s.Exec != nil {
		// client-go skips an exec plugin when the config holds a token, client certificate
		// or basic auth (e.g. from the kubeconfig's user): a configured plugin must be used.
		cfg.BearerToken, cfg.BearerTokenFile = "", ""
		cfg.CertData, cfg.CertFile, cfg.KeyData, cfg.KeyFile = nil, "", nil, ""
		cfg.Username, cfg.Password = "", ""
		cfg.AuthProvider = nil
	}
	cfg.QPS = s.QPS
	cfg.Burst = s.Burst
	if s.UserAgent != "" {
		cfg.UserAgent = s.UserAgent
	}
	return cfg, nil
}

func expandPath(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home := homedir.HomeDir()
		if home == "" {
			return "", fmt.Errorf("kubeconfig %q: cannot expand ~: no home directory", p)
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
	}
	return p, nil
}
