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

# Packages written as Skyhook users write them. "tuned" is an existing Skyhook package image,
# run unchanged by Skyhook's agent (its content is copied to the host, the agent runs each
# stage and check with Skyhook's arguments); its image has no tag, so the version is the tag
# (tuned:2.1). "sysctl" is a Gantry package that changes the host itself: its host access is
# explicit. No interruption_budget: every selected node at once, as Skyhook.
resource "gantry_package_set" "host_tuning" {
  name          = "host-tuning"
  labels        = { "team.example.com/owner" = "platform" }
  node_selector = { "nvidia.com/gpu.present" = "true" }

  packages = [
    {
      name    = "tuned"
      version = "2.1"
      image   = "ghcr.io/nvidia/skyhook-packages/tuned"
      config  = { "tuned.conf" = "[main]\ninclude=throughput-performance\n" }
      skyhook = { agent_image = "ghcr.io/nvidia/skyhook/agent:6.3.0" }
    },
    {
      name    = "sysctl"
      version = "1.0"
      image   = "ghcr.io/acme/sysctl"
      host    = { privileged = true, host_pid = true, root_mount_path = "/host" }
    },
  ]
}

# A driver rolled out by compartments, as Skyhook's DeploymentPolicy: a canary rack first
# in exponential batches (1, 2, 4, ... nodes, at most 4 in flight), zone b in fixed batches of
# 5 that stop after 2 failed batches in a row while less than half of the zone is done; every
# other node 10% at a time. Progress per compartment is in `compartments`.
resource "gantry_package_set" "driver_by_zone" {
  name                   = "gpu-driver-rollout"
  node_selector          = { "nvidia.com/gpu.present" = "true" }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]

  deployment_policy = {
    default = { budget = { percent = 10 } }
    compartments = [
      {
        name          = "canary"
        node_selector = { "example.com/rack" = "r01" }
        budget        = { count = 4 }
        strategy      = { type = "exponential", initial_batch = 1, growth_factor = 2 }
      },
      {
        name = "zone-b"
        node_selector_expressions = [
          { key = "topology.kubernetes.io/zone", operator = "In", values = ["b1", "b2"] },
        ]
        budget   = { percent = 25 }
        strategy = { type = "fixed", initial_batch = 5, batch_threshold = 80, failure_threshold = 2, safety_limit = 50 }
      },
    ]
  }

  packages = [{
    name              = "gpu-driver"
    version           = "550.54.15"
    image             = "ghcr.io/acme/gpu-driver"
    interrupt         = { type = "reboot" }
    uninstall_enabled = true
  }]
}

# Runtime-required nodes, as Skyhook's runtimeRequired: GPU nodes join with the taint
# gantry.dev/runtime-required=true:NoSchedule (kubelet --register-with-taints, or the node
# pool's taints), so no workload lands on them before the firmware package is complete
# there; the reconciler removes the taint node by node once every runtime-required set
# selecting the node is complete on it (a node whose stage fails keeps it). auto_taint_new_nodes also taints new nodes that joined
# without it (a fallback: pods may land on a node before the reconciler sees it).
resource "gantry_package_set" "gpu_gate" {
  name          = "gpu-gate"
  node_selector = { "nvidia.com/gpu.present" = "true" }
  priority      = 10

  runtime_required     = true
  auto_taint_new_nodes = true

  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]

  packages = [
    {
      name    = "gpu-firmware"
      version = "1.4.0"
      image   = "ghcr.io/acme/gpu-firmware"
      host    = { privileged = true, root_mount_path = "/host" }
    },
  ]
}

# A driver rolled out as NixFleet rolls out: a canary wave, then zone a, then every other
# node (each wave starts once the earlier ones are done, soak included); DCGM and the node
# exporter must stay healthy through each node's 10-minute soak, or the node goes back to the
# driver it had and the new version is quarantined. The set starts on a node only after the
# "gpu-gate" set above is complete there, whatever the priorities.
resource "gantry_package_set" "driver_waves" {
  name                   = "gpu-driver-waves"
  node_selector          = { "nvidia.com/gpu.present" = "true" }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  after                  = [gantry_package_set.gpu_gate.name]
  interruption_budget    = { percent = 20 }

  rollout = {
    soak_duration     = "10m"
    on_health_failure = "rollback"
    waves = [
      { name = "canary", node_selector = { "example.com/canary" = "true" } },
      { name = "zone-a", node_selector = { "topology.kubernetes.io/zone" = "a" } },
    ]
    health_checks = [
      { name = "dcgm", image = "nvcr.io/nvidia/cloud-native/dcgm:3.3.5-1-ubuntu22.04", command = ["dcgmi", "diag", "-r", "1"] },
      { name = "node-exporter", http_get = { url = "http://$(NODE_IP):9100/metrics" }, timeout = "10s" },
    ]
  }

  packages = [{
    name              = "gpu-driver"
    version           = "550.54.15"
    image             = "ghcr.io/acme/gpu-driver"
    interrupt         = { type = "reboot" }
    uninstall_enabled = true
  }]
}

