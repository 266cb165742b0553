package provider

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// The executor's remote signer in Hourglass compatibility mode (issue 40 item 8).

const accSignerPublicKey = "0x8318535b54105d4a7aae60c08fc45f9687181b4fdfc625bd1a753fa7397fed753547f11ca8696646f2f3acb08e31016afac23e630c5d11f59f61fef57b0d2aa5"

// hourglassSignerExecutor is hourglassExecutor with the ECDSA key in web3signer: keys is the
// operator_keys block.
func hourglassSignerExecutor(ns, keys string) string {
	return strings.Replace(hourglassExecutor(ns), `  operator_keys = {
    secret_name               = "operator-keys"
    ecdsa_key                 = "operator-private-key"
    bls_keystore_key          = "bls-keystore"
    bls_keystore_password_key = "bls-password"
  }`, keys, 1)
}

// operator_keys.remote_signer reaches spec.operatorKeys.remoteSigner (address as fromAddress)
// and reads back as configured, null optional attributes staying null.
func TestExecutorRemoteSigner_roundTrip(t *testing.T) {
	rs := &remoteSignerModel{URL: str("https://web3signer:9000"), PublicKey: str(accSignerPublicKey), Address: types.StringNull(),
		CASecretName: str("signer-ca"), ClientCertSecretName: types.StringNull()}
	keys := operatorKeysModel{SecretName: str("hg-keys"), ECDSAKey: types.StringNull(), BLSKey: types.StringNull(), BLSKeystoreKey: str("bls"),
		BLSKeystorePasswordKey: types.StringNull(), RemoteSignerURL: types.StringNull(), RemoteSigner: rs}
	got := expandRemoteSigner(rs)
	if want := (&v1alpha1.RemoteSigner{URL: "https://web3signer:9000", PublicKey: accSignerPublicKey, CASecretName: "signer-ca"}); !reflect.DeepEqual(got, want) {
		t.Errorf("expand %+v, want %+v", got, want)
	}
	back := flattenOperatorKeys(v1alpha1.OperatorKeys{SecretName: "hg-keys", BLSKeystoreKey: "bls", RemoteSigner: got}, "hg", keys)
	if !reflect.DeepEqual(back.RemoteSigner, rs) {
		t.Errorf("read back %+v, want %+v", back.RemoteSigner, rs)
	}
	withAddr := *got
	withAddr.FromAddress = "0x6ca766d180398847cEb1a58f03e029D65d88a878"
	if b := flattenRemoteSigner(&withAddr, nil); b.Address.ValueString() != withAddr.FromAddress || !b.ClientCertSecretName.IsNull() {
		t.Errorf("import %+v", b)
	}
}

// At plan, through the Terraform CLI (no cluster): the remote signer is accepted in
// hourglass_compat alone or beside a BLS keystore Secret; refused without hourglass_compat,
// beside ecdsa_key or remote_signer_url (naming both), with TLS Secrets on an http url, and
// with a public key of the wrong shape; remote_signer_url in hourglass_compat points to it.
func TestExecutor_remoteSignerAtPlan(t *testing.T) {
	requireTerraform(t)
	signer := func(extra string) string {
		return `  operator_keys = {
    remote_signer = {
      url        = "https://web3signer.signers.svc:9000"
      public_key = "` + accSignerPublicKey + `"
` + extra + `
    }
  }`
	}
	for name, tc := range map[string]struct {
		config, want string
	}{
		"alone": {config: hourglassSignerExecutor("default", signer(`      ca_secret_name = "signer-ca"
      client_cert_secret_name = "signer-client"`))},
		"beside a BLS keystore": {config: hourglassSignerExecutor("default", strings.Replace(signer(""), "  operator_keys = {", `  operator_keys = {
    secret_name      = "operator-keys"
    bls_keystore_key = "bls-keystore"`, 1))},
		"without hourglass_compat": {config: strings.Replace(hourglassSignerExecutor("default", signer("")), `hourglass_compat = { l1_chain = "base" }`, "", 1),
			want: `Remote Signer Needs Hourglass Compatibility Mode`},
		"beside ecdsa_key": {config: hourglassSignerExecutor("default", strings.Replace(signer(""), "  operator_keys = {", `  operator_keys = {
    secret_name = "operator-keys"
    ecdsa_key   = "operator-private-key"`, 1)),
			want: `(?s)Conflicting Attributes: operator_keys.ecdsa_key and\s+operator_keys.remote_signer`},
		"beside remote_signer_url": {config: hourglassSignerExecutor("default", strings.Replace(signer(""), "  operator_keys = {", `  operator_keys = {
    remote_signer_url = "https://web3signer.signers.svc:9000"`, 1)),
			want: `(?s)Conflicting Attributes: operator_keys.remote_signer_url and`},
		"TLS on http": {config: strings.Replace(hourglassSignerExecutor("default", signer(`      ca_secret_name = "signer-ca"`)), "https://web3signer", "http://web3signer", 1),
			want: `(?s)TLS Needs an https:// URL`},
		"public key too short": {config: hourglassSignerExecutor("default", strings.Replace(signer(""), accSignerPublicKey, accSignerPublicKey[:66], 1)),
			want: `(?s)must be an ECDSA public key`},
		"remote_signer_url in hourglass_compat": {config: hourglassSignerExecutor("default", `  operator_keys = {
    remote_signer_url = "https://web3signer.signers.svc:9000"
  }`), want: `(?s)Not Supported By Hourglass.*operator_keys.remote_signer\s+=\s+\{\s+url,\s+public_key\s+\}`},
	} {
		t.Run(name, func(t *testing.T) {
			step := resource.TestStep{Config: tc.config, PlanOnly: true, ExpectNonEmptyPlan: true}
			if tc.want != "" {
				step.ExpectError = regexp.MustCompile(tc.want)
			}
			resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: []resource.TestStep{step}})
		})
	}
}

