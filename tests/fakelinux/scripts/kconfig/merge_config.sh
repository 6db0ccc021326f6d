#!/bin/sh
# fakelinux merge_config.sh -m -O DIR BASE FRAGMENT...: append fragments.
while [ $# -gt 0 ]; do
	case "$1" in
	-m) shift ;;
	-O) out=$2; shift 2 ;;
	*) break ;;
	esac
done
base=$1; shift
cat "$@" >> "$base"
