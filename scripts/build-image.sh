#!/usr/bin/env bash
# Builds the container image from the Dockerfile with Debian's buildah, without any container registry: the base
# is a Debian bookworm root file system that mmdebstrap makes from Debian's packages, imported as a local image
# and passed as the Dockerfile's PYTHON_IMAGE. The Dockerfile's own steps then run as they would under docker
# (apt for the JRE, pip for the wheels). Prints each image's name and size on two lines, the exporter's last.
#   bash scripts/build-image.sh            # both: localhost/kafka-client-exporter-inventory:<version> (the
#                                          # Dockerfile's `inventory` target) and localhost/kafka-client-exporter:<version>
#   bash scripts/build-image.sh exporter   # only the exporter (or: inventory)
# Installs buildah and mmdebstrap with apt-get when they are missing (needs root, like scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(inventory exporter)
for target in "${targets[@]}"; do
  case $target in
    exporter | inventory) ;;
    *) echo "build-image: unknown image '$target' (exporter, inventory)" >&2; exit 2 ;;
  esac
done

need_apt=()
command -v buildah >/dev/null || need_apt+=(buildah)
command -v mmdebstrap >/dev/null || need_apt+=(mmdebstrap)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "build-image: installing ${need_apt[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# The base: what python:3.11-slim-bookworm gives the Dockerfile (python 3.11, venv, `python` on PATH, CA
# certificates), with Debian's docs, man pages and translations left out as the slim images do.
suite=bookworm
packages=python3,python3-venv,python-is-python3,ca-certificates
excludes=('/usr/share/doc/*' '/usr/share/man/*' '/usr/share/info/*' '/usr/share/locale/*' '/usr/share/lintian/*')
base_key=$(printf '%s\n' "$suite" "$packages" "${excludes[@]}" | sha256sum | cut -c1-12)
base_image=localhost/kafka-client-exporter-base:$suite-$base_key
cache=build/image
if ! buildah inspect --type image "$base_image" >/dev/null 2>&1; then
  mkdir -p "$cache"
  rootfs=$cache/base-$suite-$base_key.tar
  if [ ! -s "$rootfs" ]; then
    echo "build-image: making the $suite base with mmdebstrap ($packages)" >&2
    # Bases made from an older package list are of no further use; an interrupted run leaves no partial file.
    rm -f "$cache"/base-*.tar
    trap 'rm -f "$rootfs.partial.tar"' EXIT
    dpkg_options=()
    for pattern in "${excludes[@]}"; do dpkg_options+=(--dpkgopt="path-exclude=$pattern"); done
    mmdebstrap --quiet --variant=minbase --include="$packages" "${dpkg_options[@]}" \
      --dpkgopt='path-include=/usr/share/doc/*/copyright' "$suite" "$rootfs.partial.tar"  # .tar: the format
    mv "$rootfs.partial.tar" "$rootfs"
    trap - EXIT
  fi
  container=$(buildah from scratch)
  trap 'buildah rm "$container" >/dev/null 2>&1 || true' EXIT
  buildah add --quiet "$container" "$rootfs" / >/dev/null
  buildah config --cmd /bin/bash "$container"
  buildah commit --quiet --rm "$container" "$base_image" >/dev/null
  trap - EXIT
fi

# Networks that intercept TLS (a corporate proxy, this project's CI) are trusted through the host's CA bundle and
# pip configuration; mounted into the RUN steps only, they never end up in a layer.
mounts=()
[ -f /etc/ssl/certs/ca-certificates.crt ] && mounts+=(--volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
[ -f /etc/pip.conf ] && mounts+=(--volume /etc/pip.conf:/etc/pip.conf:ro)

version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' exporter/__init__.py)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The inventory image first: the exporter's name and size stay the last two lines.
for target in inventory exporter; do
  [[ " ${targets[*]} " == *" $target "* ]] || continue
  if [ "$target" = exporter ]; then
    image=localhost/kafka-client-exporter:$version
    target_args=()  # the Dockerfile's last stage, what `docker build .` gives
  else
    image=localhost/kafka-client-exporter-inventory:$version
    target_args=(--target inventory)
  fi
  # chroot isolation: the OCI runtimes (crun, runc) cannot set rlimits in unprivileged sandboxes. --force-rm: a
  # failed step would otherwise leave its working container behind in buildah's storage.
  buildah build --quiet --isolation chroot --layers --force-rm "${mounts[@]}" "${target_args[@]}" \
    --build-arg PYTHON_IMAGE="$base_image" \
    --build-arg VERSION="$version" \
    --build-arg REVISION="$revision" \
    --build-arg CREATED="$created" \
    --tag "$image" . >/dev/null
  echo "$image"
  buildah images --format '{{.Size}}' "$image"
done
