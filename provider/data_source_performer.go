package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// NewPerformerDataSource returns the gantry_performer data source: an existing Performer read by
// name and namespace, with every attribute of the gantry_performer resource, computed (see data_sources.go).
func NewPerformerDataSource() datasource.DataSource {
	return &kindDataSource[performerModelV0]{typeSuffix: "performer", spec: wait.Performer, namespaced: true, res: &performerResource{}, flatten: flattenPerformer}
}
