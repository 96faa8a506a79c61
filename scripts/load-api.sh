#!/usr/bin/env bash
# Load the account endpoints of a fresh local server with wrk and report the
# latency distribution of POST /api/v1/auth/login and GET /api/v1/users/me,
# plus the server's resident memory while idle. Loopback only; bounded in time.
# Needs wrk (apt-get install -y wrk). Usage: scripts/load-api.sh [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "$0 needs wrk: apt-get install -y wrk" >&2; exit 1; }
secs=${1:-10}
conns=${2:-16}
port=18181
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT

go build -o "$dir/perch" ./cmd/perch
PERCH_LISTEN=127.0.0.1:$port PERCH_DATABASE_URL="$dir/perch.db" \
PERCH_RATE_LIMIT_AUTH=100000000/1m PERCH_RATE_LIMIT_USER=100000000/1m PERCH_LOG_LEVEL=warn \
  "$dir/perch" serve >/dev/null 2>"$dir/serve.log" &
pid=$!
base=http://127.0.0.1:$port
for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done

sleep 2
echo "idle server: $(grep -E 'VmRSS|VmHWM' /proc/$pid/status | tr -s ' \t' ' ' | paste -sd ';')"

reg=$(curl -s -X POST "$base/api/v1/auth/register" \
  -d '{"name":"Load","email":"load@example.com","password":"correct horse battery"}')
access=$(echo "$reg" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
token=$(curl -s -X POST "$base/api/v1/tokens" -H "Authorization: Bearer $access" -d '{"label":"load"}' \
  | sed 's/.*"raw_token":"\([^"]*\)".*/\1/')

cat >"$dir/login.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"email":"load@example.com","password":"correct horse battery"}'
wrk.headers["Content-Type"] = "application/json"
LUA

run() { # name, wrk args...
  local name=$1; shift
  echo "== $name"
  wrk -t2 -c"$conns" -d"${secs}s" --latency "$@" | grep -E 'Requests/sec|^ +(50|90|99)%|Non-2xx'
}
run "GET /api/v1/users/me (access token)" -H "Authorization: Bearer $access" "$base/api/v1/users/me"
run "GET /api/v1/users/me (API token)" -H "Authorization: Bearer $token" "$base/api/v1/users/me"
run "POST /api/v1/auth/login" -s "$dir/login.lua" "$base/api/v1/auth/login"
echo "after load: $(grep -E 'VmRSS|VmHWM' /proc/$pid/status | tr -s ' \t' ' ' | paste -sd ';')"
