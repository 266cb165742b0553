# Two performers and an executor that uses their gRPC endpoints on three chains.
# The operator keys stay in the Secret "operator-keys" (created outside Terraform):
# only its name and keys are referenced here, never the key material.
resource "gantry_performer" "gpu" {
  name  = "inference"
  image = "ghcr.io/acme/performer:1.2.0"
  hardware_requirements = {
    gpu_count = 1
  }
}

resource "gantry_performer" "tee" {
  name  = "attest"
  image = "ghcr.io/acme/performer:1.2.0"
  hardware_requirements = {
    tee_required = true
    tee_type     = "tdx"
  }
}

resource "gantry_executor" "main" {
  name                = "avs"
  image               = "ghcr.io/layr-labs/hourglass/executor:v0.4.0"
  replicas            = 2
  aggregator_endpoint = "aggregator.avs.svc:9010"
  performer_names     = [gantry_performer.gpu.name, gantry_performer.tee.name]

  chains = [
    { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x1111111111111111111111111111111111111111" },
    { name = "base", chain_id = 8453, rpc_url = "https://base.example.com", task_mailbox_address = "0x2222222222222222222222222222222222222222" },
    { name = "arbitrum", chain_id = 42161, rpc_url = "wss://arb.example.com", task_mailbox_address = "0x3333333333333333333333333333333333333333" },
  ]

  operator_keys = {
    secret_name = "operator-keys"
    ecdsa_key   = "ecdsa-private-key"
    bls_key     = "bls-private-key"
  }

  # Fail an update that makes no progress for 2 minutes, and roll back to the last good revision.
  progress_deadline_seconds = 120
  rollback_on_failure       = true

  timeouts = {
    update = "10m"
  }
}

output "executor_revision" {
  value = gantry_executor.main.current_revision
}

# An executor as Hourglass runs one: it serves one AVS and deploys that AVS's performer
# itself (manage_performers). Its pods run as the ServiceAccount "executor-hourglass", which may
# create, update and delete Performers in this namespace and nothing else; the performers it
# creates carry gantry.dev/created-by-executor=hourglass, are listed in managed_performers and
# are deleted with the executor. The BLS key is an EIP-2335 keystore in the Secret, mounted as
# a file; its password arrives as BLS_KEYSTORE_PASSWORD.
resource "gantry_executor" "hourglass" {
  name                = "hourglass"
  image               = "ghcr.io/layr-labs/hourglass/executor:v0.4.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  grpc_port           = 9090
  management_port     = 9091
  operator_address    = "0x9b18a6d836e9b2b6541fa9c7247f46b4a4a2f2fc"
  manage_performers   = true

  chains = [
    # Any chain name, with its chain ID: a local devnet.
    { name = "anvil", chain_id = 31337, rpc_url = "http://anvil.devnet.svc:8545", task_mailbox_address = "0x4444444444444444444444444444444444444444" },
  ]

  avs_performers = [{
    avs_address           = "0xCE2Ac75bE2E0951F1F7B288c7a6A9BfB6c331DC4"
    avs_registrar_address = "0x5897a9b8b746c78e0cae876962796949832e3357"
    process_type          = "server"
    image                 = "ghcr.io/acme/hello-performer:1.0.0"
    env                   = { TEST_ENV = "test_value" }
  }]

  operator_keys = {
    secret_name               = "operator-keys"
    ecdsa_key                 = "ecdsa-private-key"
    bls_keystore_key          = "bls-keystore.json"
    bls_keystore_password_key = "bls-keystore-password"
  }
}

output "managed_performers" {
  value = gantry_executor.hourglass.managed_performers
}
