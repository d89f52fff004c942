#!/usr/bin/env bash
# `make image`: builds the Worktrack image from bin/worktrack (make build)
# and tools/image/Dockerfile, with no base image to pull.
#
# Environment: IMAGE (the tag, default worktrack:dev), CA_BUNDLE (the CA
# certificates webhook deliveries over HTTPS trust, default Debian's
# /etc/ssl/certs/ca-certificates.crt).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
IMAGE=${IMAGE:-worktrack:dev}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

if [ ! -x "$root/bin/worktrack" ]; then
	echo "image: bin/worktrack is missing; run make build" >&2
	exit 1
fi
if [ ! -s "$CA_BUNDLE" ]; then
	echo "image: no CA bundle at $CA_BUNDLE (install Debian's ca-certificates, or set CA_BUNDLE)" >&2
	exit 1
fi
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cp "$here/Dockerfile" "$root/bin/worktrack" "$ctx/"
cp "$CA_BUNDLE" "$ctx/ca-certificates.crt"
mkdir "$ctx/data"
version="$("$root/bin/worktrack" --version)"
docker build --quiet --label "org.opencontainers.image.version=${version#worktrack }" -t "$IMAGE" "$ctx" >/dev/null
size="$(docker image inspect --format '{{.Size}}' "$IMAGE")"
echo "image: built $IMAGE ($((size / 1024 / 1024)) MB): $version"
