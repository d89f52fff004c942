#!/usr/bin/env bash
# `make image-smoke`: runs the image of `make image` against a PostgreSQL
# database (host network), the way an operator would: migrate, create a
# workspace, an admin and a key with the image's own CLI, serve, then check
# /readyz and one authenticated REST call, and that SIGTERM exits 0.
#
# Environment: IMAGE (default worktrack:dev), SMOKE_DATABASE_URL (an empty
# or disposable PostgreSQL database; required), SMOKE_ADDR (default
# 127.0.0.1:18080).
set -euo pipefail

IMAGE=${IMAGE:-worktrack:dev}
DB=${SMOKE_DATABASE_URL:?set SMOKE_DATABASE_URL to a disposable PostgreSQL database}
ADDR=${SMOKE_ADDR:-127.0.0.1:18080}

run() {
	docker run --rm --network host -e DATABASE_URL="$DB" "$IMAGE" "$@"
}
field() { # field NAME: the first "NAME": "value" of stdin's JSON
	sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" | head -n1
}

echo "image-smoke: $(run --version)"
run migrate >/dev/null
ws="$(run workspace create --name "Image smoke" | field id)"
run user create --workspace "$ws" --email smoke@example.com --name Smoke --role admin >/dev/null
key="$(run key create --email smoke@example.com --workspace "$ws" --name smoke | field secret)"
[ -n "$key" ] || { echo "image-smoke: no key created" >&2; exit 1; }

cid="$(docker run -d --network host -e DATABASE_URL="$DB" -e WORKTRACK_ADDR="$ADDR" "$IMAGE")"
cleanup() { docker rm -f "$cid" >/dev/null 2>&1 || true; }
trap cleanup EXIT
for _ in $(seq 60); do
	if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR/readyz")" = 200 ]; then
		break
	fi
	sleep 0.5
done
status="$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR/readyz")"
[ "$status" = 200 ] || { echo "image-smoke: /readyz $status" >&2; docker logs "$cid" >&2; exit 1; }
me="$(curl -s -H "Authorization: Bearer $key" "http://$ADDR/v1/users/me")"
case "$me" in
*'"email":"smoke@example.com"'*) ;;
*) echo "image-smoke: GET /v1/users/me answered: $me" >&2; docker logs "$cid" >&2; exit 1 ;;
esac
user="$(docker inspect --format '{{.Config.User}}' "$cid")"
[ "$user" = "65532:65532" ] || { echo "image-smoke: runs as '$user', want 65532:65532" >&2; exit 1; }
docker stop --time 30 "$cid" >/dev/null
code="$(docker inspect --format '{{.State.ExitCode}}' "$cid")"
[ "$code" = 0 ] || { echo "image-smoke: exit code $code after SIGTERM" >&2; docker logs "$cid" >&2; exit 1; }
echo "image-smoke: /readyz 200, GET /v1/users/me 200 as smoke@example.com, non-root, exit 0 after SIGTERM"
