#!/bin/bash
# build-rev.sh REV OUT: builds the magnetar binary of commit REV into OUT (the release
# build, as `make build` does), in a throwaway worktree, for an A/B run:
#   bench/scripts/build-rev.sh aadb3e9 bin/magnetar-before
#   make bench-compare BENCH_FLAGS='-peer magnetar -peer-bin bin/magnetar-before'
set -euo pipefail
REV=$1; OUT=$2
ROOT=$(git rev-parse --show-toplevel)
case $OUT in /*) ;; *) OUT=$ROOT/$OUT ;; esac
TMP=$(mktemp -d /tmp/magnetar-build-rev.XXXXXX)
trap 'git -C "$ROOT" worktree remove --force "$TMP" >/dev/null 2>&1 || rm -rf "$TMP"' EXIT
git -C "$ROOT" worktree add --detach "$TMP" "$REV" >/dev/null
mkdir -p "$(dirname "$OUT")"
(cd "$TMP" && CGO_ENABLED=0 go build -tags pebblegozstd -trimpath \
	-ldflags "-s -w -X github.com/magnetar-io/magnetar/internal/cli.Version=$(git -C "$TMP" describe --tags --always)" \
	-o "$OUT" ./cmd/magnetar)
echo "built $REV -> $OUT"
