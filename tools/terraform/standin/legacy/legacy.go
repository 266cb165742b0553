// Package legacy stands in for Terraform's nested module of that name, which the module
// proxy's zip of github.com/hashicorp/terraform leaves out. Nothing in the CLI imports it.
package legacy
