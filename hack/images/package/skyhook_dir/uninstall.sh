#!/bin/sh
# Step uninstall of the test-package image: see lib.sh.
. "${0%/*}/lib.sh"
step uninstall "$@"
