package kube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPEM returns a self-signed certificate and its EC private key, PEM-encoded.
func testPEM(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}))
}

func TestCheckHost(t *testing.T) {
	for _, ok := range []string{"https://203.0.113.10:6443", "api.example:6443", "http://localhost:8080", "https://[::1]:6443", "https://h/prefix"} {
		if err := CheckHost(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"ftp://h:6443":         "scheme",
		"https://h:99999":      "port",
		"https://h:0":          "port",
		"https://h:":           "empty port",
		"https://:6443":        "no host name",
		"https://h:6443/?a=b":  "query",
		"https://u:p@h:6443":   "user info",
		"https://h:64 43":      "not a URL",
		"https://exa mple:443": "not a URL",
	} {
		if err := CheckHost(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", bad, err, want)
		}
	}
}

func TestCheckPEM(t *testing.T) {
	cert, key := testPEM(t)
	cert2, key2 := testPEM(t)
	if err := CheckCACertificates(cert + cert2); err != nil {
		t.Errorf("two CAs: %v", err)
	}
	if err := CheckClientKey(key); err != nil {
		t.Errorf("key: %v", err)
	}
	if err := CheckKeyPair(cert, key); err != nil {
		t.Errorf("pair: %v", err)
	}
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"CA not PEM":       {CheckCACertificates("not a certificate"), "no PEM-encoded certificate"},
		"CA is a key":      {CheckCACertificates(key), `"PRIVATE KEY", want CERTIFICATE`},
		"CA garbled":       {CheckCACertificates("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "does not parse"},
		"key not PEM":      {CheckClientKey("secret"), "no PEM-encoded private key"},
		"key is a cert":    {CheckClientKey(cert), "want a private key"},
		"key garbled":      {CheckClientKey("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "does not parse"},
		"pair mismatch":    {CheckKeyPair(cert, key2), "not a key pair"},
		"client cert junk": {CheckClientCertificate("x"), "no PEM-encoded certificate"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, tc.err, tc.want)
		}
	}
}

func TestLoadKubeconfigsAndContext(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", kubeconfigA)
	b := writeFile(t, dir, "b.yaml", kubeconfigB)
	junk := writeFile(t, dir, "junk.yaml", "clusters: [this is: not, a kubeconfig")
	cfg, _, err := LoadKubeconfigs([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if c, u, cl := CheckContext(cfg, "gamma", "bob", "alpha"); c != nil || u != nil || cl != nil {
		t.Errorf("names present in the merged files: %v %v %v", c, u, cl)
	}
	c, u, cl := CheckContext(cfg, "prod", "mallory", "omega")
	if c == nil || !strings.Contains(c.Error(), `no context "prod" (it has: alpha, beta, gamma)`) ||
		u == nil || !strings.Contains(u.Error(), `no user "mallory"`) || cl == nil || !strings.Contains(cl.Error(), `no cluster "omega"`) {
		t.Errorf("missing names: %v | %v | %v", c, u, cl)
	}
	if _, i, err := LoadKubeconfigs([]string{a, filepath.Join(dir, "nope")}); err == nil || i != 1 || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("missing file: %d %v", i, err)
	}
	if _, i, err := LoadKubeconfigs([]string{junk}); err == nil || i != 0 || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("junk file: %d %v", i, err)
	}
	if _, _, err := LoadKubeconfigs([]string{dir}); err == nil {
		t.Errorf("a directory: want an error")
	}
}

// Credentials are one unit: a configured credential (exec, token, client certificate) keeps
// every credential environment variable out.
func TestWithEnvCredentialPrecedence(t *testing.T) {
	env := envMap(map[string]string{EnvToken: "env-token", EnvClientCertData: "env-cert", EnvClientKeyData: "env-key"})
	exec := &ExecSettings{APIVersion: ExecAPIVersions[0], Command: "plugin"}
	for name, s := range map[string]Settings{
		"exec":               {Exec: exec},
		"token":              {Token: "mine"},
		"client certificate": {ClientCertificate: "c", ClientKey: "k"},
	} {
		got, err := s.WithEnv(env)
		if err != nil {
			t.Fatal(err)
		}
		if got.Token != s.Token || got.ClientCertificate != s.ClientCertificate || got.ClientKey != s.ClientKey || got.Exec != s.Exec {
			t.Errorf("%s: environment credentials leaked in: %+v", name, got)
		}
	}
}

// A configured exec plugin is used even when the kubeconfig's user has a token or client
// certificate (client-go would otherwise skip the plugin).
func TestRESTConfigExecReplacesKubeconfigCredentials(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", kubeconfigA)
	cfg, err := RESTConfig(Settings{ConfigPath: a, Exec: &ExecSettings{APIVersion: ExecAPIVersions[0], Command: "plugin"}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "" || cfg.ExecProvider == nil || cfg.ExecProvider.Command != "plugin" {
		t.Errorf("token %q, exec %+v: want the plugin only", cfg.BearerToken, cfg.ExecProvider)
	}
	cfg, err = RESTConfig(Settings{ConfigPath: a})
	if err != nil || cfg.BearerToken != "alice-token" {
		t.Errorf("without exec the kubeconfig token stays: %v %q", err, cfg.BearerToken)
	}
}
