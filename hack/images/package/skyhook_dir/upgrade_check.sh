#!/bin/sh
# Step upgrade-check of the test-package image: see lib.sh.
. "${0%/*}/lib.sh"
step upgrade-check "$@"
