# Plan-only tests of the GPU-stack module with a mocked gantry provider: no cluster, no
# credentials. hack/module-test.sh mock runs them on Terraform 1.14 and OpenTofu 1.12 (make test
# does too); by hand, in this directory: terraform init && terraform test (or tofu).
#
# They check what the module derives from its variables (object names, namespace, labels,
# hardware requirements, the executor's performers and chains, the workspace, the driver package
# set, the timeouts) and that each variable validation rejects what it should and accepts its
# boundary values. Only values known at plan are asserted here, so this one file serves both
# CLIs; the outputs (computed attributes) and the driver set's postcondition are in
# outputs.tftest.hcl / outputs.tofutest.hcl.
#
# Neither CLI mocks everything: the real provider binary still validates each resource's
# configuration (a fraction where it takes a whole number, a bad label key, an invalid timeout
# fail the plan there) and evaluates provider::gantry::preset_sizing, which var.model's
# validation calls; neither needs a cluster.

mock_provider "gantry" {}

# The required variables only; every optional one keeps its default.
variables {
  name                = "staging"
  namespace           = "gantry-staging"
  performer_image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  executor_image      = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  chains = [
    { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x1111111111111111111111111111111111111111" },
  ]
  operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa", bls_key = "bls" }
  model         = { name = "falcon-7b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0" }
  driver        = { version = "550.54.15", image = "ghcr.io/gantry-dev/gpu-driver" }
}

run "defaults" {
  command = plan

  assert {
    condition     = gantry_performer.gpu.name == "staging-gpu" && gantry_performer.tee.name == "staging-tee" && gantry_executor.this.name == "staging" && gantry_workspace.chat.name == "staging-chat" && gantry_package_set.drivers.name == "staging-drivers"
    error_message = "object names: every name is <name> with a suffix: <name>-gpu, <name>-tee, <name>, <name>-chat, <name>-drivers."
  }
  assert {
    condition     = alltrue([for ns in [gantry_performer.gpu.namespace, gantry_performer.tee.namespace, gantry_executor.this.namespace, gantry_workspace.chat.namespace] : ns == "gantry-staging"])
    error_message = "every namespaced object goes in var.namespace."
  }
  assert {
    condition     = gantry_performer.gpu.hardware_requirements.gpu_count == 1 && gantry_performer.gpu.hardware_requirements.gpu_type == null && gantry_performer.gpu.hardware_requirements.tee_required == null
    error_message = "gpu performer by default: 1 GPU of any product (gpu_type null), no TEE; got ${jsonencode(gantry_performer.gpu.hardware_requirements)}."
  }
  assert {
    condition     = gantry_performer.tee.hardware_requirements.tee_required == true && gantry_performer.tee.hardware_requirements.tee_type == "tdx" && gantry_performer.tee.hardware_requirements.gpu_count == null
    error_message = "tee performer by default: a TDX TEE and no GPU; got ${jsonencode(gantry_performer.tee.hardware_requirements)}."
  }
  assert {
    condition     = gantry_workspace.chat.resource.count == 1 && gantry_workspace.chat.resource.gpu_count == 1 && gantry_workspace.chat.resource.gpu_product == null
    error_message = "workspace by default: one replica with 1 GPU of any product; got ${jsonencode(gantry_workspace.chat.resource)}."
  }
  assert {
    condition     = gantry_package_set.drivers.node_selector == tomap({ "nvidia.com/gpu.present" = "true" })
    error_message = "the driver set selects the GPU nodes (nvidia.com/gpu.present=true) by default; got ${jsonencode(gantry_package_set.drivers.node_selector)}."
  }
  assert {
    condition = alltrue([for t in [gantry_performer.gpu.timeouts, gantry_performer.tee.timeouts, gantry_executor.this.timeouts, gantry_workspace.chat.timeouts] :
    t.create == "10m" && t.update == "10m" && t.delete == null])
    error_message = "performers, executor and workspace: create and update timeouts 10m by default, delete the provider's default."
  }
  assert {
    condition     = gantry_package_set.drivers.timeouts.create == "10m" && gantry_package_set.drivers.timeouts.update == "10m" && gantry_package_set.drivers.timeouts.delete == "10m"
    error_message = "the driver set: create, update and delete timeouts 10m by default (its delete waits for the uninstall)."
  }
  assert {
    condition     = alltrue([for l in [gantry_performer.gpu.labels, gantry_performer.tee.labels, gantry_executor.this.labels, gantry_workspace.chat.labels] : length(l) == 0])
    error_message = "no labels by default."
  }
}

# Every optional variable set: labels, GPU product and TEE type as examples/stacks/gpu-stack sets
# them for staging, plus a second chain, two-GPU performer and workspace, a node selector of the
# driver set's own and a timeout.
run "stack_arguments" {
  command = plan

  variables {
    labels   = { "app.kubernetes.io/part-of" = "gpu-stack", "app.kubernetes.io/instance" = "staging" }
    gpu      = { count = 2, product = "NVIDIA-A100-SXM4-80GB" }
    tee_type = "sev-snp"
    chains = [
      { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x1111111111111111111111111111111111111111" },
      { name = "base", chain_id = 8453, rpc_url = "wss://base.example.com", task_mailbox_address = "0x2222222222222222222222222222222222222222" },
    ]
    model   = { name = "falcon-40b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_count = 2, gpu_product = "NVIDIA-H100-80GB-HBM3" }
    driver  = { version = "550.54.15", image = "ghcr.io/gantry-dev/gpu-driver", node_selector = { "gantry.dev/node-pool" = "gpu" } }
    timeout = "30m"
  }

  assert {
    condition = alltrue([for l in [gantry_performer.gpu.labels, gantry_performer.tee.labels, gantry_executor.this.labels, gantry_workspace.chat.labels] :
    l == tomap({ "app.kubernetes.io/part-of" = "gpu-stack", "app.kubernetes.io/instance" = "staging" })])
    error_message = "var.labels goes on every namespaced object."
  }
  assert {
    condition     = gantry_package_set.drivers.labels == null
    error_message = "the driver set is cluster-scoped: var.labels (for namespaced objects) is not put on it."
  }
  assert {
    condition     = gantry_performer.gpu.image == var.performer_image && gantry_performer.tee.image == var.performer_image && gantry_executor.this.image == var.executor_image
    error_message = "performer_image goes on both performers, executor_image on the executor."
  }
  assert {
    condition     = gantry_performer.gpu.hardware_requirements.gpu_count == 2 && gantry_performer.gpu.hardware_requirements.gpu_type == "NVIDIA-A100-SXM4-80GB"
    error_message = "gpu performer: gpu.count and gpu.product; got ${jsonencode(gantry_performer.gpu.hardware_requirements)}."
  }
  assert {
    condition     = gantry_performer.tee.hardware_requirements.tee_type == "sev-snp" && gantry_performer.tee.hardware_requirements.tee_required == true
    error_message = "tee performer: tee_type; got ${jsonencode(gantry_performer.tee.hardware_requirements)}."
  }
  assert {
    condition     = gantry_executor.this.performer_names == tolist(["staging-gpu", "staging-tee"])
    error_message = "the executor uses both performers of the stack, by name; got ${jsonencode(gantry_executor.this.performer_names)}."
  }
  assert {
    condition     = gantry_executor.this.aggregator_endpoint == "aggregator.avs.svc:9010" && length(gantry_executor.this.chains) == 2 && gantry_executor.this.chains[1].name == "base" && gantry_executor.this.chains[1].chain_id == 8453 && gantry_executor.this.chains[1].rpc_url == "wss://base.example.com"
    error_message = "the executor gets the aggregator endpoint and every chain, in order; got ${jsonencode(gantry_executor.this.chains)}."
  }
  assert {
    condition     = gantry_executor.this.operator_keys.secret_name == "operator-keys" && gantry_executor.this.operator_keys.ecdsa_key == "ecdsa" && gantry_executor.this.operator_keys.bls_key == "bls"
    error_message = "the executor's operator keys are the Secret reference, as given."
  }
  assert {
    condition     = gantry_executor.this.operator_keys.ecdsa_private_key_wo == null && gantry_executor.this.operator_keys.bls_private_key_wo == null
    error_message = "the module never passes key material (write-only keys) to the executor."
  }
  assert {
    condition     = gantry_workspace.chat.resource.gpu_count == 2 && gantry_workspace.chat.resource.gpu_product == "NVIDIA-H100-80GB-HBM3" && gantry_workspace.chat.inference.model == "falcon-40b-instruct" && gantry_workspace.chat.inference.image == "ghcr.io/gantry-dev/hello-model:1.0.0"
    error_message = "workspace: the model's name, image, GPUs and GPU product; got ${jsonencode(gantry_workspace.chat.resource)}."
  }
  assert {
    condition     = gantry_package_set.drivers.node_selector == tomap({ "gantry.dev/node-pool" = "gpu" })
    error_message = "the driver set uses driver.node_selector when given."
  }
  assert {
    condition     = length(gantry_package_set.drivers.packages) == 1 && gantry_package_set.drivers.packages[0].name == "gpu-driver" && gantry_package_set.drivers.packages[0].version == "550.54.15" && gantry_package_set.drivers.packages[0].image == "ghcr.io/gantry-dev/gpu-driver"
    error_message = "the driver set has one package, gpu-driver, at driver.version from driver.image."
  }
  assert {
    condition     = gantry_package_set.drivers.packages[0].config == tomap({ "driver.conf" = "version=550.54.15" })
    error_message = "the driver package's config file names the driver version; got ${jsonencode(gantry_package_set.drivers.packages[0].config)}."
  }
  assert {
    condition     = gantry_package_set.drivers.interruption_budget.count == 1 && length(gantry_package_set.drivers.additional_tolerations) == 1 && gantry_package_set.drivers.additional_tolerations[0].key == "nvidia.com/gpu" && gantry_package_set.drivers.additional_tolerations[0].operator == "Exists" && gantry_package_set.drivers.additional_tolerations[0].effect == "NoSchedule"
    error_message = "the driver set interrupts one node at a time and tolerates the GPU nodes' nvidia.com/gpu taint."
  }
  assert {
    condition = alltrue([for t in [gantry_performer.gpu.timeouts, gantry_performer.tee.timeouts, gantry_executor.this.timeouts, gantry_workspace.chat.timeouts, gantry_package_set.drivers.timeouts] :
    t.create == "30m" && t.update == "30m"]) && gantry_package_set.drivers.timeouts.delete == "30m"
    error_message = "var.timeout is every resource's create and update timeout, and the driver set's delete timeout."
  }
}

# Boundaries each validation accepts: a 20-character name, 8 GPUs, a preset at exactly its own
# GPU count, a model that is not a preset (preset_sizing fails on it: the validation passes),
# max_rebooted_percent 0.
run "accepts_boundary_values" {
  command = plan

  variables {
    name                 = "gpu-stack-0123456789"
    gpu                  = { count = 8 }
    model                = { name = "falcon-40b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_count = 2 }
    max_rebooted_percent = 0
  }

  assert {
    condition     = gantry_package_set.drivers.name == "gpu-stack-0123456789-drivers" && gantry_performer.gpu.hardware_requirements.gpu_count == 8
    error_message = "a 20-character name and 8 GPUs are accepted."
  }
}

run "accepts_a_model_that_is_not_a_preset" {
  command = plan

  variables {
    model = { name = "my-finetuned-model", image = "ghcr.io/example/my-finetuned-model:1", gpu_count = 1 }
  }

  assert {
    condition     = gantry_workspace.chat.inference.model == "my-finetuned-model"
    error_message = "a model that is not in the preset catalog passes the preset validation."
  }
}

# Each validation rejects a bad value (one run per value: a run expects its listed failures and
# no others).

run "rejects_name_with_upper_case" {
  command = plan
  variables { name = "Staging" }
  expect_failures = [var.name]
}

run "rejects_name_of_21_characters" {
  command = plan
  variables { name = "gpu-stack-0123456789a" }
  expect_failures = [var.name]
}

run "rejects_name_ending_with_a_dash" {
  command = plan
  variables { name = "staging-" }
  expect_failures = [var.name]
}

run "rejects_namespace_that_is_not_a_dns_label" {
  command = plan
  variables { namespace = "Gantry_Staging" }
  expect_failures = [var.namespace]
}

run "rejects_empty_performer_image" {
  command = plan
  variables { performer_image = "" }
  expect_failures = [var.performer_image]
}

run "rejects_zero_gpus" {
  command = plan
  variables { gpu = { count = 0 } }
  expect_failures = [var.gpu]
}

run "rejects_nine_gpus" {
  command = plan
  variables { gpu = { count = 9 } }
  expect_failures = [var.gpu]
}

run "rejects_a_fraction_of_a_gpu" {
  command = plan
  variables { gpu = { count = 1.5 } }
  expect_failures = [var.gpu]
}

run "rejects_unknown_tee_type" {
  command = plan
  variables { tee_type = "sev" }
  expect_failures = [var.tee_type]
}

run "rejects_aggregator_endpoint_without_port" {
  command = plan
  variables { aggregator_endpoint = "aggregator.avs.svc" }
  expect_failures = [var.aggregator_endpoint]
}

run "rejects_aggregator_endpoint_with_scheme" {
  command = plan
  variables { aggregator_endpoint = "grpc://aggregator.avs.svc:9010" }
  expect_failures = [var.aggregator_endpoint]
}

run "rejects_no_chains" {
  command = plan
  variables { chains = [] }
  expect_failures = [var.chains]
}

run "rejects_short_task_mailbox_address" {
  command = plan
  variables {
    chains = [
      { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x111111111111111111111111111111111111111" },
    ]
  }
  expect_failures = [var.chains]
}

run "rejects_zero_model_gpus" {
  command = plan
  variables { model = { name = "falcon-7b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_count = 0 } }
  expect_failures = [var.model]
}

run "rejects_nine_model_gpus" {
  command = plan
  variables { model = { name = "falcon-7b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_count = 9 } }
  expect_failures = [var.model]
}

# Without the whole-number check in var.model's validation, this failed at the workspace's own
# validation (resource.gpu_count, inside the module) instead of at the module's input.
run "rejects_a_fraction_of_a_model_gpu" {
  command = plan
  variables { model = { name = "falcon-7b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_count = 1.5 } }
  expect_failures = [var.model]
}

# falcon-40b-instruct needs 2 GPUs (provider::gantry::preset_sizing, from the provider's
# catalog); 1 is within 1-8, so only the preset validation can fail here.
run "rejects_fewer_gpus_than_the_preset_needs" {
  command = plan
  variables { model = { name = "falcon-40b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_count = 1 } }
  expect_failures = [var.model]
}

run "rejects_driver_version_that_is_not_semantic" {
  command = plan
  variables { driver = { version = "550.54", image = "ghcr.io/gantry-dev/gpu-driver" } }
  expect_failures = [var.driver]
}

run "rejects_driver_version_with_v_prefix" {
  command = plan
  variables { driver = { version = "v550.54.15", image = "ghcr.io/gantry-dev/gpu-driver" } }
  expect_failures = [var.driver]
}

run "rejects_max_rebooted_percent_over_100" {
  command = plan
  variables { max_rebooted_percent = 101 }
  expect_failures = [var.max_rebooted_percent]
}

run "rejects_negative_max_rebooted_percent" {
  command = plan
  variables { max_rebooted_percent = -1 }
  expect_failures = [var.max_rebooted_percent]
}
