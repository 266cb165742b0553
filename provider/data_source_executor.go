package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// NewExecutorDataSource returns the gantry_executor data source: an existing Executor read by
// name and namespace, with every attribute of the gantry_executor resource, computed (see data_sources.go).
func NewExecutorDataSource() datasource.DataSource {
	return &kindDataSource[executorModelV0]{typeSuffix: "executor", spec: wait.Executor, namespaced: true, res: &executorResource{}, flatten: flattenExecutor}
}
