# A cloud GPU instance type from the provider's catalog (no cluster needed).
output "h100" {
  value = provider::gantry::instance_type("Standard_NC80adis_H100_v5")
  # {
  #   name = "Standard_NC80adis_H100_v5", cloud = "azure", gpu_count = 2,
  #   gpu_product = "NVIDIA-H100-NVL", gpu_memory = "94Gi", gpu_memory_gib = 94,
  #   total_gpu_memory_gib = 188,
  # }
}

# Refuse, at plan, an instance type whose GPUs together hold less memory than the preset needs
# (the reconciler itself does not check GPU memory).
variable "instance_type" {
  type    = string
  default = "Standard_NC24ads_A100_v4"
  validation {
    condition = (
      provider::gantry::instance_type(var.instance_type).total_gpu_memory_gib >=
      provider::gantry::preset_sizing("phi-3-medium-4k-instruct").gpu_memory_gib
    )
    error_message = "The instance type's GPUs hold less memory than phi-3-medium-4k-instruct needs."
  }
}
