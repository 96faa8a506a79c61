#!/usr/bin/env bash
# scripts/first-run.sh source|deb: times a new user's way to the first live
# notification on this machine, as the README tells it, and prints each
# step's time from the start.
#
#   source  the README's first command, `go run ./cmd/perch serve`, with
#           empty Go module and build caches (as on a machine where Go was
#           just installed), in an empty directory of its own; the client
#           is the binary that build left.
#   deb     `dpkg -i` of this machine's dist/perch_*_ARCH.deb (run
#           scripts/release.sh first: a user downloads it), then the
#           packaged server started as perch.service starts it (as the user
#           perch, with /etc/perch/perch.env; without systemd here, started
#           by this script), and /usr/bin/perch as the client. Needs root
#           and a machine without the package; purges it at the end.
#
# Then, for both: sign up, an API token for `perch login --token`, a webhook
# token, `perch listen --json` running, `perch send`, and the time the
# notification reached the listener. Nothing leaves the machine but, for
# `source`, the module downloads.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
[ "$mode" = source ] || [ "$mode" = deb ] || { echo "usage: scripts/first-run.sh source|deb" >&2; exit 2; }

work=$(mktemp -d)
server=""
listener=""
cleanup() {
	[ -n "$listener" ] && kill "$listener" 2>/dev/null || true
	# The server runs in a process group of its own (setsid): go run's
	# child, or runuser's, goes with it.
	[ -n "$server" ] && kill -- "-$server" 2>/dev/null || true
	wait 2>/dev/null || true
	if [ "$mode" = deb ] && dpkg-query -W perch >/dev/null 2>&1; then
		dpkg --purge perch >/dev/null 2>&1 || echo "first-run: dpkg --purge perch failed; remove it by hand" >&2
	fi
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

start=$(date +%s.%N)
mark() { printf 'first-run %s: %6.1f s  %s\n' "$mode" "$(awk -v now="$(date +%s.%N)" -v start="$start" 'BEGIN { print now - start }')" "$*"; }
fail() { echo "first-run $mode: FAILED: $*" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

case $mode in
source)
	mkdir -p "$work/run" "$work/gocache" "$work/gomod"
	export GOCACHE=$work/gocache GOMODCACHE=$work/gomod GOFLAGS=-modcacherw
	# go run in the checkout, as the README says, with the database in a
	# directory of its own rather than the checkout's perch.db.
	PERCH_LISTEN=127.0.0.1:$port setsid go run ./cmd/perch serve --database-url "$work/run/perch.db" >"$work/server.log" 2>&1 &
	server=$!
	;;
deb)
	[ "$(id -u)" -eq 0 ] || fail "must run as root (dpkg -i)"
	! dpkg-query -W perch >/dev/null 2>&1 || fail "a perch package is installed already"
	debs=(dist/perch_*_"$(dpkg --print-architecture)".deb)
	[ -f "${debs[0]}" ] || fail "no dist/perch_*.deb: run scripts/release.sh first"
	dpkg -i "${debs[0]}" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i"; }
	mark "dpkg -i ${debs[0]##*/} done"
	# As the unit runs it, on a port of our own.
	(cd /var/lib/perch && set -a && . /etc/perch/perch.env && set +a &&
		PERCH_LISTEN=127.0.0.1:$port exec setsid runuser -u perch -- /usr/bin/perch serve) >"$work/server.log" 2>&1 &
	server=$!
	;;
esac

until curl -fsS "$base/healthz" >/dev/null 2>&1; do
	kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; fail "the server exited"; }
	sleep 0.2
done
mark "the server answers /healthz"
if [ "$mode" = source ]; then
	client=$(find "$GOCACHE" -type f -name perch -perm -u+x | head -1)
	if [ -z "$client" ]; then
		go build -o "$work/perch" ./cmd/perch
		client=$work/perch
	fi
else
	client=/usr/bin/perch
fi
grep -m1 -o 'http[^ ]*/setup#code=pst_[A-Za-z0-9_-]*' "$work/server.log" >/dev/null && mark "the server printed its one-time setup link"

json() { python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["'"$1"'"])'; }
access=$(curl -fsS -X POST "$base/api/v1/auth/register" \
	-d '{"name": "Ada", "email": "ada@example.com", "password": "correct horse battery"}' | json access_token)
pat=$(curl -fsS -X POST "$base/api/v1/tokens" -H "Authorization: Bearer $access" -d '{"label": "laptop"}' | json raw_token)
webhook=$(curl -fsS -X POST "$base/api/v1/webhook-tokens" -H "Authorization: Bearer $access" \
	-d '{"label": "deploys", "sender": "inbound", "scope": "user"}' | json raw_token)
mark "signed up; an API token and a webhook token made"

export PERCH_CONFIG_DIR=$work/config
"$client" login --server "$base" --token "$pat" >"$work/login.log" 2>&1 || { cat "$work/login.log" >&2; fail "perch login"; }
"$client" listen --server "$base" --json >"$work/listen.out" 2>"$work/listen.err" &
listener=$!
mark "perch login --token; perch listen started"
sleep 1 # listen connects; what it misses it would replay anyway
PERCH_WEBHOOK_TOKEN=$webhook "$client" send --server "$base" --title "Deploy finished" --message "api v1.2.3 is live" >/dev/null
until grep -q '"Deploy finished"' "$work/listen.out" 2>/dev/null; do
	kill -0 "$listener" 2>/dev/null || { cat "$work/listen.err" >&2; fail "perch listen exited"; }
	sleep 0.05
done
mark "the first notification reached perch listen"
