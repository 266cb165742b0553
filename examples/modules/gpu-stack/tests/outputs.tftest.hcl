# Plan-only tests of the GPU-stack module's outputs and of the driver set's postcondition
# (max_rebooted_percent against the plan's rollout_preview), with a mocked gantry provider: no
# cluster. The outputs are the resources' computed attributes; each resource gets mocked values
# of its own (a performer Creating, nodes and endpoints with the resource's name in them), so a
# run fails if an output takes the wrong attribute or the wrong resource's.
#
# Two copies of this file, outputs.tftest.hcl (Terraform) and outputs.tofutest.hcl (OpenTofu),
# identical but for the `override_during = plan` lines: Terraform (1.11+) gives mocked values to
# computed attributes at apply only, unless the mock or override says override_during = plan,
# and a run with command = plan then cannot evaluate its assertions (the values are unknown);
# OpenTofu (1.12) uses mocked and overridden values at plan already and rejects the argument.
# Where both files exist OpenTofu reads the .tofutest.hcl one and ignores the other; Terraform
# never reads .tofutest.hcl. hack/module-test.sh fails when the two differ in anything else
# (whitespace aside). To regenerate the OpenTofu copy from this one:
#   sed '/^ *override_during *=/d' outputs.tftest.hcl >outputs.tofutest.hcl && tofu fmt outputs.tofutest.hcl
#
# OpenTofu wants an overridden object attribute whole (every attribute of rollout_preview);
# Terraform does not accept null for one (an object cannot be overridden with "no preview").

mock_provider "gantry" {
  override_during = plan
}

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

# What the provider reports once each object reached its state (the tee performer still
# Creating, to tell the two performers apart in the summaries). The driver set's values are in
# each run: OpenTofu warns when a run overrides an address the file overrides too.
override_resource {
  target          = gantry_performer.gpu
  override_during = plan
  values = {
    phase         = "Running"
    grpc_endpoint = "performer-staging-gpu.gantry-staging.svc.cluster.local:9090"
    node_name     = "gantry-gpu-0"
  }
}

override_resource {
  target          = gantry_performer.tee
  override_during = plan
  values = {
    phase         = "Creating"
    grpc_endpoint = "performer-staging-tee.gantry-staging.svc.cluster.local:9090"
    node_name     = "gantry-tee-tdx-0"
  }
}

override_resource {
  target          = gantry_executor.this
  override_during = plan
  values = {
    phase            = "Running"
    current_revision = "5d9f7c6b8"
    performer_endpoints = {
      "staging-gpu" = "performer-staging-gpu.gantry-staging.svc.cluster.local:9090"
      "staging-tee" = "performer-staging-tee.gantry-staging.svc.cluster.local:9090"
    }
  }
}

override_resource {
  target          = gantry_workspace.chat
  override_during = plan
  values = {
    state        = "Ready"
    endpoint     = "workspace-staging-chat.gantry-staging.svc.cluster.local:80"
    worker_nodes = ["gantry-gpu-1"]
  }
}

run "outputs" {
  command = plan

  override_resource {
    target          = gantry_package_set.drivers
    override_during = plan
    values = {
      status         = "complete"
      complete_nodes = "3/3"
      # A driver change with no interrupt: nothing cordoned, drained or rebooted.
      rollout_preview = { selected_nodes = 3, rebooted = 0, cordoned = 0, drained = 0, interrupts = {}, nodes = 3, waves = 3, max_wave_size = 1, first_wave = ["gantry-gpu-0"], completes = true, constraints = [] }
    }
  }

  assert {
    condition = output.performer_endpoints == {
      gpu = "performer-staging-gpu.gantry-staging.svc.cluster.local:9090"
      tee = "performer-staging-tee.gantry-staging.svc.cluster.local:9090"
    }
    error_message = "performer_endpoints: each performer's grpc_endpoint; got ${jsonencode(output.performer_endpoints)}."
  }
  assert {
    condition     = output.performer_nodes == { gpu = "gantry-gpu-0", tee = "gantry-tee-tdx-0" }
    error_message = "performer_nodes: each performer's node_name; got ${jsonencode(output.performer_nodes)}."
  }
  assert {
    condition     = output.executor.phase == "Running" && output.executor.revision == "5d9f7c6b8"
    error_message = "executor: the executor's phase and current_revision; got ${jsonencode(output.executor)}."
  }
  assert {
    condition = output.executor.performer_endpoints == tomap({
      "staging-gpu" = "performer-staging-gpu.gantry-staging.svc.cluster.local:9090"
      "staging-tee" = "performer-staging-tee.gantry-staging.svc.cluster.local:9090"
    })
    error_message = "executor.performer_endpoints: the endpoints the executor was configured with; got ${jsonencode(output.executor.performer_endpoints)}."
  }
  assert {
    condition     = output.workspace_endpoint == "workspace-staging-chat.gantry-staging.svc.cluster.local:80"
    error_message = "workspace_endpoint: the workspace's endpoint; got ${jsonencode(output.workspace_endpoint)}."
  }
  assert {
    condition     = output.workspace_nodes == tolist(["gantry-gpu-1"])
    error_message = "workspace_nodes: the workspace's worker_nodes; got ${jsonencode(output.workspace_nodes)}."
  }
  assert {
    condition     = output.drivers == { status = "complete", complete_nodes = "3/3" }
    error_message = "drivers: the driver set's status and complete_nodes; got ${jsonencode(output.drivers)}."
  }
  assert {
    condition = output.summaries == {
      performer_gpu = "Running"
      performer_tee = "Creating"
      executor      = "Running"
      workspace     = "Ready"
      drivers       = "complete"
    }
    error_message = "summaries: each resource's summary attribute (performers' and executor's phase, workspace state, driver set status); got ${jsonencode(output.summaries)}."
  }
}

