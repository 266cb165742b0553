# An inference workspace: 2 replicas, 1 H100 each (waits until state = "Ready").
resource "gantry_workspace" "chat" {
  name = "chat"
  resource = {
    count       = 2
    gpu_count   = 1
    gpu_product = "NVIDIA-H100-80GB-HBM3"
  }
  inference = {
    model = "falcon-7b-instruct"
    image = "ghcr.io/gantry-dev/hello-model:1.0.0"
  }
}

# A LoRA tuning run (waits until state = "Succeeded"; Failed fails the apply).
resource "gantry_workspace" "lora" {
  name     = "lora"
  resource = { gpu_count = 1 }
  tuning = {
    method       = "lora"
    base_model   = "phi-3-mini-4k-instruct"
    image        = "ghcr.io/gantry-dev/hello-tuner:1.0.0"
    input_urls   = ["https://example.com/data.parquet"]
    output_image = "registry.example/adapters/phi:1"
  }
}
