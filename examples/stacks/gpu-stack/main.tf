# The GPU-stack module (examples/modules/gpu-stack) once per environment, with for_each, on
# the local GPU/TEE cluster (make demo). Each environment has its own namespace, which must
# exist and hold the Secret "operator-keys" with the executor's operator keys (make demo
# creates both with kubectl: key material never goes through Terraform).
# The provider reads the kubeconfig from KUBE_CONFIG_PATH (set by make demo).
terraform {
  required_version = ">= 1.5"
  required_providers {
    gantry = {
      source = "gantry-dev/gantry"
    }
  }
}

provider "gantry" {}

locals {
  environments = {
    staging = { namespace = "gantry-staging", gpu_product = "NVIDIA-A100-SXM4-80GB", tee_type = "sev-snp" }
    prod    = { namespace = "gantry-prod", gpu_product = "NVIDIA-H100-80GB-HBM3", tee_type = "tdx" }
  }
}

module "gpu_stack" {
  source   = "../../modules/gpu-stack"
  for_each = local.environments

  name            = each.key
  namespace       = each.value.namespace
  labels          = { "app.kubernetes.io/part-of" = "gpu-stack", "app.kubernetes.io/instance" = each.key }
  performer_image = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  gpu             = { count = 1, product = each.value.gpu_product }
  tee_type        = each.value.tee_type

  executor_image      = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  chains = [
    { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x1111111111111111111111111111111111111111" },
    { name = "base", chain_id = 8453, rpc_url = "https://base.example.com", task_mailbox_address = "0x2222222222222222222222222222222222222222" },
  ]
  operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa", bls_key = "bls" }

  model = { name = "falcon-7b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_count = 1, gpu_product = each.value.gpu_product }
  # The version is the tag. The local cluster's GPU pool only: its real node (tainted
  # gantry.dev/real-node) and the nodes Karpenter adds for workspaces carry
  # nvidia.com/gpu.present too, the module's default selector.
  driver = { version = "550.54.15", image = "ghcr.io/gantry-dev/gpu-driver", node_selector = { "gantry.dev/node-pool" = "gpu" } }
}
