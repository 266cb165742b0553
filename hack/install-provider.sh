#!/usr/bin/env bash
# hack/install-provider.sh VERSION — put bin/terraform-provider-gantry into a local filesystem
# mirror (.cache/plugins) and write a Terraform CLI config (.cache/terraformrc) that installs
# registry.terraform.io/gantry-dev/gantry from it and everything else as usual, so
# `terraform init` works offline. Use it with TF_CLI_CONFIG_FILE=.cache/terraformrc.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
version=${1:-0.1.0}
platform="$(go env GOOS)_$(go env GOARCH)"
dir="$CACHE/plugins/registry.terraform.io/gantry-dev/gantry/$version/$platform"
mkdir -p "$dir"
cp "$BIN/terraform-provider-gantry" "$dir/terraform-provider-gantry_v$version"
cat >"$CACHE/terraformrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$CACHE/plugins"
    include = ["registry.terraform.io/gantry-dev/gantry"]
  }
  direct {
    exclude = ["registry.terraform.io/gantry-dev/gantry"]
  }
}
RC
echo "provider $version installed in $CACHE/plugins (TF_CLI_CONFIG_FILE=$CACHE/terraformrc)"
