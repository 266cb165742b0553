# Setup of the apply test (../apply.tftest.hcl): the namespace the stack runs in, with the
# operator key Secret the executor reads ("operator-keys", keys ecdsa and bls), created with
# kubectl against KUBE_CONFIG_PATH, the kubeconfig the gantry provider uses; as make demo does,
# key material never goes through Terraform (these are demo keys). terraform test destroys this
# run's state last, after the stack's: the namespace is deleted then.
terraform {
  required_version = ">= 1.8"
}

variable "namespace" {
  description = "Namespace to create (and delete at the end of the test)."
  type        = string
}

resource "terraform_data" "namespace" {
  input = var.namespace

  provisioner "local-exec" {
    command = <<-EOT
      set -eu
      : "$${KUBE_CONFIG_PATH:?must name the local cluster's kubeconfig}"
      kc() { kubectl --kubeconfig "$KUBE_CONFIG_PATH" "$@"; }
      # A previous run's namespace, still terminating: wait until it is gone.
      if [ "$(kc get namespace "$NS" -o jsonpath='{.status.phase}' 2>/dev/null || true)" = Terminating ]; then
        kc wait --for=delete "namespace/$NS" --timeout=3m
      fi
      kc create namespace "$NS" --dry-run=client -o yaml | kc apply -f -
      kc -n "$NS" create secret generic operator-keys --from-literal=ecdsa="$ECDSA" --from-literal=bls="$BLS" --dry-run=client -o yaml | kc apply -f -
    EOT
    environment = {
      NS    = var.namespace
      ECDSA = "0x${join("", [for i in range(32) : "de"])}"
      BLS   = "0x${join("", [for i in range(32) : "b1"])}"
    }
  }

  provisioner "local-exec" {
    when    = destroy
    command = "kubectl --kubeconfig \"$KUBE_CONFIG_PATH\" delete namespace \"$NS\" --ignore-not-found --timeout=3m"
    environment = {
      NS = self.input
    }
  }
}

output "namespace" {
  description = "The namespace, once it exists with the Secret."
  value       = terraform_data.namespace.output
}
