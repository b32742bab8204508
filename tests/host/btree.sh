#!/bin/bash
# Host: the btree against a reference model (ASan/UBSan, several seeds).
exec make -s -C "$DMB_TOP/dm-bcache/tests" check
