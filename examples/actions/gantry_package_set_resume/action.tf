# An operator stopped the rollout with `kubectl annotate packageset gpu-drivers gantry.dev/pause=true`;
# resume it and wait until it is complete:
#   terraform apply -invoke=action.gantry_package_set_resume.drivers   (Terraform 1.14 and later)
action "gantry_package_set_resume" "drivers" {
  config {
    name = "gpu-drivers"
  }
}
