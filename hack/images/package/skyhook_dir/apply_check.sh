#!/bin/sh
# Step apply-check of the test-package image: see lib.sh.
. "${0%/*}/lib.sh"
step apply-check "$@"
