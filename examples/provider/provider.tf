# Read a kubeconfig file, like the kubernetes provider (KUBECONFIG is not read by default).
provider "gantry" {
  config_path    = "~/.kube/config"
  config_context = "gpu-cluster"
}
