# terraform query (Terraform 1.14 and later): every PackageSet labelled fleet=gpu (package sets
# are cluster-scoped). `terraform query -generate-config-out=generated.tf` writes a resource and
# an import block for each.
list "gantry_package_set" "gpu" {
  provider         = gantry
  include_resource = true
  config {
    label_selector = "fleet=gpu"
  }
}
