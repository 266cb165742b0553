# A local endpoint of a performer for the length of the run (Terraform 1.10 and later): a
# port on 127.0.0.1 forwarded to the performer's Ready pod, used by a smoke test.
resource "gantry_performer" "hello" {
  name      = "hello"
  namespace = "avs"
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}

ephemeral "gantry_port_forward" "hello" {
  performer = {
    name      = gantry_performer.hello.name
    namespace = gantry_performer.hello.namespace
  }
  # The performer's pod is known once the performer is applied: a run that creates or changes
  # the performer opens the forward during apply, after the performer is Running.
  pod_name = gantry_performer.hello.pod_name
}

# Runs once per performer change, through the forward (grpcurl on the machine running Terraform).
resource "terraform_data" "smoke_test" {
  triggers_replace = [gantry_performer.hello.id, gantry_performer.hello.image]
  provisioner "local-exec" {
    command = "grpcurl -plaintext ${ephemeral.gantry_port_forward.hello.local_address} list"
  }
}

# An existing inference workspace's OpenAI-compatible API: Open fails unless GET /v1/models
# answers 2xx through the forward; the answer is in check_response.
ephemeral "gantry_port_forward" "chat" {
  workspace  = { name = "chat", namespace = "default" }
  check_path = "/v1/models"
  local_port = 18000
}

resource "terraform_data" "chat_smoke_test" {
  provisioner "local-exec" {
    command = <<-EOT
      curl -fsS ${ephemeral.gantry_port_forward.chat.url}/v1/chat/completions \
        -H 'Content-Type: application/json' \
        -d '{"model":"falcon-7b-instruct","messages":[{"role":"user","content":"hello"}]}'
    EOT
  }
}
