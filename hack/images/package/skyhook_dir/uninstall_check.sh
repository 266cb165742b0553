#!/bin/sh
# Step uninstall-check of the test-package image: see lib.sh.
. "${0%/*}/lib.sh"
step uninstall-check "$@"
