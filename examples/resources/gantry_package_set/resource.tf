# GPU driver and a DCGM exporter on every GPU node, two nodes at a time; the driver needs a
# reboot, so nodes are cordoned and drained (within the budget) before its interrupt.
resource "gantry_package_set" "gpu" {
  name          = "gpu-stack"
  node_selector = { "nvidia.com/gpu.present" = "true" }
  priority      = 100

  interruption_budget    = { count = 2 }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]

  # Each node soaks 10 minutes after its last stage, its checks re-run every 2 minutes; a
  # failure rolls that node back and quarantines what failed.
  rollout = { soak_duration = "10m", soak_check_interval = "2m", on_health_failure = "rollback" }

  packages = [
    {
      name              = "gpu-driver"
      version           = "550.54.15"
      image             = "ghcr.io/acme/gpu-driver:550.54.15"
      interrupt         = { type = "reboot" }
      uninstall_enabled = true
    },
    {
      name       = "dcgm-exporter"
      version    = "3.3.5"
      image      = "ghcr.io/acme/dcgm-exporter:3.3.5"
      config     = { interval = "30s" }
      depends_on = { "gpu-driver" = "550.54.15" }
    },
  ]

  timeouts = { create = "30m", update = "30m", delete = "30m" }
}
