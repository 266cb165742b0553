package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// NewWorkspaceDataSource returns the gantry_workspace data source: an existing Workspace read by
// name and namespace, with every attribute of the gantry_workspace resource, computed (see data_sources.go).
func NewWorkspaceDataSource() datasource.DataSource {
	return &kindDataSource[workspaceModelV0]{typeSuffix: "workspace", spec: wait.Workspace, namespaced: true, res: &workspaceResource{}, flatten: flattenWorkspaceSized}
}
