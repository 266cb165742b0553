terraform {
  required_version = ">= 1.8" # provider-defined functions (OpenTofu 1.7+)
  required_providers {
    gantry = {
      source = "gantry-dev/gantry"
    }
  }
}
