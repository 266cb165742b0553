#!/bin/sh
# Step apply of the test-package image: see lib.sh.
. "${0%/*}/lib.sh"
step apply "$@"
