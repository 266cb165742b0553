package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const kubeconfigA = `apiVersion: v1
kind: Config
current-context: alpha
clusters:
- name: alpha
  cluster:
    server: https://alpha.example:6443
- name: beta
  cluster:
    server: https://beta.example:6443
    insecure-skip-tls-verify: true
users:
- name: alice
  user:
    token: alice-token
- name: bob
  user:
    token: bob-token
contexts:
- name: alpha
  context: {cluster: alpha, user: alice}
- name: beta
  context: {cluster: beta, user: bob}
`

const kubeconfigB = `apiVersion: v1
kind: Config
current-context: gamma
clusters:
- name: gamma
  cluster:
    server: https://gamma.example:6443
users:
- name: carol
  user:
    token: carol-token
contexts:
- name: gamma
  context: {cluster: gamma, user: carol}
`

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func noEnv(string) (string, bool) { return "", false }

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func boolPtr(b bool) *bool { return &b }

func TestRESTConfig(t *testing.T) {
	// No in-cluster fallback while these cases run.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", kubeconfigA)
	b := writeFile(t, dir, "b.yaml", kubeconfigB)

	cases := []struct {
		name     string
		settings Settings
		wantHost string
		wantTok  string
		wantErr  string
		check    func(t *testing.T, s Settings)
	}{
		{name: "config_path current-context", settings: Settings{ConfigPath: a}, wantHost: "https://alpha.example:6443", wantTok: "alice-token"},
		{name: "config_context", settings: Settings{ConfigPath: a, ConfigContext: "beta"}, wantHost: "https://beta.example:6443", wantTok: "bob-token"},
		{name: "context auth info override", settings: Settings{ConfigPath: a, ConfigContextAuthInfo: "bob"}, wantHost: "https://alpha.example:6443", wantTok: "bob-token"},
		{name: "context cluster override", settings: Settings{ConfigPath: a, ConfigContextCluster: "beta"}, wantHost: "https://beta.example:6443", wantTok: "alice-token"},
		{name: "config_paths merged, first current-context wins", settings: Settings{ConfigPaths: []string{b, a}}, wantHost: "https://gamma.example:6443", wantTok: "carol-token"},
		{name: "config_paths context from second file", settings: Settings{ConfigPaths: []string{b, a}, ConfigContext: "beta"}, wantHost: "https://beta.example:6443", wantTok: "bob-token"},
		{name: "config_path wins over config_paths", settings: Settings{ConfigPath: a, ConfigPaths: []string{b}}, wantHost: "https://alpha.example:6443", wantTok: "alice-token"},
		{name: "host and token override the file", settings: Settings{ConfigPath: a, Host: "https://other:443", Token: "t0k"}, wantHost: "https://other:443", wantTok: "t0k"},
		{name: "host and token alone", settings: Settings{Host: "api.example:6443", Token: "t0k"}, wantHost: "https://api.example:6443", wantTok: "t0k"},
		{name: "missing file", settings: Settings{ConfigPath: filepath.Join(dir, "nope")}, wantErr: "no such file"},
		{name: "nothing set", settings: Settings{}, wantErr: "no Kubernetes configuration"},
		{name: "unknown context", settings: Settings{ConfigPath: a, ConfigContext: "zeta"}, wantErr: "zeta"},
		{
			name:     "tls and proxy settings",
			settings: Settings{Host: "https://h:6443", ClusterCACertificate: "CA", ClientCertificate: "CERT", ClientKey: "KEY", TLSServerName: "h.internal", ProxyURL: "http://proxy:3128", Insecure: boolPtr(false)},
			wantHost: "https://h:6443",
		},
		{
			name:     "exec plugin",
			settings: Settings{Host: "https://h:6443", Exec: &ExecSettings{APIVersion: "client.authentication.k8s.io/v1beta1", Command: "aws", Args: []string{"eks", "get-token"}, Env: map[string]string{"B": "2", "A": "1"}}},
			wantHost: "https://h:6443",
		},
		{
			name:     "qps and burst",
			settings: Settings{ConfigPath: a, QPS: 7, Burst: 9, UserAgent: "ua/1"},
			wantHost: "https://alpha.example:6443", wantTok: "alice-token",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := RESTConfig(tc.settings)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.wantHost {
				t.Errorf("host = %q, want %q", cfg.Host, tc.wantHost)
			}
			if cfg.BearerToken != tc.wantTok {
				t.Errorf("token = %q, want %q", cfg.BearerToken, tc.wantTok)
			}
			s := tc.settings
			if s.ClusterCACertificate != "" && string(cfg.CAData) != s.ClusterCACertificate {
				t.Errorf("CAData = %q", cfg.CAData)
			}
			if s.ClientCertificate != "" && string(cfg.CertData) != s.ClientCertificate {
				t.Errorf("CertData = %q", cfg.CertData)
			}
			if s.ClientKey != "" && string(cfg.KeyData) != s.ClientKey {
				t.Errorf("KeyData = %q", cfg.KeyData)
			}
			if s.TLSServerName != "" && cfg.ServerName != s.TLSServerName {
				t.Errorf("ServerName = %q", cfg.ServerName)
			}
			if s.ProxyURL != "" {
				if cfg.Proxy == nil {
					t.Errorf("Proxy not set")
				}
			}
			if s.Exec != nil {
				if cfg.ExecProvider == nil {
					t.Fatalf("ExecProvider not set")
				}
				e := cfg.ExecProvider
				if e.Command != "aws" || len(e.Args) != 2 || e.APIVersion != s.Exec.APIVersion || e.InteractiveMode != "Never" {
					t.Errorf("exec = %+v", e)
				}
				if len(e.Env) != 2 || e.Env[0].Name != "A" || e.Env[1].Name != "B" {
					t.Errorf("exec env = %+v, want sorted A, B", e.Env)
				}
			}
			if cfg.QPS != s.QPS || cfg.Burst != s.Burst {
				t.Errorf("qps/burst = %v/%v, want %v/%v", cfg.QPS, cfg.Burst, s.QPS, s.Burst)
			}
			if s.UserAgent != "" && cfg.UserAgent != s.UserAgent {
				t.Errorf("user agent = %q", cfg.UserAgent)
			}
		})
	}
}

