variable "name" {
  description = "Name of this stack: prefix of every object it creates (performers <name>-gpu and <name>-tee, executor <name>, workspace <name>-chat, package set <name>-drivers). Lower-case letters, digits and '-', starting with a letter, at most 20 characters."
  type        = string
  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,18}[a-z0-9])?$", var.name))
    error_message = "name must be a DNS-1035 label of at most 20 characters: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit."
  }
}

variable "namespace" {
  description = "Namespace of the performers, the executor and the workspace. It must exist and hold the operator key Secret (operator_keys.secret_name)."
  type        = string
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.namespace))
    error_message = "namespace must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)."
  }
}

variable "labels" {
  description = "Labels added to every namespaced object of the stack, e.g. { \"app.kubernetes.io/part-of\" = \"avs\" }."
  type        = map(string)
  default     = {}
}

variable "performer_image" {
  description = "Image of both performers (GPU and TEE), e.g. ghcr.io/layr-labs/hello-performer:v1.0.0."
  type        = string
  validation {
    condition     = length(var.performer_image) > 0
    error_message = "performer_image must not be empty."
  }
}

variable "gpu" {
  description = "GPUs of the GPU performer: count (1-8, one node's worth) and product (the nvidia.com/gpu.product node label, e.g. NVIDIA-A100-SXM4-80GB; null: any product)."
  type = object({
    count   = number
    product = optional(string)
  })
  default = { count = 1 }
  validation {
    condition     = var.gpu.count >= 1 && var.gpu.count <= 8 && floor(var.gpu.count) == var.gpu.count
    error_message = "gpu.count must be a whole number from 1 to 8."
  }
}

variable "tee_type" {
  description = "Confidential-computing technology of the TEE performer: sgx, sev-snp or tdx."
  type        = string
  default     = "tdx"
  validation {
    condition     = contains(["sgx", "sev-snp", "tdx"], var.tee_type)
    error_message = "tee_type must be one of sgx, sev-snp or tdx."
  }
}

variable "executor_image" {
  description = "Image of the Hourglass executor, e.g. ghcr.io/layr-labs/hourglass/executor:1.0.0."
  type        = string
}

variable "aggregator_endpoint" {
  description = "gRPC endpoint (host:port) of the aggregator the executor reports to."
  type        = string
  validation {
    condition     = can(regex("^[^:/]+:[0-9]{1,5}$", var.aggregator_endpoint))
    error_message = "aggregator_endpoint must be host:port, e.g. aggregator.avs.svc:9010."
  }
}

variable "chains" {
  description = "Chains the executor serves: name, chain_id, rpc_url (http(s) or ws(s)) and task_mailbox_address (0x + 40 hex digits)."
  type = list(object({
    name                 = string
    chain_id             = number
    rpc_url              = string
    task_mailbox_address = string
  }))
  validation {
    condition     = length(var.chains) > 0 && alltrue([for c in var.chains : can(regex("^0x[0-9a-fA-F]{40}$", c.task_mailbox_address))])
    error_message = "chains needs at least one chain, and each task_mailbox_address must be 0x followed by 40 hex digits."
  }
}

variable "operator_keys" {
  description = "Where the executor's operator keys are: the Secret secret_name in namespace and its keys ecdsa_key and bls_key. The key material stays in the Secret, never in Terraform state."
  type = object({
    secret_name = string
    ecdsa_key   = string
    bls_key     = string
  })
}

variable "model" {
  description = "Inference workspace: the model name (KAITO preset style, e.g. falcon-7b-instruct), its image, GPUs per replica and GPU product (null: any)."
  type = object({
    name        = string
    image       = string
    gpu_count   = optional(number, 1)
    gpu_product = optional(string)
  })
  validation {
    condition     = var.model.gpu_count >= 1 && var.model.gpu_count <= 8 && floor(var.model.gpu_count) == var.model.gpu_count
    error_message = "model.gpu_count must be a whole number from 1 to 8."
  }
  # A KAITO preset's own GPU count, from the provider's catalog at plan (no cluster): a model
  # that is not a preset passes.
  validation {
    condition     = try(provider::gantry::preset_sizing(var.model.name).gpu_count <= var.model.gpu_count, true)
    error_message = "model.gpu_count is below the GPUs the preset ${var.model.name} needs (provider::gantry::preset_sizing)."
  }
}

variable "driver" {
  description = "GPU driver package set: driver version (semantic version) and image, and the node labels that select the GPU nodes it is installed on."
  type = object({
    version       = string
    image         = string
    node_selector = optional(map(string), { "nvidia.com/gpu.present" = "true" })
  })
  validation {
    condition     = can(regex("^[0-9]+\\.[0-9]+\\.[0-9]+$", var.driver.version))
    error_message = "driver.version must be a semantic version such as 550.54.15."
  }
}

variable "max_rebooted_percent" {
  description = "The most GPU nodes, in percent of those the driver set selects, that one apply may reboot: a plan whose rollout preview reboots more fails (the driver set's postcondition)."
  type        = number
  default     = 100
  validation {
    condition     = var.max_rebooted_percent >= 0 && var.max_rebooted_percent <= 100
    error_message = "max_rebooted_percent must be between 0 and 100."
  }
}

variable "timeout" {
  description = "Create and update timeout of every resource of the stack, a duration such as 10m."
  type        = string
  default     = "10m"
}