# Base OS tuning on every node except the control plane, first of all sets: with
# sequencing = "all" no node starts a later set (higher priority number) until this one is
# complete on every node it selects. The legacy agent is uninstalled from every node now
# (Skyhook's uninstall.apply) while it stays listed; set uninstall_apply back to false to
# cancel where its uninstall has not started. serial = true (Skyhook's serial) runs the two
# packages one after the other on each node instead of side by side.
resource "gantry_package_set" "base" {
  name       = "base-os"
  priority   = 1
  sequencing = "all"
  serial     = true
  node_selector_expressions = [
    { key = "node-role.kubernetes.io/control-plane", operator = "DoesNotExist" },
  ]

  packages = [
    { name = "sysctl-tuning", version = "1.0", image = "ghcr.io/acme/sysctl-tuning" },
    {
      name              = "legacy-agent"
      version           = "0.9.0"
      image             = "ghcr.io/acme/legacy-agent"
      uninstall_enabled = true
      uninstall_apply   = true
    },
  ]
}

# A driver upgrade that drains as a maintenance window allows, with NodeWright's drain settings
# (kubectl drain's flags): each evicted pod gets 60s to stop; pods with emptyDir data are not
# evicted (they hold the drain until they go); the node agent, which survives the reboot, is
# never drained. A drain still held after 20 minutes (a PodDisruptionBudget that allows no
# disruption, a pod still terminating, an emptyDir pod) fails the node: the set is erroring
# and the apply fails naming the pods left and why, while the node stays cordoned and its
# drain is tried again after a backoff. on_timeout = "Continue" would reboot with them instead.
resource "gantry_package_set" "driver_drain" {
  name                   = "gpu-driver-drain"
  node_selector          = { "nvidia.com/gpu.present" = "true" }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  interruption_budget    = { count = 1 }

  drain = {
    grace_period          = "60s"
    timeout               = "20m"
    delete_empty_dir_data = false
    skip_pod_labels       = { "app.kubernetes.io/name" = "node-agent" }
    on_timeout            = "Fail"
  }

  packages = [{
    name      = "gpu-driver"
    version   = "550.54.15"
    image     = "ghcr.io/acme/gpu-driver"
    interrupt = { type = "reboot" }
  }]
}

# Nodes that boot into a fresh OS (read-only or stateless systems such as GKE's
# Container-Optimized OS), as NodeWright's reapplyOnReboot: what the driver and the tuning did
# is gone after every boot, so when a node's boot ID changes outside this set's own reboot
# interrupts (a host maintenance, a kernel panic, someone's reboot) both run their apply and
# config stages again, without the driver's reboot, and the runtime-required taint keeps
# workloads off the node until they are done. The tuning depends on the driver, so it runs
# after the driver's own reboot, and again after the driver's re-apply. The metrics agent
# survives a reboot and is left alone.
resource "gantry_package_set" "cos_gpu" {
  name                   = "cos-gpu"
  node_selector          = { "cloud.google.com/gke-os-distribution" = "cos" }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  runtime_required       = true

  packages = [
    {
      name              = "gpu-driver"
      version           = "550.54.15"
      image             = "ghcr.io/acme/cos-gpu-driver"
      interrupt         = { type = "reboot" }
      reapply_on_reboot = true
    },
    {
      name              = "tuning"
      version           = "1.0.0"
      image             = "ghcr.io/acme/cos-tuning"
      config            = { profile = "throughput" }
      depends_on        = { "gpu-driver" = "550.54.15" }
      reapply_on_reboot = true
    },
    { name = "metrics-agent", version = "2.3.0", image = "ghcr.io/acme/metrics-agent" },
  ]
}
