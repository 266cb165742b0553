# A KAITO model preset's sizing, from the provider's preset catalog (no cluster needed).
output "falcon" {
  value = provider::gantry::preset_sizing("falcon-40b-instruct")
  # {
  #   name = "falcon-40b-instruct", model = "falcon-40b-instruct",
  #   image = "mcr.microsoft.com/aks/kaito/kaito-falcon-40b-instruct:0.1.1",
  #   gpu_count = 2, gpu_memory = "90Gi", gpu_memory_gib = 90, gpu_memory_per_gpu_gib = 45,
  #   tuning = false, gated = false,
  # }
}

# A module input checked at plan: only presets that fit one GPU, and a gated one needs a Secret.
variable "model" {
  type = object({
    preset              = string
    model_access_secret = optional(string)
  })
  default = { preset = "phi-3-mini-4k-instruct" }
  validation {
    condition     = provider::gantry::preset_sizing(var.model.preset).gpu_count == 1
    error_message = "This module runs single-GPU presets only."
  }
  validation {
    condition     = !provider::gantry::preset_sizing(var.model.preset).gated || var.model.model_access_secret != null
    error_message = "The preset's weights are gated on Hugging Face: set model_access_secret."
  }
}
