#!/usr/bin/env bash
# Two builds of Perch side by side on this machine (loopback only): the
# ingest row of scripts/load-events.sh (POST /webhooks/inbound, wrk -t2
# -c32, one subscribed client) and its fan-out row (one org event to many
# clients, loadgen fanout), for a base commit and the working tree, in
# alternating rounds, so that both meet the same load of a shared machine;
# then the medians and the ratio of the tree to the base. With the tree,
# ingest is measured twice: the plain body both builds take, and a rich
# one (priority, tags, Markdown, a view action). Fan-out is reported both as
# the time until the last client has an event and as the server's CPU time
# per event, which the machine's other load moves less. Usage:
#   [ONLY=fanout] scripts/load-sidebyside.sh BASE_REV [wrk seconds] [rounds] [clients]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "$0 needs wrk: apt-get install -y wrk" >&2; exit 1; }
base_rev=${1:?usage: $0 BASE_REV [wrk seconds] [rounds] [clients]}
secs=${2:-10}
rounds=${3:-5}
clients=${4:-10000}
only=${ONLY:-} # ONLY=fanout skips the ingest section
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; git worktree remove --force "$dir/base-src" 2>/dev/null || true; rm -rf "$dir"' EXIT
ulimit -n "$(ulimit -Hn)"

git worktree add -q --detach "$dir/base-src" "$base_rev"
(cd "$dir/base-src" && go build -o "$dir/perch-base" ./cmd/perch)
go build -o "$dir/perch-head" ./cmd/perch
go build -o "$dir/loadgen" ./bench/loadgen

json() { sed "s/.*\"$1\":\"\([^\"]*\)\".*/\1/"; }
declare -A port token webhook server
port[base]=18191 port[head]=18192
for b in base head; do
  PERCH_LISTEN=127.0.0.1:${port[$b]} PERCH_DATABASE_URL="$dir/$b.db" PERCH_LOG_LEVEL=warn \
    PERCH_RATE_LIMIT_AUTH=100000/1m PERCH_RATE_LIMIT_USER=100000000/1m \
    "$dir/perch-$b" serve >/dev/null 2>"$dir/$b.log" &
  pids+=($!) server[$b]=$!
done
for b in base head; do
  u=http://127.0.0.1:${port[$b]}
  for _ in $(seq 100); do curl -sf "$u/healthz" >/dev/null && break; sleep 0.1; done
  access=$(curl -s -X POST "$u/api/v1/auth/register" -d '{"name":"Load","email":"load@example.com","password":"correct horse battery"}' | json access_token)
  token[$b]=$(curl -s -X POST "$u/api/v1/tokens" -H "Authorization: Bearer $access" -d '{"label":"load"}' | json raw_token)
  webhook[$b]=$(curl -s -X POST "$u/api/v1/webhook-tokens" -H "Authorization: Bearer $access" \
    -d '{"label":"load","sender":"inbound","scope":"org"}' | json raw_token)
done

cat >"$dir/plain.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"title":"Deploy finished","message":"api v1.2.3 is live","severity":"info","tab":"Deploys"}'
wrk.headers["Content-Type"] = "application/json"
LUA
cat >"$dir/rich.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"title":"Deploy finished","message":"api **v1.2.3** is live","severity":"info","tab":"Deploys","priority":"high","tags":["rocket","api"],"markdown":true,"actions":[{"type":"view","label":"Open","url":"https://ci.example.com/runs/7"}]}'
wrk.headers["Content-Type"] = "application/json"
LUA

