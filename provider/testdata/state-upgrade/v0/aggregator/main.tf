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
resource "gantry_aggregator" "fixture" {
  name             = "stateupgrade-aggregator"
  namespace        = "stateupgrade"
  image            = "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2"
  labels           = { "app.kubernetes.io/part-of" = "state-upgrade" }
  operator_address = "0x6B58f6762689DF33fe8fa3FC40Fb5a3089D3a8cc"
  l1_chain_id      = 31337

  chains = [
    { name = "ethereum", chain_id = 31337, rpc_url = "http://anvil.example.com:8545", poll_interval_seconds = 10 },
    { name = "base", chain_id = 31338, rpc_url = "http://anvil.example.com:9545" },
  ]

  avss = [{ address = "0xce2ac75be2e0951f1f7b288c7a6a9bfb6c331dc4", chain_ids = [31338] }]

  operator_keys = {
    secret_name = "stateupgrade-operator-keys"
    ecdsa_key   = "ecdsa"
  }

  resources = { requests = { cpu = "100m" } }
  timeouts  = { create = "5m", update = "5m" }
}
