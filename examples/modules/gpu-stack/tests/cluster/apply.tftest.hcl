# The GPU-stack module applied for real: the gantry provider (not mocked) against the local
# cluster of make cluster (kwok GPU nodes gantry-gpu-0..2, TEE nodes gantry-tee-snp-0 and
# gantry-tee-tdx-0, Karpenter's kwok provider) with the reconciler running. terraform test
# destroys everything at the end: the stack first, then the setup's namespace.
#
# Run it with hack/module-test.sh apply (Terraform 1.14; part of make test), or by hand in this
# module's directory with the provider installed (make install) and the cluster and reconciler up
# (make reconciler):
#
#   export TF_CLI_CONFIG_FILE=$PWD/../../../.cache/terraformrc KUBE_CONFIG_PATH=$PWD/../../../.cache/cluster/kubeconfig
#   terraform init -test-directory=tests/cluster && terraform test -test-directory=tests/cluster
#
# It is in a directory of its own so that a plain `terraform test` runs only the mocked tests.

# The namespace, with the operator key Secret (kubectl; see setup/main.tf).
run "setup" {
  module {
    source = "./tests/cluster/setup"
  }

  variables {
    namespace = "gantry-module-test"
  }
}

run "apply" {
  command = apply

  variables {
    name                = "modtest"
    namespace           = run.setup.namespace
    labels              = { "app.kubernetes.io/part-of" = "gpu-stack-module-test" }
    performer_image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
    gpu                 = { count = 1, product = "NVIDIA-A100-SXM4-80GB" }
    tee_type            = "sev-snp"
    executor_image      = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
    aggregator_endpoint = "aggregator.avs.svc:9010"
    chains = [
      { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x1111111111111111111111111111111111111111" },
    ]
    operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa", bls_key = "bls" }
    model         = { name = "falcon-7b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_count = 1, gpu_product = "NVIDIA-A100-SXM4-80GB" }
    # The cluster's own GPU nodes only (not the nodes Karpenter adds for workspaces, which carry
    # nvidia.com/gpu.present too).
    driver  = { version = "550.54.15", image = "ghcr.io/gantry-dev/gpu-driver", node_selector = { "gantry.dev/node-pool" = "gpu" } }
    timeout = "5m"
  }

  assert {
    condition = output.summaries == {
      performer_gpu = "Running"
      performer_tee = "Running"
      executor      = "Running"
      workspace     = "Ready"
      drivers       = "complete"
    }
    error_message = "every resource reaches its success summary (performers and executor Running, workspace Ready, driver set complete); got ${jsonencode(output.summaries)}."
  }
  assert {
    condition = output.performer_endpoints == {
      gpu = "performer-modtest-gpu.gantry-module-test.svc.cluster.local:9090"
      tee = "performer-modtest-tee.gantry-module-test.svc.cluster.local:9090"
    }
    error_message = "performer endpoints: performer-<name>.<namespace>.svc.cluster.local:9090; got ${jsonencode(output.performer_endpoints)}."
  }
  assert {
    condition     = output.executor.performer_endpoints == tomap({ "modtest-gpu" = output.performer_endpoints.gpu, "modtest-tee" = output.performer_endpoints.tee })
    error_message = "the executor is configured with both performers' endpoints; got ${jsonencode(output.executor.performer_endpoints)}."
  }
  assert {
    condition     = try(length(output.executor.revision) > 0, false)
    error_message = "the executor reports the revision it runs."
  }
  assert {
    condition     = try(length(output.performer_nodes.gpu) > 0, false) && try(startswith(output.performer_nodes.tee, "gantry-tee-snp-"), false)
    error_message = "both performers are placed, the TEE one on a SEV-SNP node; got ${jsonencode(output.performer_nodes)}."
  }
  assert {
    condition     = can(regex("^workspace-modtest-chat\\.gantry-module-test\\.svc\\.cluster\\.local:[0-9]+$", output.workspace_endpoint)) && length(output.workspace_nodes) == 1
    error_message = "the workspace serves at workspace-<name>.<namespace>.svc.cluster.local:<port> from one node; got ${jsonencode(output.workspace_endpoint)} on ${jsonencode(output.workspace_nodes)}."
  }
  assert {
    condition     = try(tonumber(split("/", output.drivers.complete_nodes)[0]) > 0 && split("/", output.drivers.complete_nodes)[0] == split("/", output.drivers.complete_nodes)[1], false)
    error_message = "the driver set is complete on every node it selects (complete_nodes n/n, n > 0); got ${jsonencode(output.drivers.complete_nodes)}."
  }
}
