# Quickstart: five performers on the local GPU/TEE cluster (make demo).
# The provider reads the kubeconfig from KUBE_CONFIG_PATH (set by make demo to
# .cache/cluster/kubeconfig), like the kubernetes provider.
terraform {
  required_providers {
    gantry = {
      source = "gantry-dev/gantry"
    }
  }
}

provider "gantry" {}

locals {
  image = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}

# One GPU of any product.
resource "gantry_performer" "gpu_one" {
  name      = "gpu-one"
  namespace = "default"
  image     = local.image
  hardware_requirements = {
    gpu_count = 1
  }
}

# Two GPUs of a given product: lands on the H100 node.
resource "gantry_performer" "gpu_h100" {
  name      = "gpu-h100"
  namespace = "default"
  image     = local.image
  version   = "1.0.0"
  hardware_requirements = {
    gpu_count = 2
    gpu_type  = "NVIDIA-H100-80GB-HBM3"
  }
}

# Intel TDX confidential VM: TDX node, runtime class kata-qemu-tdx.
resource "gantry_performer" "tee_tdx" {
  name      = "tee-tdx"
  namespace = "default"
  image     = local.image
  hardware_requirements = {
    tee_required = true
    tee_type     = "tdx"
  }
}

# AMD SEV-SNP confidential VM: SEV-SNP node, runtime class kata-qemu-snp.
resource "gantry_performer" "tee_snp" {
  name      = "tee-snp"
  namespace = "default"
  image     = local.image
  hardware_requirements = {
    tee_required = true
    tee_type     = "sev-snp"
  }
}

# Plain CPU performer on a custom gRPC port, kept on the CPU node pool.
resource "gantry_performer" "cpu" {
  name      = "cpu"
  namespace = "default"
  image     = local.image
  grpc_port = 8080
  node_selector = {
    "gantry.dev/node-pool" = "cpu"
  }
  env = {
    LOG_LEVEL = "info"
  }
  resources = {
    requests = { cpu = "500m", memory = "256Mi" }
    limits   = { memory = "512Mi" }
  }
}
