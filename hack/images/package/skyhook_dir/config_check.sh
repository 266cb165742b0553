#!/bin/sh
# Step config-check of the test-package image: see lib.sh.
. "${0%/*}/lib.sh"
step config-check "$@"