func TestRESTConfigInsecureFromFile(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", kubeconfigA)
	cfg, err := RESTConfig(Settings{ConfigPath: a, ConfigContext: "beta"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Insecure {
		t.Errorf("insecure from the kubeconfig was lost")
	}
	cfg, err = RESTConfig(Settings{ConfigPath: a, Insecure: boolPtr(true)})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Insecure {
		t.Errorf("insecure override was lost")
	}
}

func TestRESTConfigTildeExpansion(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".kube"), "config", kubeconfigA)
	cfg, err := RESTConfig(Settings{ConfigPath: "~/.kube/config"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://alpha.example:6443" {
		t.Errorf("host = %q", cfg.Host)
	}
}

// KUBECONFIG is never read, as with the kubernetes provider.
func TestRESTConfigIgnoresKUBECONFIG(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBECONFIG", writeFile(t, dir, "a.yaml", kubeconfigA))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("HOME", dir)
	_, err := RESTConfig(Settings{})
	if !errors.Is(err, ErrNoConfig) {
		t.Fatalf("err = %v, want ErrNoConfig", err)
	}
}

func TestWithEnv(t *testing.T) {
	env := envMap(map[string]string{
		EnvConfigPath:            "/env/config",
		EnvConfigPaths:           "/p1" + string(os.PathListSeparator) + "/p2",
		EnvConfigContext:         "ctx",
		EnvConfigContextAuthInfo: "user",
		EnvConfigContextCluster:  "cluster",
		EnvHost:                  "https://env-host",
		EnvToken:                 "env-token",
		EnvClusterCACertData:     "ca",
		EnvClientCertData:        "cert",
		EnvClientKeyData:         "key",
		EnvInsecure:              "true",
		EnvTLSServerName:         "sni",
		EnvProxyURL:              "http://proxy",
		EnvQPS:                   "12.5",
		EnvBurst:                 "30",
	})
	got, err := Settings{}.WithEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigPath != "/env/config" || len(got.ConfigPaths) != 2 || got.ConfigPaths[1] != "/p2" ||
		got.ConfigContext != "ctx" || got.ConfigContextAuthInfo != "user" || got.ConfigContextCluster != "cluster" ||
		got.Host != "https://env-host" || got.Token != "env-token" || got.ClusterCACertificate != "ca" ||
		got.ClientCertificate != "cert" || got.ClientKey != "key" || got.Insecure == nil || !*got.Insecure ||
		got.TLSServerName != "sni" || got.ProxyURL != "http://proxy" || got.QPS != 12.5 || got.Burst != 30 {
		t.Errorf("from env: %+v", got)
	}

	// Explicit settings win over the environment.
	explicit := Settings{ConfigPath: "/mine", Host: "https://mine", Insecure: boolPtr(false), QPS: 3, Burst: 4, ConfigPaths: []string{"/x"}}
	got, err = explicit.WithEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigPath != "/mine" || got.Host != "https://mine" || *got.Insecure || got.QPS != 3 || got.Burst != 4 || len(got.ConfigPaths) != 1 {
		t.Errorf("explicit lost: %+v", got)
	}

	// Defaults.
	got, err = Settings{}.WithEnv(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got.QPS != DefaultQPS || got.Burst != DefaultBurst || got.Insecure != nil {
		t.Errorf("defaults: %+v", got)
	}

	for k, v := range map[string]string{EnvInsecure: "maybe", EnvQPS: "0.5", EnvBurst: "x"} {
		if _, err := (Settings{}).WithEnv(envMap(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: err = %v", k, v, err)
		}
	}
}

func TestLazyBuildsOnce(t *testing.T) {
	n := 0
	l := NewLazy(func() (*Clients, error) { n++; return nil, errors.New("boom") })
	for range 3 {
		if _, err := l.Get(); err == nil {
			t.Fatal("want error")
		}
	}
	if n != 1 {
		t.Fatalf("build called %d times", n)
	}
}

func TestLazyFromSettings(t *testing.T) {
	srv := versionServer(t)
	t.Setenv(EnvQPS, "")
	t.Setenv(EnvBurst, "")
	t.Setenv(EnvConnectTimeout, "")
	c, err := LazyFromSettings(Settings{Host: srv.URL, Insecure: boolPtr(true), Token: "t"}).Get()
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.QPS != DefaultQPS || c.Config.Burst != DefaultBurst || c.Dynamic == nil || c.Core == nil {
		t.Errorf("clients: %+v", c.Config)
	}
}

// An API server that never answers fails the first use with *UnreachableError, and every
// later use with the same error at once.
func TestLazyFromSettingsUnreachable(t *testing.T) {
	t.Setenv(EnvConnectTimeout, "")
	l := LazyFromSettings(Settings{Host: closedPort(t), Token: "t", ConnectTimeout: 2 * time.Second})
	_, err := l.Get()
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Timeout != 2*time.Second || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v, want *UnreachableError quoting connection refused", err)
	}
	if _, err2 := l.Get(); err2 != err {
		t.Errorf("second Get: %v, want the first error", err2)
	}
}

// A proxy URL client-go can use has scheme http, https or socks5 and a host; one from
// KUBE_PROXY_URL is refused by WithEnv naming both the attribute and the variable.
func TestCheckProxyURL(t *testing.T) {
	for s, want := range map[string]string{
		"http://proxy.internal:3128": "", "https://p:443": "", "socks5://127.0.0.1:1080": "",
		"proxy.internal:3128": `has scheme "proxy.internal"`, "ftp://p:21": `has scheme "ftp"`, "http://": "names no host",
		"http://bad host": "is not a URL", "not a url": `has scheme ""`,
	} {
		err := CheckProxyURL(s)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", s, err, want)
		}
	}
	_, err := Settings{}.WithEnv(func(k string) (string, bool) {
		if k == EnvProxyURL {
			return "proxy:3128", true
		}
		return "", false
	})
	if err == nil || !strings.Contains(err.Error(), "proxy_url (or KUBE_PROXY_URL)") {
		t.Errorf("WithEnv with a bad KUBE_PROXY_URL: %v", err)
	}
}
