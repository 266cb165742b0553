# A state-upgrade fixture (hack/state-upgrade.sh; DESIGN.md "Changing a resource's schema"): this
# configuration and the state Terraform 1.14 wrote for it at the schema version its directory
# names (terraform.tfstate, written once by `hack/state-upgrade.sh generate`). It runs in the
# namespace stateupgrade of the local cluster.
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

provider "gantry" {}

# The Secret stateupgrade-operator-keys (keys ecdsa and bls, dummy values) is created by
# hack/state-upgrade.sh with kubectl: key material never goes through Terraform.
resource "gantry_executor" "fixture" {
  name                = "stateupgrade-executor"
  namespace           = "stateupgrade"
  image               = "ghcr.io/layr-labs/hourglass/executor:v0.4.0"
  labels              = { "app.kubernetes.io/part-of" = "state-upgrade" }
  aggregator_endpoint = "aggregator.avs.svc:9010"

  chains = [
    { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x1111111111111111111111111111111111111111" },
  ]

  operator_keys = {
    secret_name = "stateupgrade-operator-keys"
    ecdsa_key   = "ecdsa"
    bls_key     = "bls"
  }

  resources                 = { requests = { cpu = "100m" } }
  progress_deadline_seconds = 120
  rollback_on_failure       = true
  timeouts                  = { create = "5m", update = "5m" }
}