// An unmodified Hourglass executor image whose ECDSA key is in web3signer (mutual TLS, the
// CA and client certificate in Secrets; the BLS keystore in the operator key Secret): the
// apply waits for it Running; the ConfigMap holds Hourglass's remoteSignerConfig for
// operator.operatorPrivateKey with both flag keys, the URL, the public key, the operator
// address as fromAddress and empty TLS placeholders; the pod gets the TLS material only as
// secretKeyRef variables; no certificate or key is in state or in the ConfigMap; the next plan
// is empty; import reads it back whole.
func TestAccExecutor_hourglassRemoteSigner(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-exec-hg-signer")
	ctx := context.Background()
	tlsKey := "-----BEGIN EC PRIVATE KEY-----\n" + accKeyMaterial + "\n-----END EC PRIVATE KEY-----\n"
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "operator-keys"}, StringData: map[string]string{"bls-keystore": `{"crypto":{"cipher":"aes-128-ctr"}}`, "bls-password": "pw"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "signer-ca"}, StringData: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "signer-client"}, Type: corev1.SecretTypeTLS,
			StringData: map[string]string{"tls.crt": "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n", "tls.key": tlsKey}},
	} {
		if _, err := c.Core.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := hourglassSignerExecutor(ns, `  operator_keys = {
    secret_name               = "operator-keys"
    bls_keystore_key          = "bls-keystore"
    bls_keystore_password_key = "bls-password"
    remote_signer = {
      url                     = "https://web3signer.signers.svc:9000"
      public_key              = "`+accSignerPublicKey+`"
      ca_secret_name          = "signer-ca"
      client_cert_secret_name = "signer-client"
    }
  }`)
	addr := "gantry_executor.hourglass"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkExecutorsDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("operator_keys").AtMapKey("remote_signer").AtMapKey("address"), knownvalue.Null()),
				},
				Check:            checkHourglassSigner(c, ns, addr, accKeyMaterial[2:12]),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           ns + "/hourglass",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}

// checkHourglassSigner reads config.yaml back and checks the remote signer as Hourglass's
// executor reads it, the pod's TLS variables, and that secret (a part of the client key) is
// in neither the state nor the ConfigMap.
func checkHourglassSigner(c *kube.Clients, ns, addr, secret string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs := s.RootModule().Resources[addr]
		for k, v := range rs.Primary.Attributes {
			if strings.Contains(v, secret) || strings.Contains(v, "BEGIN CERTIFICATE") {
				return fmt.Errorf("TLS material in Terraform state attribute %s", k)
			}
		}
		cm, err := c.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), rs.Primary.Attributes["config_map_name"], metav1.GetOptions{})
		if err != nil {
			return err
		}
		raw := cm.Data["config.yaml"]
		if strings.Contains(raw, secret) || strings.Contains(raw, "BEGIN") {
			return fmt.Errorf("TLS material in the ConfigMap")
		}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(raw), &doc); err != nil {
			return fmt.Errorf("config.yaml does not parse: %w", err)
		}
		got := map[string]any{}
		flatten("", doc, got)
		pk := "operator.operatorPrivateKey."
		want := map[string]any{pk + "remoteSigner": true, pk + "useRemoteSigner": true,
			pk + "remoteSignerConfig.url": "https://web3signer.signers.svc:9000", pk + "remoteSignerConfig.publicKey": accSignerPublicKey,
			pk + "remoteSignerConfig.fromAddress": "0x6ca766d180398847cEb1a58f03e029D65d88a878",
			pk + "remoteSignerConfig.caCert":      "", pk + "remoteSignerConfig.cert": "", pk + "remoteSignerConfig.key": "",
			"operator.signingKeys.bls.keystore": ""}
		for k, v := range want {
			if got[k] != v {
				return fmt.Errorf("config.yaml %s = %#v, want %#v\n%s", k, got[k], v, raw)
			}
		}
		if _, ok := got[pk+"privateKey"]; ok {
			return fmt.Errorf("config.yaml has %sprivateKey beside the remote signer", pk)
		}
		deps, err := c.Core.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelExecutor + "=hourglass"})
		if err != nil || len(deps.Items) != 1 {
			return fmt.Errorf("executor Deployment: %v (%d)", err, len(deps.Items))
		}
		env := map[string]string{}
		for _, v := range deps.Items[0].Spec.Template.Spec.Containers[0].Env {
			if v.Value != "" {
				return fmt.Errorf("env %s has a literal value", v.Name)
			}
			if r := v.ValueFrom.SecretKeyRef; r != nil {
				env[v.Name] = r.Name + "/" + r.Key
			}
		}
		for name, ref := range map[string]string{executor.HourglassRemoteCAEnv: "signer-ca/ca.crt", executor.HourglassRemoteCertEnv: "signer-client/tls.crt",
			executor.HourglassRemoteKeyEnv: "signer-client/tls.key", executor.HourglassBLSKeystoreEnv: "operator-keys/bls-keystore"} {
			if env[name] != ref {
				return fmt.Errorf("env %s = %q, want secretKeyRef %s (env %v)", name, env[name], ref, env)
			}
		}
		if _, ok := env[executor.HourglassOperatorKeyEnv]; ok {
			return fmt.Errorf("env %s beside the remote signer", executor.HourglassOperatorKeyEnv)
		}
		return nil
	}
}
