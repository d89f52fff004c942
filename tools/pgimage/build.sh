#!/usr/bin/env bash
# Builds the PostgreSQL image the integration tests start through
# testcontainers when no image registry is reachable (`make test-image`).
#
#   1. base image ($BASE): a minimal Debian root file system with Debian's
#      postgresql package, made with debootstrap from the Debian mirror and
#      loaded with `docker import`. It is the cache: kept between runs and
#      rebuilt only when missing or with FORCE=1.
#   2. test image ($IMAGE): the base plus docker-entrypoint.sh (Dockerfile in
#      this directory). Labelled with a hash of the Dockerfile and entrypoint,
#      and skipped when an image with the same hash exists (unless FORCE=1).
#
# Needs root (debootstrap, chroot) and a running Docker engine.
#
# Environment: WORKTRACK_TEST_PG_IMAGE (the tag, default
# worktrack/postgres-test:15), PGIMAGE_BASE, DEBIAN_MIRROR,
# PGIMAGE_CACHE (debootstrap's .deb cache and scratch space), FORCE=1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
IMAGE=${WORKTRACK_TEST_PG_IMAGE:-worktrack/postgres-test:15}
BASE=${PGIMAGE_BASE:-worktrack/postgres-test-base:bookworm}
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${PGIMAGE_CACHE:-/var/cache/worktrack-pgimage}
FORCE=${FORCE:-0}

log() {
	printf 'pgimage: %s\n' "$*"
}
die() {
	printf 'pgimage: %s\n' "$*" >&2
	exit 1
}

command -v docker >/dev/null 2>&1 || die "docker not found (Debian: apt-get install docker.io)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (start dockerd, or check DOCKER_HOST)"

# Images replaced by this run, removed at the end when nothing uses them.
old_ids="$(docker image inspect --format '{{.Id}}' "$IMAGE" "$BASE" 2>/dev/null || true)"

# label IMAGE: the value of the hash label of IMAGE, empty when it has none.
label() {
	docker image inspect --format '{{index .Config.Labels "org.worktrack.pgimage.hash"}}' "$1" 2>/dev/null || true
}

# make_base: debootstrap the root file system and import it as $BASE.
make_base() {
	[ "$(id -u)" = 0 ] || die "building $BASE needs root for debootstrap (sudo make test-image)"
	command -v debootstrap >/dev/null 2>&1 || die "debootstrap not found (Debian: apt-get install debootstrap)"
	mkdir -p "$CACHE/debs"
	rootfs="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
	trap 'rm -rf "$rootfs"' EXIT
	log "debootstrap $SUITE from $MIRROR (log: $CACHE/debootstrap.log)"
	# postgresql pulls in the server, the client and postgresql-common;
	# setpriv (util-linux, essential) drops root in the entrypoint.
	if ! debootstrap --variant=minbase --include=postgresql --cache-dir="$CACHE/debs" \
		"$SUITE" "$rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
		tail -n 30 "$CACHE/debootstrap.log" >&2
		die "debootstrap failed (full log: $CACHE/debootstrap.log)"
	fi
	# The package created and registered a cluster (main); the entrypoint makes
	# its own in $PGDATA on first start. Drop what no test needs.
	rm -rf "$rootfs"/etc/postgresql/* "$rootfs"/var/lib/postgresql/* \
		"$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* \
		"$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
		"$rootfs"/usr/share/locale/* "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* \
		"$rootfs"/run/postgresql "$rootfs"/usr/share/i18n
	# LLVM is only PostgreSQL's optional JIT provider, and half the image;
	# without llvmjit.so the server runs with JIT unavailable.
	rm -rf "$rootfs"/usr/lib/postgresql/*/lib/llvmjit* "$rootfs"/usr/lib/postgresql/*/lib/bitcode \
		"$rootfs"/usr/lib/*-linux-gnu/libLLVM-* "$rootfs"/usr/lib/*-linux-gnu/libz3.so*
	[ -x "$rootfs/usr/bin/setpriv" ] || die "setpriv missing from the root file system"
	log "docker import -> $BASE"
	tar --numeric-owner -C "$rootfs" -c . |
		docker import --change "LABEL org.worktrack.pgimage.hash=$1" - "$BASE" >/dev/null
	rm -rf "$rootfs"
	trap - EXIT
}

start=$SECONDS
# The base is rebuilt when its recipe (make_base, the suite) changed; the
# image when the Dockerfile, the entrypoint or the base changed.
base_hash="$( (declare -f make_base; echo "$SUITE") | sha256sum | cut -c1-16)"
if [ "$FORCE" = 1 ] || [ "$(label "$BASE")" != "$base_hash" ]; then
	make_base "$base_hash"
else
	log "reusing $BASE (the debootstrap result; FORCE=1 redoes it)"
fi

hash="$(cat "$here/Dockerfile" "$here/docker-entrypoint.sh" <(docker image inspect --format '{{.Id}}' "$BASE") |
	sha256sum | cut -c1-16)"
if [ "$FORCE" != 1 ] && [ "$(label "$IMAGE")" = "$hash" ]; then
	log "$IMAGE is up to date; FORCE=1 rebuilds it"
	exit 0
fi

majors="$(docker run --rm --entrypoint ls "$BASE" /usr/lib/postgresql)"
pg_major="$(printf '%s\n' "$majors" | sort -n | tail -n1)"
[ -n "$pg_major" ] || die "no PostgreSQL found in $BASE"
log "docker build -> $IMAGE (PostgreSQL $pg_major)"
if ! out="$(docker build -q --build-arg "BASE=$BASE" --build-arg "PG_MAJOR=$pg_major" \
	--label "org.worktrack.pgimage.hash=$hash" -t "$IMAGE" "$here" 2>&1)"; then
	printf '%s\n' "$out" >&2
	die "docker build failed"
fi
for id in $old_ids; do
	if ! docker image ls -q --no-trunc --filter "reference=$IMAGE" --filter "reference=$BASE" | grep -qFx "$id"; then
		docker image rm "$id" >/dev/null 2>&1 || true
	fi
done
log "built $IMAGE in $((SECONDS - start))s: $(docker image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
