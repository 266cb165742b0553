# Terraform 1.12 and later: import an existing PackageSet (cluster-scoped) by its identity.
import {
  to = gantry_package_set.gpu_drivers
  identity = {
    name = "gpu-drivers"
  }
}
