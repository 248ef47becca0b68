#!/usr/bin/env bash
# Builds the programs of one pinned Go module from the Go module proxy into .tools/NAME/, unless the last build there
# was made from the same pin: scripts/go/NAME/go.mod and go.sum (the module and every dependency, checksums
# included), its build.env (version, build tags, packages) and this script. Usage: scripts/go/build.sh NAME
# Go's own module and build caches (go env GOMODCACHE, GOCACHE: under ~/go and ~/.cache) are shared by every clone
# on the machine: another clone's set-up, or a changed pin, builds only what changed (seconds, not minutes), and
# the builds that run at the same time download each module once (Go locks both caches). They stay out of the
# clone, whose .tools/ a plain rm -rf must be able to remove (the module cache's files are read-only).
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1
module=scripts/go/$name
target=.tools/$name
stamp=$target/.built-from
version= tags= packages=
# shellcheck source=/dev/null
. "$module/build.env"
want=$(cat "$module/go.mod" "$module/go.sum" "$module/build.env" scripts/go/build.sh | sha256sum | cut -d' ' -f1)
have=
[ -f "$stamp" ] && read -r have <"$stamp"
[ "$have" = "$want" ] && exit 0

export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "setup: go is not on PATH (needed to build $name $version)" >&2; exit 1; }
# The go.mod's toolchain line is a minimum: building with the machine's own Go never downloads another one.
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
echo "setup: building $name $version from the Go module proxy ($(go env GOVERSION); a few minutes the first time)" >&2
# Without these the binaries call themselves version "" and Helm, amtool and our tests cannot tell what they are.
ldflags="-s -w -X github.com/prometheus/common/version.Version=$version"
ldflags+=" -X github.com/prometheus/common/version.Revision=v${version#v}"
ldflags+=" -X github.com/prometheus/common/version.Branch=module-proxy"
ldflags+=" -X github.com/prometheus/common/version.BuildUser=kafka-client-exporter-setup"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
log=$build/go-build.log
started=$(date +%s)
# shellcheck disable=SC2086 # packages is a list
if ! (cd "$module" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$build/bin/" $packages) >"$log" 2>&1; then
  cat "$log" >&2
  echo "setup: building $name $version failed (scripts/go/build.sh $name)" >&2
  exit 1
fi
# sed, not head: a program writing past the first line after head has left would die of SIGPIPE (pipefail).
for program in $packages; do
  printed=$("$build/bin/${program##*/}" --version 2>&1 | sed -n 1p)
  case "$printed" in
    *" version $version "*) ;;
    *) echo "setup: ${program##*/} built from $module says '$printed', not version $version" >&2; exit 1 ;;
  esac
done
# The old binaries go only once the new ones work (renamed away, not deleted first, so that a test starting one
# meanwhile finds either); the stamp last, so an interrupted build is done again.
mkdir -p "$(dirname "$target")"
rm -rf "$target.old"
[ ! -e "$target" ] || mv "$target" "$target.old"
mv "$build/bin" "$target"
rm -rf "$target.old"
echo "$want" >"$stamp"
echo "setup: built $name $version into $target in $(($(date +%s) - started)) s" >&2
