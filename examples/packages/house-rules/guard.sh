#!/bin/sh
# before_tool_call hook: the call's JSON payload arrives on stdin. Exit 0 allows it; exit 1
# denies it, with stdout as the reason the model sees.
payload=$(cat)
case "$payload" in
  *'rm -rf /'*) echo "house rules: recursive deletes from the root are never run"; exit 1 ;;
esac
exit 0
