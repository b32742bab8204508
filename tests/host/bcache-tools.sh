#!/bin/bash
# Host: the tools' unit tests on sparse files.
exec make -s -C "$DMB_TOP/bcache-tools" check
