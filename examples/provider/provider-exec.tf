# EKS: a short-lived token from an exec plugin, refreshed during long waits.
provider "gantry" {
  host                   = data.aws_eks_cluster.gpu.endpoint
  cluster_ca_certificate = base64decode(data.aws_eks_cluster.gpu.certificate_authority[0].data)

  exec {
    api_version = "client.authentication.k8s.io/v1beta1"
    command     = "aws"
    args        = ["eks", "get-token", "--cluster-name", data.aws_eks_cluster.gpu.name]
  }

  # Client rate limit: 50 requests/s, bursts of 100 (the defaults; client-go's own are 5/10).
  qps   = 50
  burst = 100
}
