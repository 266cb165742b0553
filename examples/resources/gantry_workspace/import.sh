#!/bin/sh
terraform import gantry_workspace.chat default/chat
