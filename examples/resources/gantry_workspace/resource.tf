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

# A preset (KAITO preset names; the Model presets guide lists them): image, GPUs and serving
# arguments come from the catalog; any field set here wins. An Azure instance type picks the
# nodes (node.kubernetes.io/instance-type) and the GPUs per replica; label_selector_expressions
# (KAITO's labelSelector.matchExpressions) keep it to two zones and off spot nodes.
resource "gantry_workspace" "phi" {
  name = "phi-3"
  resource = {
    instance_type = "Standard_NC24ads_A100_v4"
    label_selector_expressions = [
      { key = "topology.kubernetes.io/zone", operator = "In", values = ["eastus-1", "eastus-2"] },
      { key = "kubernetes.azure.com/scalesetpriority", operator = "DoesNotExist" },
    ]
  }
  inference = {
    preset = "phi-3-mini-4k-instruct"
  }
}

# A gated model: its weights come from a gated Hugging Face repository, so the preset requires
# a model access Secret. The Secret "hf-token" (key HF_TOKEN) is created outside Terraform;
# only its name is here, and the reconciler checks it exists without reading the token.
resource "gantry_workspace" "llama" {
  name = "llama"
  resource = {
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
  }
  inference = {
    preset              = "llama-3.1-8b-instruct"
    model_access_secret = "hf-token"
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

# A two-node model (multi-node inference, as KAITO): falcon-40b-instruct needs 2 GPUs and each
# node of this pool has 1. The two replicas serve ONE model: a StatefulSet whose pod 0 leads
# (leader_address), each pod told GROUP_SIZE, RANK, POD_INDEX and LEADER_ADDRESS. As KAITO
# does, pod 0 starts a Ray head and then vLLM (--tensor-parallel-size=1
# --pipeline-parallel-size=2 --distributed-executor-backend=ray); the others join the head at
# the leader address. The apply waits for the whole group.
resource "gantry_workspace" "falcon_40b" {
  name = "falcon-40b"
  resource = {
    count       = 2
    gpu_count   = 1
    gpu_product = "NVIDIA-L4"
  }
  inference = {
    preset     = "falcon-40b-instruct"
    model_gpus = 2 # the preset's own; shown for clarity
  }
}

output "falcon_leader" {
  value = gantry_workspace.falcon_40b.leader_address
}

# Autoscaling that Terraform never fights (KAITO's asks: kaito-project/kaito #1380, #1659): a
# HorizontalPodAutoscaler the reconciler owns scales the replicas between 1 and 4 on vLLM's queue
# length (a per-pod custom metric, served by a Prometheus adapter). The reconciler sets the
# Deployment's replicas only when it creates it; the count the HPA sets is never taken back and
# never shows as a diff: it is read into current_replicas and desired_replicas. resource.count
# cannot be set beside autoscaling.
resource "gantry_workspace" "chat_autoscaled" {
  name = "chat-autoscaled"
  resource = {
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
  }
  inference = {
    preset = "phi-3-mini-4k-instruct"
  }
  autoscaling = {
    min_replicas = 1
    max_replicas = 4
    metric = {
      pods = { name = "vllm:num_requests_waiting", average_value = "5" }
    }
  }
}

# The same with KEDA (the autoscaler of kaito-project/kaito #1380): external = true makes no
# HorizontalPodAutoscaler and leaves the replicas to a ScaledObject whose scaleTargetRef is the
# Deployment workspace-<name> (see the Autoscaling workspaces guide for one).
resource "gantry_workspace" "chat_keda" {
  name = "chat-keda"
  resource = {
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
  }
  inference = {
    preset = "phi-3-mini-4k-instruct"
  }
  autoscaling = {
    min_replicas = 1
    max_replicas = 8
    external     = true
  }
}

output "chat_replicas" {
  value = {
    current = gantry_workspace.chat_autoscaled.current_replicas
    desired = gantry_workspace.chat_autoscaled.desired_replicas
  }
}

# KAITO's custom model (its inference.template, examples/custom-model-integration): a container
# named as in KAITO's pod template, and the in-memory emptyDir vLLM and accelerate want at
# /dev/shm (medium Memory, here bounded by size_limit).
resource "gantry_workspace" "custom_llm" {
  name = "custom-llm"
  resource = {
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
  }
  inference = {
    model          = "custom-llm"
    image          = "mcr.microsoft.com/aks/kaito/kaito-base:0.2.0"
    container_name = "custom-llm-container"
    port           = 5000
    command        = ["accelerate"]
    args = ["launch", "--num_processes", "1", "--num_machines", "1", "--gpu_ids", "all", "tfs/inference_api.py",
      "--pipeline", "text-generation", "--trust_remote_code", "--allow_remote_files",
    "--pretrained_model_name_or_path", "tiiuae/falcon-7b", "--torch_dtype", "float16"]
    readiness_probe = { http_path = "/health", initial_delay_seconds = 30 }
    liveness_probe  = { http_path = "/health", initial_delay_seconds = 600 }
    volumes = [
      { name = "dshm", mount_path = "/dev/shm", empty_dir = true, medium = "Memory", size_limit = "16Gi" },
    ]
  }
}

# KAITO's private tuning preset (examples/fine-tuning, accessMode: private with
# presetOptions.image): the tuning Job runs the private image and pulls it with acr-pull; the
# model access Secret hf-token (key HF_TOKEN) reaches the container as HF_TOKEN. The Secrets are
# created outside Terraform: only their names are here.
resource "gantry_workspace" "falcon_tuning" {
  name     = "tuning-falcon-7b"
  resource = { gpu_product = "NVIDIA-A100-SXM4-80GB" }
  tuning = {
    preset              = "falcon-7b"
    access_mode         = "private"
    image               = "aimodelsregistrytest.azurecr.io/kaito-falcon-7b:0.0.4"
    image_pull_secrets  = ["acr-pull"]
    model_access_secret = "hf-token"
    method              = "qlora"
    config              = "my-qlora-params"
    input_urls          = ["https://huggingface.co/datasets/philschmid/dolly-15k-oai-style/resolve/main/data/train-00000-of-00001-54e3756291ca09c6.parquet?download=true"]
    output_image        = "registry.example/adapters/falcon-7b-oai:0.0.1"
    output_push_secret  = "acr-push"
  }
}
