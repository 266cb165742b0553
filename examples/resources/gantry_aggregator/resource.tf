# A Hourglass aggregator for one AVS on an L1 and an L2, as Hourglass's Helm chart runs it: a
# StatefulSet of one pod, a headless Service on the management gRPC port 9000 and a Secret
# holding config.yaml. The operator key stays in the Secret "aggregator-keys" (created
# outside Terraform): only its name and key are referenced here, never the key material.
resource "gantry_aggregator" "avs" {
  name             = "avs"
  namespace        = "avs"
  image            = "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2"
  operator_address = "0x6B58f6762689DF33fe8fa3FC40Fb5a3089D3a8cc"
  l1_chain_id      = 11155111

  chains = [
    { name = "ethereum", chain_id = 11155111, rpc_url = "https://sepolia.example.com", poll_interval_seconds = 10 },
    { name = "base", chain_id = 84532, rpc_url = "https://base-sepolia.example.com" },
  ]

  avss = [{
    address   = "0xce2ac75be2e0951f1f7b288c7a6a9bfb6c331dc4"
    chain_ids = [84532]
  }]

  operator_keys = {
    secret_name               = "aggregator-keys"
    ecdsa_key                 = "ecdsa-private-key"
    bls_keystore_key          = "bls-keystore.json"
    bls_keystore_password_key = "bls-keystore-password"
  }

  resources = {
    requests = { cpu = "200m", memory = "128Mi" }
    limits   = { cpu = "800m", memory = "1048Mi" }
  }

  # Keep the task store (Hourglass's BadgerDB) on a volume across restarts.
  persistence = {
    size = "10Gi"
  }
}

# Executors reach the aggregator through its headless Service.
output "aggregator_endpoint" {
  value = gantry_aggregator.avs.management_endpoint
}
