# Terraform 1.5 and later: import an existing PackageSet (cluster-scoped) by its ID, its name.
import {
  to = gantry_package_set.gpu_drivers
  id = "gpu-drivers"
}
