# The image a package's stages run, as Skyhook runs it (image:version; no cluster needed).
output "tuned" {
  value = provider::gantry::package_image("ghcr.io/acme/tuned", "1.2.3")
  # "ghcr.io/acme/tuned:1.2.3"
}

# A tag written in the image is replaced by the version; build metadata is tagged with "_".
output "retagged" {
  value = provider::gantry::package_image("ghcr.io/acme/tuned:6.0", "1.2.3+build.5")
  # "ghcr.io/acme/tuned:1.2.3_build.5"
}

# Pre-pull or mirror exactly what the package set will run.
locals {
  packages = [
    { name = "tuned", image = "ghcr.io/acme/tuned", version = "1.2.3" },
    { name = "nvidia-setup", image = "ghcr.io/acme/nvidia-setup", version = "2.0" },
  ]
}

output "images_to_mirror" {
  value = [for p in local.packages : provider::gantry::package_image(p.image, p.version)]
}
