# Run the driver set again on two nodes (e.g. after a node was re-imaged):
#   terraform apply -invoke=action.gantry_package_set_rerun.reimaged   (Terraform 1.14 and later)
action "gantry_package_set_rerun" "reimaged" {
  config {
    name  = "gpu-drivers"
    nodes = ["gpu-node-07", "gpu-node-12"]
  }
}