# max_rebooted_percent 50 on 3 selected nodes allows 1 reboot: 2 fail the plan.
run "postcondition_fails_a_plan_that_reboots_too_many_nodes" {
  command = plan

  variables {
    max_rebooted_percent = 50
  }

  override_resource {
    target          = gantry_package_set.drivers
    override_during = plan
    values = {
      rollout_preview = { selected_nodes = 3, rebooted = 2, cordoned = 2, drained = 2, interrupts = { reboot = 2 }, nodes = 3, waves = 3, max_wave_size = 1, first_wave = ["gantry-gpu-0"], completes = true, constraints = [] }
    }
  }

  expect_failures = [gantry_package_set.drivers]
}

# The limit itself passes: 2 of 4 nodes is 50%.
run "postcondition_allows_exactly_max_rebooted_percent" {
  command = plan

  variables {
    max_rebooted_percent = 50
  }

  override_resource {
    target          = gantry_package_set.drivers
    override_during = plan
    values = {
      rollout_preview = { selected_nodes = 4, rebooted = 2, cordoned = 2, drained = 2, interrupts = { reboot = 2 }, nodes = 4, waves = 4, max_wave_size = 1, first_wave = ["gantry-gpu-0"], completes = true, constraints = [] }
    }
  }

  assert {
    condition     = gantry_package_set.drivers.rollout_preview.rebooted == 2 && gantry_package_set.drivers.rollout_preview.selected_nodes == 4
    error_message = "the run's preview (2 of 4 nodes rebooted) is the one the postcondition saw."
  }
}

# The default (100) lets a change reboot every selected node.
run "postcondition_default_allows_rebooting_every_node" {
  command = plan

  override_resource {
    target          = gantry_package_set.drivers
    override_during = plan
    values = {
      rollout_preview = { selected_nodes = 3, rebooted = 3, cordoned = 3, drained = 3, interrupts = { reboot = 3 }, nodes = 3, waves = 3, max_wave_size = 1, first_wave = ["gantry-gpu-0"], completes = true, constraints = [] }
    }
  }

  assert {
    condition     = gantry_package_set.drivers.rollout_preview.rebooted == 3
    error_message = "the run's preview (3 of 3 nodes rebooted) is the one the postcondition saw."
  }
}

# 0% forbids any reboot; a change that reboots nothing still passes.
run "postcondition_zero_percent_allows_a_change_without_reboots" {
  command = plan

  variables {
    max_rebooted_percent = 0
  }

  override_resource {
    target          = gantry_package_set.drivers
    override_during = plan
    values = {
      status         = "complete"
      complete_nodes = "3/3"
      # A driver change with no interrupt: nothing cordoned, drained or rebooted.
      rollout_preview = { selected_nodes = 3, rebooted = 0, cordoned = 0, drained = 0, interrupts = {}, nodes = 3, waves = 3, max_wave_size = 1, first_wave = ["gantry-gpu-0"], completes = true, constraints = [] }
    }
  }

  assert {
    condition     = gantry_package_set.drivers.rollout_preview.rebooted == 0
    error_message = "the run's preview reboots nothing."
  }
}

run "postcondition_zero_percent_fails_a_single_reboot" {
  command = plan

  variables {
    max_rebooted_percent = 0
  }

  override_resource {
    target          = gantry_package_set.drivers
    override_during = plan
    values = {
      rollout_preview = { selected_nodes = 3, rebooted = 1, cordoned = 1, drained = 1, interrupts = { reboot = 1 }, nodes = 1, waves = 1, max_wave_size = 1, first_wave = ["gantry-gpu-0"], completes = true, constraints = [] }
    }
  }

  expect_failures = [gantry_package_set.drivers]
}
