package executor

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mitchellh/mapstructure"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Hourglass's operator config as its executor decodes it: a verbatim copy of ponos's types
// (Layr-Labs/hourglass-monorepo@11f1554, ponos/pkg/config/config.go: OperatorConfig,
// SigningKey, RemoteSignerConfig, ECDSAKeyConfig, SigningKeys), with their json/yaml tags
// and no mapstructure tags, as upstream, and the checks of their Validate methods that concern
// keys (hgRemoteSignerValid).
type hgOperatorConfig struct {
	Address            string        `json:"address" yaml:"address"`
	OperatorPrivateKey *hgECDSAKey   `json:"operatorPrivateKey" yaml:"operatorPrivateKey"`
	SigningKeys        hgSigningKeys `json:"signingKeys" yaml:"signingKeys"`
}

type hgSigningKey struct {
	Keystore     string `json:"keystore"`
	KeystoreFile string `json:"keystoreFile"`
	Password     string `json:"password"`
}

type hgRemoteSignerConfig struct {
	Url         string `json:"url" yaml:"url"`
	CACert      string `json:"caCert" yaml:"caCert"`
	Cert        string `json:"cert" yaml:"cert"`
	Key         string `json:"key" yaml:"key"`
	FromAddress string `json:"fromAddress" yaml:"fromAddress"`
	PublicKey   string `json:"publicKey" yaml:"publicKey"`
}

type hgECDSAKey struct {
	UseRemoteSigner    bool                  `json:"remoteSigner" yaml:"remoteSigner"`
	RemoteSignerConfig *hgRemoteSignerConfig `json:"remoteSignerConfig" yaml:"remoteSignerConfig"`
	PrivateKey         string                `json:"privateKey" yaml:"privateKey"`
}

type hgSigningKeys struct {
	BLS   *hgSigningKey `json:"bls"`
	ECDSA *hgECDSAKey   `json:"ecdsa"`
}

// hgRemoteSignerValid is ponos's ECDSAKeyConfig.Validate and RemoteSignerConfig.Validate (a
// remote signer needs remoteSignerConfig with fromAddress and publicKey), plus what the
// executor's signers then need (signerUtils.ParseSignersFromOperatorConfig,
// transactionSigner.NewTransactionSigner): the flag set, so the web3signer client is used.
func hgRemoteSignerValid(k *hgECDSAKey) error {
	switch {
	case k == nil:
		return errors.New("no ECDSA key config")
	case !k.UseRemoteSigner:
		return errors.New("UseRemoteSigner is false: the executor would use privateKey")
	case k.RemoteSignerConfig == nil:
		return errors.New("remoteSignerConfig is required when UseRemoteSigner is true")
	case k.RemoteSignerConfig.FromAddress == "":
		return errors.New("fromAddress is required")
	case k.RemoteSignerConfig.PublicKey == "":
		return errors.New("publicKey is required")
	}
	return nil
}

// viperDecode decodes a config document the way ponos's executor loads its file
// (ponos/cmd/executor/main.go: viper.ReadInConfig, AutomaticEnv with prefix EXECUTOR_ and
// "." → "_", viper.Unmarshal): keys lower-cased, a key present in the file overridden by a
// non-empty EXECUTOR__<PATH> variable, then mapstructure's decode (weakly typed, field names
// matched case-insensitively, no tags read) into the operator section.
func viperDecode(t *testing.T, doc map[string]any, env map[string]string) hgOperatorConfig {
	t.Helper()
	var lower func(prefix string, v any) any
	lower = func(prefix string, v any) any {
		m, ok := v.(map[string]any)
		if !ok {
			if s, ok := env["EXECUTOR__"+strings.ToUpper(strings.ReplaceAll(prefix, ".", "_"))]; ok && s != "" {
				return s
			}
			return v
		}
		out := map[string]any{}
		for k, e := range m {
			p := strings.ToLower(k)
			if prefix != "" {
				p = prefix + "." + p
			}
			out[strings.ToLower(k)] = lower(p, e)
		}
		return out
	}
	settings := lower("", doc).(map[string]any)
	var op hgOperatorConfig
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{WeaklyTypedInput: true, Result: &op})
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(settings["operator"]); err != nil {
		t.Fatalf("viper-style decode: %v", err)
	}
	return op
}

const (
	signerPublicKey = "0x" + "8318535b54105d4a7aae60c08fc45f9687181b4fdfc625bd1a753fa7397fed753547f11ca8696646f2f3acb08e31016afac23e630c5d11f59f61fef57b0d2aa5"
	signerAddress   = "0x6ca766d180398847cEb1a58f03e029D65d88a878"
)

