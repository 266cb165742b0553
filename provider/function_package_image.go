package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

var _ function.Function = (*packageImageFunction)(nil)

// NewPackageImageFunction is provider::gantry::package_image(image, version): the image a
// gantry_package_set package's stages run (packageset.ImageOf: Skyhook's image:version).
func NewPackageImageFunction() function.Function { return &packageImageFunction{} }

type packageImageFunction struct{}

// maxPackageImage and maxPackageVersion are the lengths gantry_package_set's packages[].image
// and packages[].version accept.
const (
	maxPackageImage   = 512
	maxPackageVersion = 64
)

func (f *packageImageFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "package_image"
}

func (f *packageImageFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The image a package's stages run: Skyhook's image:version",
		Description: "Returns the image the stages of a gantry_package_set package with this image and version run, as Skyhook's " +
			"operator runs a package (image:version): the version is the tag, so ghcr.io/acme/tuned at 1.2 runs " +
			"ghcr.io/acme/tuned:1.2; a tag written in image is replaced by the version (ghcr.io/acme/tuned:6.0 at 1.2 runs " +
			"ghcr.io/acme/tuned:1.2); a digest (@sha256:...) is kept as written; a registry port (localhost:5000/tuned) is not a " +
			"tag; OCI tags cannot contain +, so semver build metadata is tagged with _ as Helm does (1.2.3+build.5 runs " +
			":1.2.3_build.5). Errors name the argument: an empty image or one longer than 512 characters, a version that is not a " +
			"semantic version (1.2.3, 2.0.0-rc.1) or MAJOR.MINOR (1.2), as packages[].version takes it.",
		MarkdownDescription: "Returns the image the stages of a `gantry_package_set` package with this `image` and `version` run, " +
			"as Skyhook's operator runs a package (`image:version`):\n\n" +
			"- the version is the tag: `ghcr.io/acme/tuned` at `1.2` runs `ghcr.io/acme/tuned:1.2`;\n" +
			"- a tag written in `image` is replaced by the version: `ghcr.io/acme/tuned:6.0` at `1.2` runs " +
			"`ghcr.io/acme/tuned:1.2` (the resource warns at plan when they differ);\n" +
			"- a digest (`@sha256:...`) is kept as written; a registry port (`localhost:5000/tuned`) is not a tag;\n" +
			"- OCI tags cannot contain `+`, so semver build metadata is tagged with `_`, as Helm does: `1.2.3+build.5` runs " +
			"`ghcr.io/acme/tuned:1.2.3_build.5`.\n\n" +
			"Errors name the argument: an empty `image` or one longer than 512 characters, a `version` that is not a semantic " +
			"version (`1.2.3`, `2.0.0-rc.1`) or `MAJOR.MINOR` (`1.2`), as `packages[].version` takes it.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "image", Description: "The package's image (packages[].image), e.g. ghcr.io/acme/tuned.",
				MarkdownDescription: "The package's image (`packages[].image`), e.g. `ghcr.io/acme/tuned`."},
			function.StringParameter{Name: "version", Description: "The package's version (packages[].version), e.g. 1.2.3 or 1.2.",
				MarkdownDescription: "The package's version (`packages[].version`), e.g. `1.2.3` or `1.2`."},
		},
		Return: function.StringReturn{},
	}
}

func (f *packageImageFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var image, version string
	if resp.Error = req.Arguments.Get(ctx, &image, &version); resp.Error != nil {
		return
	}
	if image == "" || len(image) > maxPackageImage {
		resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("image must be 1-%d characters, got %d", maxPackageImage, len(image)))
		return
	}
	if len(version) > maxPackageVersion || !semverRe.MatchString(version) {
		resp.Error = function.NewArgumentFuncError(1, fmt.Sprintf("%q must be a semantic version such as 1.2.3 or 2.0.0-rc.1, or MAJOR.MINOR such as 1.2 (at most %d characters)", version, maxPackageVersion))
		return
	}
	resp.Error = resp.Result.Set(ctx, packageset.ImageOf(v1alpha1.Package{Image: image, Version: version}))
}
