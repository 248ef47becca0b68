#!/usr/bin/env bash
# The pictures of docs/images/, taken from the real demo: starts it on its own ports and data directory, waits until
# each picture's content is there, takes them with headless Chromium, shrinks them (pngquant) and stops what it
# started (docs_gen/screenshots.py). Run it after changing what a picture shows; then commit docs/images/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Palette PNGs are a quarter of Chromium's: the pictures stay a few hundred KB in all.
if ! command -v pngquant >/dev/null; then
  echo "screenshots: installing pngquant with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends pngquant >/dev/null
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec .venv/bin/python -m docs_gen.screenshots "$@"
