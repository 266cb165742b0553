package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// NewAggregatorDataSource returns the gantry_aggregator data source: an existing Aggregator read
// by name and namespace, with every attribute of the gantry_aggregator resource, computed (see data_sources.go).
func NewAggregatorDataSource() datasource.DataSource {
	return &kindDataSource[aggregatorModelV0]{typeSuffix: "aggregator", spec: wait.Aggregator, namespaced: true, res: &aggregatorResource{}, flatten: flattenAggregator}
}
