# Wait for nothing: only read which nodes have the GPU driver set complete.
data "gantry_package_set" "drivers" {
  name = "gpu-drivers"
}

output "driver_nodes" {
  value = [for node, status in data.gantry_package_set.drivers.node_status : node if status == "complete"]
}
