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
