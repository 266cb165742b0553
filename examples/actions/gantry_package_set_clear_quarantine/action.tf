# dcgm-tool 1.1.0 failed on a node, was rolled back (rollout.on_health_failure = "rollback") and
# is quarantined: `kubectl get packageset gpu-drivers -o jsonpath='{.status.quarantinedVersions}'`.
# Once the cause is fixed (a node problem, a registry, the package image), try the same version
# again without changing the configuration, and wait until the set is complete:
#   terraform apply -invoke=action.gantry_package_set_clear_quarantine.dcgm   (Terraform 1.14 and later)
action "gantry_package_set_clear_quarantine" "dcgm" {
  config {
    name     = "gpu-drivers"
    versions = ["dcgm-tool@1.1.0"] # default: every quarantined version of the set
  }
}