rps() { wrk -t2 -c32 -d"${secs}s" -s "$dir/$1.lua" "$2" | awk '/Requests\/sec/ {print $2}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ratio() { awk "BEGIN {printf \"%.1f\", 100*$1/$2}"; }
hook() { echo "http://127.0.0.1:${port[$1]}/webhooks/inbound?token=${webhook[$1]}"; }

if [ "$only" != fanout ]; then
  # One subscribed client on each, as in load-events.sh, through the ingest
  # rounds: it checks that every notification arrived once and in order.
  declare -A holder
  for b in base head; do
    "$dir/loadgen" hold -base "http://127.0.0.1:${port[$b]}" -token "${token[$b]}" -seconds $((rounds * 4 * secs + 120)) -quiet $((3 * secs + 10))s >"$dir/hold-$b.out" 2>&1 &
    holder[$b]=$!
    pids+=($!)
  done
  sleep 1
  for b in base head; do wrk -t2 -c32 -d5s -s "$dir/plain.lua" "$(hook $b)" >/dev/null; done # warm-up, not counted

  echo "== ingest at 32 senders: $rounds rounds of wrk -d${secs}s, base ($base_rev) and head in turn"
  declare -a ib ih ihr ratios rich_ratios
  for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then b1=$(rps plain "$(hook base)"); h1=$(rps plain "$(hook head)")
    else h1=$(rps plain "$(hook head)"); b1=$(rps plain "$(hook base)"); fi
    hr=$(rps rich "$(hook head)")
    ib+=("$b1") ih+=("$h1") ihr+=("$hr") ratios+=("$(ratio "$h1" "$b1")") rich_ratios+=("$(ratio "$hr" "$b1")")
    echo "round $r: base $b1 req/s, head $h1 (${ratios[-1]}%), head with rich notifications $hr (${rich_ratios[-1]}%)"
  done

  for b in base head; do
    wait "${holder[$b]}" || echo "the subscribed client on $b failed"
    echo "subscribed client on $b: $(tail -1 "$dir/hold-$b.out")"
  done
fi

echo "== fan-out: one org event to $clients clients, $rounds rounds of 9 events each, base and head in turn"
# Each round gives two figures: the median time until the last client has
# the event (what a user sees, and what the machine's other load moves most)
# and the server's CPU time per event (user and system, from /proc, between
# the clients' connecting and the last event's arrival), which moves less.
declare -a fb fh fratios cb ch cratios
cputicks() { awk '{print $14 + $15}' "/proc/${server[$1]}/stat"; }
fan() {
  local line t0=0 t1=0 med=0 events=9
  while read -r line; do
    case $line in
    connected*) t0=$(cputicks "$1") ;;
    "one org event"*) t1=$(cputicks "$1"); med=$(sed 's/.*median \([0-9.]*\) ms.*/\1/' <<<"$line") ;;
    esac
  done < <("$dir/loadgen" fanout -base "http://127.0.0.1:${port[$1]}" -token "${token[$1]}" -webhook "${webhook[$1]}" -clients "$clients" -rounds $events)
  echo "$med $(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n=$events 'BEGIN {printf "%.1f", 1000 * t / hz / n}')"
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then read -r b1 bc < <(fan base); read -r h1 hc < <(fan head)
  else read -r h1 hc < <(fan head); read -r b1 bc < <(fan base); fi
  fb+=("$b1") fh+=("$h1") fratios+=("$(ratio "$h1" "$b1")") cb+=("$bc") ch+=("$hc") cratios+=("$(ratio "$hc" "$bc")")
  echo "round $r: base $b1 ms ($bc ms of CPU an event), head $h1 ms ($hc ms of CPU) (${fratios[-1]}% of base's time, ${cratios[-1]}% of its CPU)"
done

echo "== summary (medians of $rounds rounds)"
if [ "$only" != fanout ]; then
  echo "ingest -c32: base $(median "${ib[@]}") req/s, head $(median "${ih[@]}") req/s; head/base $(median "${ratios[@]}")% (rounds: ${ratios[*]})"
  echo "ingest -c32, head with rich notifications: $(median "${ihr[@]}") req/s; /base $(median "${rich_ratios[@]}")% (rounds: ${rich_ratios[*]})"
fi
echo "fan-out to $clients: base $(median "${fb[@]}") ms, head $(median "${fh[@]}") ms; head/base $(median "${fratios[@]}")% of the time (rounds: ${fratios[*]})"
echo "fan-out to $clients, server CPU an event: base $(median "${cb[@]}") ms, head $(median "${ch[@]}") ms; head/base $(median "${cratios[@]}")% (rounds: ${cratios[*]})"
