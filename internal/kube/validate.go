package kube

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// These checks need no cluster: the provider runs them at plan time on the values the
// configuration sets (ValidateConfig), so a typo fails the plan naming the attribute instead
// of the first apply or refresh. Each returns nil or an error that says what is wrong with the
// value, without repeating the attribute's name.

// ExecAPIVersions are the client.authentication.k8s.io versions client-go's exec plugin
// support accepts (v1alpha1 was removed in Kubernetes 1.24).
var ExecAPIVersions = []string{"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}

// CheckHost checks an API server address as Settings.Host takes it: a URL with scheme https or
// http, or host[:port] (https is assumed), with a host name and, if given, a port 1-65535.
func CheckHost(host string) error {
	u := host
	if !strings.Contains(u, "://") {
		u = "https://" + u
	}
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("%q is not a URL or host:port: %v", host, unwrapURLError(err))
	}
	if p.Scheme != "https" && p.Scheme != "http" {
		return fmt.Errorf("%q: scheme %q is not supported; use https:// (or http://)", host, p.Scheme)
	}
	if p.Hostname() == "" {
		return fmt.Errorf("%q has no host name", host)
	}
	if port := p.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not a number from 1 to 65535", host, port)
		}
	} else if strings.HasSuffix(p.Host, ":") {
		return fmt.Errorf("%q: empty port", host)
	}
	if p.User != nil || p.RawQuery != "" || p.Fragment != "" {
		return fmt.Errorf("%q: an API server URL takes no user info, query or fragment", host)
	}
	return nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// CheckCACertificates checks PEM data holding one or more CERTIFICATE blocks that parse as
// X.509 certificates (cluster_ca_certificate).
func CheckCACertificates(data string) error {
	n, err := certificates(data)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no PEM-encoded certificate found (want -----BEGIN CERTIFICATE----- blocks)")
	}
	return nil
}

// CheckClientCertificate checks PEM data whose first CERTIFICATE block parses as an X.509
// certificate (client_certificate).
func CheckClientCertificate(data string) error {
	return CheckCACertificates(data)
}

func certificates(data string) (int, error) {
	rest := []byte(data)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return n, nil
		}
		if b.Type != "CERTIFICATE" {
			return n, fmt.Errorf("PEM block %d is a %q, want CERTIFICATE", n+1, b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return n, fmt.Errorf("certificate %d does not parse: %v", n+1, err)
		}
		n++
	}
}

// CheckClientKey checks PEM data holding a private key (PKCS#1, PKCS#8 or EC) (client_key).
func CheckClientKey(data string) error {
	b, _ := pem.Decode([]byte(data))
	if b == nil {
		return fmt.Errorf("no PEM-encoded private key found (want a -----BEGIN ... PRIVATE KEY----- block)")
	}
	if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
		return fmt.Errorf("the PEM block is a %q, want a private key", b.Type)
	}
	if _, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		return nil
	}
	if _, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return nil
	}
	if _, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return nil
	}
	return fmt.Errorf("the %s block does not parse as a PKCS#1, PKCS#8 or EC private key", b.Type)
}

// CheckKeyPair checks that key is the private key of cert (both PEM).
func CheckKeyPair(cert, key string) error {
	if _, err := tls.X509KeyPair([]byte(cert), []byte(key)); err != nil {
		return fmt.Errorf("client_certificate and client_key are not a key pair: %v", err)
	}
	return nil
}

// LoadKubeconfigs reads and parses each kubeconfig file ("~" expanded) and merges them the
// way RESTConfig does (the first file that sets a value wins). The error names the file and
// the index of the path that failed (index into paths).
func LoadKubeconfigs(paths []string) (*clientcmdapi.Config, int, error) {
	expanded := make([]string, 0, len(paths))
	for i, p := range paths {
		e, err := expandPath(p)
		if err != nil {
			return nil, i, err
		}
		if _, err := os.ReadFile(e); err != nil {
			return nil, i, fmt.Errorf("kubeconfig %q cannot be read: %v", p, err)
		}
		if _, err := clientcmd.LoadFromFile(e); err != nil {
			return nil, i, fmt.Errorf("kubeconfig %q does not parse: %v", p, err)
		}
		expanded = append(expanded, e)
	}
	cfg, err := (&clientcmd.ClientConfigLoadingRules{Precedence: expanded}).Load()
	if err != nil {
		return nil, 0, fmt.Errorf("merging kubeconfig files: %v", err)
	}
	return cfg, 0, nil
}

// CheckContext checks that the merged kubeconfig cfg has the context, user (auth info) and
// cluster names that are not empty. The errors list the names cfg has.
func CheckContext(cfg *clientcmdapi.Config, context, authInfo, cluster string) (contextErr, authInfoErr, clusterErr error) {
	missing := func(what, name string, have []string) error {
		list := strings.Join(have, ", ")
		if list == "" {
			list = "none"
		}
		return fmt.Errorf("the kubeconfig has no %s %q (it has: %s)", what, name, list)
	}
	if _, ok := cfg.Contexts[context]; context != "" && !ok {
		contextErr = missing("context", context, slices.Sorted(maps.Keys(cfg.Contexts)))
	}
	if _, ok := cfg.AuthInfos[authInfo]; authInfo != "" && !ok {
		authInfoErr = missing("user", authInfo, slices.Sorted(maps.Keys(cfg.AuthInfos)))
	}
	if _, ok := cfg.Clusters[cluster]; cluster != "" && !ok {
		clusterErr = missing("cluster", cluster, slices.Sorted(maps.Keys(cfg.Clusters)))
	}
	return contextErr, authInfoErr, clusterErr
}
