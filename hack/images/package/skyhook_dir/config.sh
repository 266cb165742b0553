#!/bin/sh
# Step config of the test-package image: see lib.sh.
. "${0%/*}/lib.sh"
step config "$@"
