#!/bin/sh
# Claude Code's hook protocol: the call as JSON on stdin; exit 2 blocks it and stderr tells the model why
if grep -qiE '"(api[_-]?key|password|secret)"'; then
  echo "review-kit: arguments that name a secret are not sent to tools" >&2
  exit 2
fi
exit 0
