#!/bin/bash
# Host: the stale-read hunter itself notices dropped writes.
BUILD=$BUILD exec "$DMB_TOP/tests/tools/selftest.sh"
