terraform import gantry_package_set.gpu gpu-stack
