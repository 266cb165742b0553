// Command mirror serves a provider release directory (what `make release` writes) as a Terraform
// provider network mirror over HTTPS on loopback, as a private registry serves HCP Terraform
// agents and OpenTofu; `make test` and `make demo` install Gantry from it. It serves index.json,
// <version>.json and the archives for any host/namespace/type prefix from the *_SHA256SUMS in
// -dir, with a certificate from a throwaway CA written to -ca-out (point SSL_CERT_FILE at it).
// -pack instead packs a plain `go build` into a one-platform, unsigned release and exits.
//
//	go run ./hack/mirror -dir .cache/release/0.1.0 -ca-out ca.pem -url-out url
package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
)

// archive is one platform's zip of one version.
type archive struct {
	file, sha string
	// h1 is Terraform's "h1:" package hash of the zip's contents (dirhash.Hash1 over the
	// archive's files, what a lock file records for a package installed from a mirror).
	h1 string
}

// release is what -dir holds: version → "<os>_<arch>" → archive.
type release map[string]map[string]archive

// zipName matches terraform-provider-<type>_<version>_<os>_<arch>.zip.
var zipName = regexp.MustCompile(`^terraform-provider-[a-z0-9-]+_([0-9][^_]*)_([a-z0-9]+)_([a-z0-9]+)\.zip$`)

// readRelease reads every *_SHA256SUMS file of dir ("<sha256>  <file>" lines).
func readRelease(dir string) (release, error) {
	sums, err := filepath.Glob(filepath.Join(dir, "*_SHA256SUMS"))
	if err != nil || len(sums) == 0 {
		return nil, fmt.Errorf("no *_SHA256SUMS in %s", dir)
	}
	r := release{}
	for _, s := range sums {
		f, err := os.Open(s)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) != 2 {
				continue
			}
			m := zipName.FindStringSubmatch(fields[1])
			if m == nil {
				continue
			}
			if r[m[1]] == nil {
				r[m[1]] = map[string]archive{}
			}
			h1, err := dirhash.HashZip(filepath.Join(dir, fields[1]), dirhash.Hash1)
			if err != nil {
				f.Close()
				return nil, err
			}
			r[m[1]][m[2]+"_"+m[3]] = archive{file: fields[1], sha: fields[0], h1: h1}
		}
		f.Close()
	}
	return r, nil
}

func (r release) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	base := path.Base(req.URL.Path)
	log.Printf("%s %s", req.Method, req.URL.Path)
	switch {
	case base == "index.json":
		versions := map[string]struct{}{}
		for v := range r {
			versions[v] = struct{}{}
		}
		writeJSON(w, map[string]interface{}{"versions": versions})
	case strings.HasSuffix(base, ".json"):
		platforms, ok := r[strings.TrimSuffix(base, ".json")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		archives := map[string]interface{}{}
		for p, a := range platforms {
			archives[p] = map[string]interface{}{"url": a.file, "hashes": []string{a.h1, "zh:" + a.sha}}
		}
		writeJSON(w, map[string]interface{}{"archives": archives})
	case strings.HasSuffix(base, ".zip"):
		for _, platforms := range r {
			for _, a := range platforms {
				if a.file == base {
					http.ServeFile(w, req, filepath.Join(dir, base))
					return
				}
			}
		}
		http.NotFound(w, req)
	default:
		http.NotFound(w, req)
	}
}

func writeJSON(w http.ResponseWriter, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// selfSigned returns a TLS certificate for 127.0.0.1 and localhost signed by a new CA, and the
// CA's PEM.
func selfSigned() (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gantry test mirror CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

var dir string

func main() {
	var caOut, urlOut, addr string
	flag.StringVar(&dir, "dir", "", "release directory (zips and *_SHA256SUMS)")
	flag.StringVar(&caOut, "ca-out", "", "write the CA certificate (PEM) here")
	flag.StringVar(&urlOut, "url-out", "", "write the mirror's base URL here once it listens")
	flag.StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	printH1 := flag.String("print-h1", "", "print the h1: package hash of this zip and exit")
	packBin := flag.String("pack", "", "pack this provider binary into -dir as a one-platform release (-version, this machine's OS and arch) and exit")
	version := flag.String("version", "0.1.0", "the version -pack gives the release")
	flag.Parse()
	if *packBin != "" {
		wrote, err := pack(*packBin, *version, runtime.GOOS, runtime.GOARCH, dir)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(map[bool]string{true: "packed", false: "unchanged"}[wrote])
		return
	}
	if *printH1 != "" {
		h1, err := dirhash.HashZip(*printH1, dirhash.Hash1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(h1)
		return
	}
	r, err := readRelease(dir)
	if err != nil {
		log.Fatal(err)
	}
	cert, caPEM, err := selfSigned()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(caOut, caPEM, 0o600); err != nil {
		log.Fatal(err)
	}
	ln, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		log.Fatal(err)
	}
	url := fmt.Sprintf("https://%s/", ln.Addr())
	if err := os.WriteFile(urlOut, []byte(url+"\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	log.Printf("serving %s as a provider network mirror at %s", dir, url)
	log.Fatal(http.Serve(ln, r))
}
