#!/usr/bin/env bash
# The events figures, in one run on this machine (loopback only, bounded):
#  1. ingest throughput of POST /webhooks/inbound with one subscribed client,
#     as a ratio to a trivial net/http handler under the same wrk load, at 32
#     and 128 concurrent senders;
#  2. POST-to-frame latency p50/p99 at a steady rate with many clients;
#  3. time for one org-scoped event to reach every one of many clients, and
#     the floor: plain TCP from a server that does nothing else;
#  4. server memory per idle WebSocket connection;
#  5. ingest of an organisation with ten enabled workflows (one matching
#     each event) as a ratio to one with none, same load (the in-process
#     figure: go test ./internal/server -run XXX -bench BenchmarkIngestWorkflows).
# Needs wrk (apt-get install -y wrk). Usage: scripts/load-events.sh [wrk seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
port=18181
trivial_port=18281
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

go build -o "$dir/perch" ./cmd/perch
go build -o "$dir/loadgen" ./bench/loadgen
PERCH_LISTEN=127.0.0.1:$port PERCH_DATABASE_URL="$dir/perch.db" PERCH_LOG_LEVEL=warn \
  PERCH_RATE_LIMIT_AUTH=100000/1m PERCH_RATE_LIMIT_USER=100000000/1m \
  "$dir/perch" serve >/dev/null 2>"$dir/serve.log" &
server=$!
pids+=("$server")
"$dir/loadgen" trivial -addr 127.0.0.1:$trivial_port &
pids+=($!)
base=http://127.0.0.1:$port
for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && curl -sf "http://127.0.0.1:$trivial_port/" >/dev/null && break; sleep 0.1; done

json() { sed "s/.*\"$1\":\"\([^\"]*\)\".*/\1/"; }
access=$(curl -s -X POST "$base/api/v1/auth/register" \
  -d '{"name":"Load","email":"load@example.com","password":"correct horse battery"}' | json access_token)
token=$(curl -s -X POST "$base/api/v1/tokens" -H "Authorization: Bearer $access" -d '{"label":"load"}' | json raw_token)
webhook=$(curl -s -X POST "$base/api/v1/webhook-tokens" -H "Authorization: Bearer $access" \
  -d '{"label":"load","sender":"inbound","scope":"org"}' | json raw_token)

cat >"$dir/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"title":"Deploy finished","message":"api v1.2.3 is live","severity":"info","tab":"Deploys"}'
wrk.headers["Content-Type"] = "application/json"
LUA

echo "== 4. memory per idle connection (measured first, on the fresh server): 2,000 clients, then what 5,000 more cost"
"$dir/loadgen" idle -base "$base" -token "$token" -clients 5000 -pid "$server"

echo "== 1. ingest: POST /webhooks/inbound with one subscribed client, against a trivial net/http handler; wrk -t2 -d${secs}s"
conns=(32 128) # concurrent senders
declare -A trivial perch
for c in "${conns[@]}"; do
  trivial[$c]=$(wrk -t2 -c"$c" -d"${secs}s" -s "$dir/post.lua" "http://127.0.0.1:$trivial_port/" | awk '/Requests\/sec/ {print $2}')
done
"$dir/loadgen" hold -base "$base" -token "$token" -seconds $((${#conns[@]} * secs + 120)) &
holder=$!
sleep 1
for c in "${conns[@]}"; do
  out=$(wrk -t2 -c"$c" -d"${secs}s" --latency -s "$dir/post.lua" "$base/webhooks/inbound?token=$webhook")
  perch[$c]=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  echo "-c$c:"; echo "$out" | grep -E 'Non-2xx|^ +50%|^ +99%' || true
done
wait $holder
metric() { curl -s "$base/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
accepted=$(curl -s "$base/metrics" | awk '/perch_http_requests_total.*route="POST \/webhooks\/inbound",status="200"/ {print $NF}')
echo "accepted by the receiver: $accepted; group commit: $(awk "BEGIN {printf \"%.1f\", $(metric perch_ingest_notifications_total)/$(metric perch_ingest_transactions_total)}") notifications per transaction"
for c in "${conns[@]}"; do
  echo "-c$c: trivial handler ${trivial[$c]} req/s; perch ingest ${perch[$c]} req/s; ratio $(awk "BEGIN {printf \"%.1f%%\", 100*${perch[$c]}/${trivial[$c]}}")"
done

echo "== 5. workflows: ingest with ten enabled workflows on the organisation against none; wrk -t2 -c32 -d${secs}s each"
flows=$(curl -s -X POST "$base/api/v1/auth/register" \
  -d '{"name":"Flows","email":"flows@example.com","password":"correct horse battery"}' | json access_token)
for i in $(seq 0 9); do # CEL takes 'single-quoted' strings, which keeps the JSON plain
  cond="event.source == 'monitoring' && event.title.contains('svc-$i')"
  [ $((i % 3)) = 1 ] && cond="has(payload.alert) && payload.alert.service == 'svc-$i'"
  [ "$i" = 9 ] && cond="event.severity == 'error' && has(payload.alert) && payload.alert.priority == 'P1'"
  curl -sf -o /dev/null -X POST "$base/api/v1/org/workflows" -H "Authorization: Bearer $flows" \
    -d "{\"name\":\"rule $i\",\"enabled\":true,\"condition\":\"$cond\",\"steps\":[{\"set\":{\"title\":\"'[P1] ' + event.title\"}}]}"
done
flowhook=$(curl -s -X POST "$base/api/v1/webhook-tokens" -H "Authorization: Bearer $flows" \
  -d '{"label":"load","sender":"inbound","scope":"org"}' | json raw_token)
cat >"$dir/alert.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"title":"Deploy failed","message":"api v1.2.3 rolled back","severity":"error","tab":"Deploys","alert":{"priority":"P1","service":"api"}}'
wrk.headers["Content-Type"] = "application/json"
LUA
none=$(wrk -t2 -c32 -d"${secs}s" -s "$dir/alert.lua" "$base/webhooks/inbound?token=$webhook" | awk '/Requests\/sec/ {print $2}')
ten=$(wrk -t2 -c32 -d"${secs}s" -s "$dir/alert.lua" "$base/webhooks/inbound?token=$flowhook" | awk '/Requests\/sec/ {print $2}')
echo "no workflows $none req/s; ten workflows $ten req/s; ratio $(awk "BEGIN {printf \"%.1f%%\", 100*$ten/$none}")"

echo "== 2. latency: 1,000 users with a client each, 1,000 events/s for 10 s, each event to one user"
"$dir/loadgen" latency -base "$base" -clients 1000 -rate 1000 -seconds 10

echo "== 3. fan-out: one org event to 10,000 clients; then the floor, plain TCP to as many clients"
"$dir/loadgen" fanout -base "$base" -token "$token" -webhook "$webhook" -clients 10000 -rounds 9
kill "$server"
"$dir/loadgen" rawserve -addr 127.0.0.1:18381 -control 127.0.0.1:18382 &
pids+=($!)
for _ in $(seq 100); do curl -sf -X POST http://127.0.0.1:18382/ >/dev/null && break; sleep 0.1; done
"$dir/loadgen" rawfanout -addr 127.0.0.1:18381 -control http://127.0.0.1:18382/ -clients 10000 -rounds 9

