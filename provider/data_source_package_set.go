package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// NewPackageSetDataSource returns the gantry_package_set data source: an existing PackageSet read by
// name (PackageSets are cluster-scoped), with every attribute of the gantry_package_set resource, computed (see data_sources.go).
func NewPackageSetDataSource() datasource.DataSource {
	return &kindDataSource[packageSetModel]{typeSuffix: "package_set", spec: wait.PackageSet, namespaced: false, res: &packageSetResource{}, flatten: flattenPackageSet}
}
