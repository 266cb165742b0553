package kube

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// versionServer is a TLS server answering GET /version like an API server; it counts requests.
func versionServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.0"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// closedPort returns an https URL on 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "https://" + addr
}

func clientsFor(t *testing.T, cfg *rest.Config) *Clients {
	t.Helper()
	c, err := NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReach(t *testing.T) {
	ok := versionServer(t)
	var denied atomic.Int32
	unauthorized := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		denied.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
	}))
	t.Cleanup(unauthorized.Close)
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	httpsPort := "http" + strings.TrimPrefix(ok.URL, "https")

	insecure := rest.TLSClientConfig{Insecure: true}
	cases := []struct {
		name      string
		cfg       *rest.Config
		timeout   time.Duration
		want      string // "" = reached
		permanent bool
	}{
		{name: "answers", cfg: &rest.Config{Host: ok.URL, TLSClientConfig: insecure}, timeout: 5 * time.Second},
		{name: "401 is reached", cfg: &rest.Config{Host: unauthorized.URL, TLSClientConfig: insecure}, timeout: 5 * time.Second},
		{name: "connection refused", cfg: &rest.Config{Host: closedPort(t)}, timeout: time.Second, want: "connection refused"},
		{name: "no such host", cfg: &rest.Config{Host: "https://gantry-test.invalid:6443"}, timeout: time.Second, want: "lookup gantry-test.invalid"},
		{name: "unknown authority", cfg: &rest.Config{Host: ok.URL}, timeout: time.Minute, want: "certificate signed by unknown authority", permanent: true},
		{name: "http to an https port", cfg: &rest.Config{Host: httpsPort}, timeout: time.Minute, want: "answers HTTPS on this port", permanent: true},
		{name: "https to an http port", cfg: &rest.Config{Host: "https" + strings.TrimPrefix(plain.URL, "http")}, timeout: time.Minute, want: "server gave HTTP response to HTTPS client", permanent: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Reach(context.Background(), clientsFor(t, tc.cfg), tc.timeout)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Reach: %v", err)
				}
				return
			}
			var ue *UnreachableError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want *UnreachableError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.cfg.Host) {
				t.Errorf("err = %q, want it to quote %q and the host", err, tc.want)
			}
			if ue.Permanent != tc.permanent {
				t.Errorf("permanent = %v, want %v", ue.Permanent, tc.permanent)
			}
			if tc.permanent && ue.Attempts != 1 {
				t.Errorf("attempts = %d: a permanent error must not be retried", ue.Attempts)
			}
			if !tc.permanent && (ue.Attempts < 2 || !strings.Contains(err.Error(), tc.timeout.String()) || !strings.Contains(err.Error(), EnvConnectTimeout)) {
				t.Errorf("attempts = %d, err %q: want retries and the bound named", ue.Attempts, err)
			}
		})
	}
	if denied.Load() != 1 {
		t.Errorf("401 server saw %d requests, want 1 (an answer is not retried)", denied.Load())
	}
}

func TestParseConnectTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"20s": 20 * time.Second, "1m30s": 90 * time.Second, "500ms": 500 * time.Millisecond} {
		if d, err := ParseConnectTimeout(v); err != nil || d != want {
			t.Errorf("%s: %v, %v", v, d, err)
		}
	}
	for _, v := range []string{"", "20", "0s", "-1s", "soon"} {
		if _, err := ParseConnectTimeout(v); err == nil {
			t.Errorf("%q: want an error", v)
		}
	}
	got, err := Settings{}.WithEnv(envMap(map[string]string{EnvConnectTimeout: "45s"}))
	if err != nil || got.ConnectTimeout != 45*time.Second {
		t.Errorf("from env: %v, %v", got.ConnectTimeout, err)
	}
	got, _ = Settings{ConnectTimeout: 3 * time.Second}.WithEnv(envMap(map[string]string{EnvConnectTimeout: "45s"}))
	if got.ConnectTimeout != 3*time.Second {
		t.Errorf("explicit lost: %v", got.ConnectTimeout)
	}
	got, _ = Settings{}.WithEnv(noEnv)
	if got.ConnectTimeout != DefaultConnectTimeout {
		t.Errorf("default: %v", got.ConnectTimeout)
	}
	if _, err := (Settings{}).WithEnv(envMap(map[string]string{EnvConnectTimeout: "0"})); err == nil || !strings.Contains(err.Error(), EnvConnectTimeout) {
		t.Errorf("bad env: %v", err)
	}
}