// TestHourglassRemoteSignerGolden: operatorKeys.remoteSigner renders Hourglass's
// remoteSignerConfig, and the config, with the pod's environment resolved against the TLS
// Secrets, decodes through Hourglass's own loader (viper + mapstructure, viperDecode) and its
// YAML parser (json tags) to a web3signer for operator.operatorPrivateKey (transactions) and,
// without a BLS keystore, signingKeys.ecdsa: the flag set, the URL, the public key, the
// address (spec.operatorAddress by default), the CA and client certificate from the Secrets;
// the ConfigMap holds no TLS material. A config with the yaml tag's key alone (remoteSigner)
// would leave the executor's flag unset, which is why both keys are written.
func TestHourglassRemoteSignerGolden(t *testing.T) {
	secrets := map[string]map[string]string{
		"signer-ca":     {RemoteSignerCAKey: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"},
		"signer-client": {RemoteSignerCertKey: "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n", RemoteSignerKeyKey: "-----BEGIN EC PRIVATE KEY-----\nK\n-----END EC PRIVATE KEY-----\n"},
		"hg-keys":       {"bls-keystore": `{"crypto":{}}`, "bls-password": "pw"},
	}
	want := hgRemoteSignerConfig{Url: "https://web3signer.signers.svc:9000", CACert: secrets["signer-ca"][RemoteSignerCAKey],
		Cert: secrets["signer-client"][RemoteSignerCertKey], Key: secrets["signer-client"][RemoteSignerKeyKey], FromAddress: signerAddress, PublicKey: signerPublicKey}
	for _, tc := range []struct {
		name    string
		keys    v1alpha1.OperatorKeys
		signing bool // signingKeys.ecdsa is the remote signer too (no BLS keystore)
		want    hgRemoteSignerConfig
	}{
		{name: "remote ECDSA only, mutual TLS", signing: true, want: want,
			keys: v1alpha1.OperatorKeys{RemoteSigner: &v1alpha1.RemoteSigner{URL: want.Url, PublicKey: signerPublicKey, CASecretName: "signer-ca", ClientCertSecretName: "signer-client"}}},
		{name: "BLS keystore from the Secret beside it, CA only", want: hgRemoteSignerConfig{Url: want.Url, CACert: want.CACert, FromAddress: signerAddress, PublicKey: signerPublicKey},
			keys: v1alpha1.OperatorKeys{SecretName: "hg-keys", BLSKeystoreKey: "bls-keystore", BLSKeystorePasswordKey: "bls-password",
				RemoteSigner: &v1alpha1.RemoteSigner{URL: want.Url, PublicKey: signerPublicKey, CASecretName: "signer-ca"}}},
		{name: "plain http, its own from address", signing: true,
			want: hgRemoteSignerConfig{Url: "http://web3signer:9000", FromAddress: "0x00000000000000000000000000000000000000aa", PublicKey: signerPublicKey},
			keys: v1alpha1.OperatorKeys{RemoteSigner: &v1alpha1.RemoteSigner{URL: "http://web3signer:9000", PublicKey: signerPublicKey, FromAddress: "0x00000000000000000000000000000000000000aa"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenExecutor()
			e.Spec.OperatorKeys = tc.keys
			data, hash, err := RenderConfig(e, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets {
				for _, v := range s {
					if strings.Contains(data, strings.TrimSpace(v)) {
						t.Errorf("the config holds Secret material %q:\n%s", v, data)
					}
				}
			}
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
				t.Fatal(err)
			}
			dep, err := DesiredDeployment(e, "executor-hg-0123456789", hash)
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			for _, v := range dep.Spec.Template.Spec.Containers[0].Env {
				r := v.ValueFrom.SecretKeyRef
				if v.Value != "" || r == nil {
					t.Fatalf("env %s is not a secretKeyRef", v.Name)
				}
				val, ok := secrets[r.Name][r.Key]
				if !ok {
					t.Fatalf("env %s reads %s[%s], which the test's Secrets lack", v.Name, r.Name, r.Key)
				}
				env[v.Name] = val
			}

			op := viperDecode(t, doc, env)
			if err := hgRemoteSignerValid(op.OperatorPrivateKey); err != nil {
				t.Fatalf("operatorPrivateKey as the executor loads it: %v\n%s", err, data)
			}
			if got := *op.OperatorPrivateKey.RemoteSignerConfig; got != tc.want {
				t.Errorf("operatorPrivateKey.remoteSignerConfig = %+v\nwant %+v", got, tc.want)
			}
			if op.OperatorPrivateKey.PrivateKey != "" {
				t.Errorf("privateKey %q beside the remote signer", op.OperatorPrivateKey.PrivateKey)
			}
			switch {
			case tc.signing:
				if err := hgRemoteSignerValid(op.SigningKeys.ECDSA); err != nil {
					t.Fatalf("signingKeys.ecdsa: %v", err)
				}
				if got := *op.SigningKeys.ECDSA.RemoteSignerConfig; got != tc.want {
					t.Errorf("signingKeys.ecdsa.remoteSignerConfig = %+v\nwant %+v", got, tc.want)
				}
			case op.SigningKeys.ECDSA != nil || op.SigningKeys.BLS == nil || op.SigningKeys.BLS.Keystore != secrets["hg-keys"]["bls-keystore"]:
				t.Errorf("signingKeys %+v, want the BLS keystore only", op.SigningKeys)
			}

			// Hourglass's YAML parser (json tags: NewExecutorConfigFromYamlBytes) reads it the same.
			var viaYAML struct {
				Operator hgOperatorConfig `json:"operator"`
			}
			if err := yaml.Unmarshal([]byte(data), &viaYAML); err != nil {
				t.Fatal(err)
			}
			if k := viaYAML.Operator.OperatorPrivateKey; k == nil || !k.UseRemoteSigner || k.RemoteSignerConfig == nil || k.RemoteSignerConfig.PublicKey != signerPublicKey {
				t.Errorf("YAML parser: operatorPrivateKey %+v", k)
			}
		})
	}

	// Why both keys: the yaml tag's key alone does not reach the field through viper.
	var doc map[string]any
	if err := yaml.Unmarshal([]byte("operator:\n  operatorPrivateKey:\n    remoteSigner: true\n    remoteSignerConfig: {url: http://x, fromAddress: "+signerAddress+", publicKey: "+signerPublicKey+"}\n"), &doc); err != nil {
		t.Fatal(err)
	}
	if op := viperDecode(t, doc, nil); op.OperatorPrivateKey.UseRemoteSigner {
		t.Errorf("remoteSigner alone set the flag through viper: the double key is not needed any more")
	}
}

// Without TLS Secrets the remote signer adds no variables; with them, each names its Secret and
// key, for both ECDSA configs without a BLS keystore and for operatorPrivateKey only with one;
// Refs names the TLS Secrets and their keys, so a missing one is reported.
func TestHourglassRemoteSignerEnvAndRefs(t *testing.T) {
	e := goldenExecutor()
	e.Spec.OperatorKeys = v1alpha1.OperatorKeys{RemoteSigner: &v1alpha1.RemoteSigner{URL: "http://w:9000", PublicKey: signerPublicKey}}
	if env := HourglassKeyEnv(e.Spec.OperatorKeys); len(env) != 0 {
		t.Errorf("env %+v, want none", env)
	}
	if refs := Refs(e); refs != nil {
		t.Errorf("refs %+v, want none", refs)
	}
	e.Spec.OperatorKeys.RemoteSigner = &v1alpha1.RemoteSigner{URL: "https://w:9000", PublicKey: signerPublicKey, CASecretName: "ca", ClientCertSecretName: "client"}
	var got []string
	for _, v := range HourglassKeyEnv(e.Spec.OperatorKeys) {
		got = append(got, v.Name+"="+v.ValueFrom.SecretKeyRef.Name+"/"+v.ValueFrom.SecretKeyRef.Key)
	}
	want := []string{HourglassRemoteCAEnv + "=ca/ca.crt", HourglassSigningRemoteCAEnv + "=ca/ca.crt",
		HourglassRemoteCertEnv + "=client/tls.crt", HourglassRemoteKeyEnv + "=client/tls.key",
		HourglassSigningRemoteCertEnv + "=client/tls.crt", HourglassSigningRemoteKeyEnv + "=client/tls.key"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("env %q\nwant %q", got, want)
	}
	e.Spec.OperatorKeys.SecretName, e.Spec.OperatorKeys.BLSKeystoreKey = "hg-keys", "bls"
	refs := Refs(e)
	if len(refs) != 3 || refs[0].Name != "hg-keys" || refs[1].Name != "ca" || !reflect.DeepEqual(refs[1].Keys, []string{"ca.crt"}) ||
		refs[2].Name != "client" || !reflect.DeepEqual(refs[2].Keys, []string{"tls.crt", "tls.key"}) {
		t.Errorf("refs %+v", refs)
	}
	if n := len(HourglassKeyEnv(e.Spec.OperatorKeys)); n != 4 { // CA, cert, key for operatorPrivateKey; the keystore
		t.Errorf("env with a BLS keystore: %d variables, want 4", n)
	}
}
