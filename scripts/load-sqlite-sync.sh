#!/usr/bin/env bash
# What PERCH_SQLITE_SYNC=full costs ingest against normal, in one run on this
# machine (loopback only, bounded): two Perch servers on SQLite, one with
# each setting, and a trivial net/http handler; after a warm-up of each,
# five rounds, each running wrk (POST /webhooks/inbound, as
# scripts/load-events.sh does) against the three in turn at 32 and then 128
# concurrent senders; then the medians of each figure and of the rounds'
# ratios. The databases live in a directory on the disk the server would
# use (mktemp -d; set TMPDIR to measure another), since syncing is the cost.
# Needs wrk (apt-get install -y wrk). Usage: scripts/load-sqlite-sync.sh [wrk seconds] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "$0 needs wrk: apt-get install -y wrk" >&2; exit 1; }
secs=${1:-10}
rounds=${2:-5}
trivial_port=18291
declare -A ports=([normal]=18191 [full]=18192)
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT

go build -o "$dir/perch" ./cmd/perch
go build -o "$dir/loadgen" ./bench/loadgen
"$dir/loadgen" trivial -addr 127.0.0.1:$trivial_port &
pids+=($!)
json() { sed "s/.*\"$1\":\"\([^\"]*\)\".*/\1/"; }
declare -A url
for sync in normal full; do
  port=${ports[$sync]}
  PERCH_LISTEN=127.0.0.1:$port PERCH_DATABASE_URL="$dir/$sync.db" PERCH_SQLITE_SYNC=$sync PERCH_LOG_LEVEL=warn \
    PERCH_RATE_LIMIT_AUTH=100000/1m PERCH_RATE_LIMIT_USER=100000000/1m \
    "$dir/perch" serve >/dev/null 2>"$dir/$sync.log" &
  pids+=($!)
  base=http://127.0.0.1:$port
  for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
  access=$(curl -s -X POST "$base/api/v1/auth/register" \
    -d '{"name":"Load","email":"load@example.com","password":"correct horse battery"}' | json access_token)
  webhook=$(curl -s -X POST "$base/api/v1/webhook-tokens" -H "Authorization: Bearer $access" \
    -d '{"label":"load","sender":"inbound","scope":"org"}' | json raw_token)
  url[$sync]="$base/webhooks/inbound?token=$webhook"
done
url[trivial]="http://127.0.0.1:$trivial_port/"

cat >"$dir/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"title":"Deploy finished","message":"api v1.2.3 is live","severity":"info","tab":"Deploys"}'
wrk.headers["Content-Type"] = "application/json"
LUA
rps() { wrk -t2 -c"$1" -d"${secs}s" -s "$dir/post.lua" "$2" | awk '/Requests\/sec/ {print $2} /Non-2xx/ {print "non-2xx: " $0 > "/dev/stderr"}'; }
ratio() { awk "BEGIN {printf \"%.1f\", 100*$1/$2}"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

for u in trivial normal full; do wrk -t2 -c32 -d5s -s "$dir/post.lua" "${url[$u]}" >/dev/null; done # warm-up, not counted
echo "== ingest with PERCH_SQLITE_SYNC=normal and =full, and a trivial handler; $rounds rounds of wrk -t2 -d${secs}s against the three in turn"
declare -A figs
for r in $(seq "$rounds"); do
  for c in 32 128; do
    t=$(rps "$c" "${url[trivial]}")
    n=$(rps "$c" "${url[normal]}")
    f=$(rps "$c" "${url[full]}")
    figs[t$c]+=" $t" figs[n$c]+=" $n" figs[f$c]+=" $f"
    figs[fn$c]+=" $(ratio "$f" "$n")" figs[nt$c]+=" $(ratio "$n" "$t")" figs[ft$c]+=" $(ratio "$f" "$t")"
    echo "round $r, -c$c: trivial $t req/s, normal $n, full $f (full is $(ratio "$f" "$n")% of normal; of the trivial handler: normal $(ratio "$n" "$t")%, full $(ratio "$f" "$t")%)"
  done
done
echo "== medians"
for c in 32 128; do
  # shellcheck disable=SC2086 # the lists are words
  echo "-c$c: trivial $(median ${figs[t$c]}) req/s, normal $(median ${figs[n$c]}), full $(median ${figs[f$c]});" \
    "full is $(median ${figs[fn$c]})% of normal; of the trivial handler: normal $(median ${figs[nt$c]})%, full $(median ${figs[ft$c]})%"
done
