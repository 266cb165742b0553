#!/bin/sh
# Step post-interrupt-check of the test-package image: see lib.sh.
. "${0%/*}/lib.sh"
step post-interrupt-check "$@"
