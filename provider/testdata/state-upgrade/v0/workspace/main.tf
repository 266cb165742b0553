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

resource "gantry_workspace" "fixture" {
  name      = "stateupgrade-workspace"
  namespace = "stateupgrade"
  labels    = { "app.kubernetes.io/part-of" = "state-upgrade" }
  resource = {
    count           = 1
    gpu_count       = 1
    gpu_product     = "NVIDIA-A100-SXM4-80GB"
    provision_nodes = false
  }
  inference = {
    model = "falcon-7b-instruct"
    image = "ghcr.io/gantry-dev/hello-model:1.0.0"
    adapters = [
      { name = "style", image = "ghcr.io/gantry-dev/adapters/style:1", strength = "0.5" },
    ]
  }
  timeouts = { create = "5m" }
}
