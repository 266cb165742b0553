# A performer on two H100 GPUs.
resource "gantry_performer" "gpu" {
  name        = "inference"
  namespace   = "avs"
  image       = "ghcr.io/acme/performer:1.2.0"
  version     = "1.2.0"
  avs_address = "0x1234567890abcdef1234567890abcdef12345678"

  hardware_requirements = {
    gpu_count = 2
    gpu_type  = "NVIDIA-H100-80GB-HBM3"
  }

  env = {
    LOG_LEVEL = "info"
  }
  env_from = [{
    name           = "OPERATOR_KEY"
    secret_key_ref = { name = "operator-keys", key = "ecdsa" }
  }]

  resources = {
    requests = { cpu = "4", memory = "32Gi" }
    limits   = { memory = "64Gi" }
  }

  timeouts = {
    create = "15m"
  }
}

# A performer in an Intel TDX confidential VM.
resource "gantry_performer" "tdx" {
  name      = "attested"
  namespace = "avs"
  image     = "ghcr.io/acme/performer:1.2.0"
  grpc_port = 8080

  hardware_requirements = {
    tee_required = true
    tee_type     = "tdx"
  }
}

# A performer that must never be without a serving pod: a new image or env rolls out as a
# one-replica Deployment (the new pod is Ready before the old one is removed).
resource "gantry_performer" "always_on" {
  name      = "always-on"
  namespace = "avs"
  image     = "ghcr.io/acme/performer:1.2.0"
  strategy  = "RollingUpdate"
  labels    = { "team.example.com/owner" = "avs" } # reach the pod
}

output "endpoints" {
  value = {
    gpu = gantry_performer.gpu.grpc_endpoint # performer-inference.avs.svc.cluster.local:9090
    tdx = gantry_performer.tdx.grpc_endpoint # performer-attested.avs.svc.cluster.local:8080
  }
}
