#!/usr/bin/env bash
# The fault scenarios of issue 39, run again (loopback only, bounded: about
# ten minutes in all, each scenario's load under a timeout of its own). For
# each scenario, one line:
#   acknowledged / stored / delivered per client (min–max) / lost / duplicated
# acknowledged: events an instance answered 200, by the ids it answered;
# stored: this scenario's rows in the database afterwards; lost: acknowledged
# ids some client of their scope never received, live or by its ?since=
# resume; duplicated: ids some client received twice. Lines of detail
# follow each: answers other than 200, retries, reconnections and how
# connections ended; and how long after its acknowledgement each frame
# arrived, by the instance the client started on and by 2-second window of
# the load (which shows a fault's window and how long the instances took
# to recover).
#
# The load is bench/loadgen's faults mode: users with webhook tokens (user
# and organisation scope) posting at a steady rate, with an Idempotency-Key
# and sent again after anything but a 200 (as a webhook sender does), and
# WebSocket clients that resume with ?since= as client.Listen does but keep
# every frame, so that repeats and reorderings show. Perch runs as real
# processes (perch serve, built once) on:
#  - SQLite, one instance: kill -9 three times under load, restarted each
#    time on the same database; a full disk (below); misbehaving clients
#    beside good ones (never reading, garbage, connecting in a loop);
#  - three instances on a private PostgreSQL cluster (initdb in a temp dir,
#    on a free port) and a private redis-server (a free port), clients
#    spread over them and failing over to another while theirs refuses:
#    one instance killed and restarted; Redis down for 20 s; PostgreSQL
#    restarted; Redis write pauses (CLIENT PAUSE 2000 WRITE); SIGTERM to an
#    instance (drain, clients closed with 1001, resuming elsewhere). In the
#    two Redis scenarios events are posted to some instances only, so that
#    the clients of the others depend on the wake-ups (or the poll) alone:
#    an instance also reads the store for its own writes, which would
#    otherwise hide a lost wake-up.
# The shared PostgreSQL (5432) and Redis (6379) are never touched.
#
# The full disk: the soft RLIMIT_FSIZE of the running SQLite server lowered
# to 4 KiB with prlimit (the hard limit left as it is, so that lifting it
# again needs no privilege), then lifted: every write of the server past
# that offset of any file fails with EFBIG (Go ignores SIGXFSZ). It needs
# no mount and no root, and fails exactly the server's writes: the
# database and its WAL, which have grown past 4 KiB by then. SQLite
# reports it as SQLITE_IOERR_WRITE ("disk I/O error", 778), and as
# SQLITE_FULL only for a write cut short part-way, where a full disk
# gives SQLITE_FULL (13) throughout: a server that maps a full disk to 503
# must map both. (The server's log goes through a pipe, which the limit
# does not touch.)
#
# Needs curl, redis-server, redis-cli, prlimit, psql and PostgreSQL's
# server binaries (/usr/lib/postgresql/*/bin). Usage: scripts/faults.sh
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in curl redis-server redis-cli prlimit psql; do
  command -v "$tool" >/dev/null || { echo "$0 needs $tool" >&2; exit 1; }
done
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "$0 needs PostgreSQL's server binaries in /usr/lib/postgresql/*/bin" >&2; exit 1; }
began=$SECONDS
echo "== faults: load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

dir=$(mktemp -d)
pgdir=$(mktemp -d) # the private PostgreSQL's, its own: it runs as postgres when this runs as root
pids=()  # every process started here, killed on exit
pg_up="" # set once the private PostgreSQL runs
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [ -z "$pg_up" ] || as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir" "$pgdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# as_pg runs PostgreSQL's tools as postgres when this runs as root (they
# refuse root), as the caller otherwise.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

go build -o "$dir/perch" ./cmd/perch
go build -o "$dir/loadgen" ./bench/loadgen

# free_port VAR: a port nothing listens on and not given out before, below
# Linux's ephemeral range, where no client's connection takes it meanwhile.
given=" "
free_port() {
  local candidate
  while :; do
    candidate=$((20000 + RANDOM % 12000)) # below the ephemeral ports (32768 on)
    [[ $given == *" $candidate "* ]] && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null && continue
    given+="$candidate "
    printf -v "$1" '%s' "$candidate"
    return
  done
}

# The servers' settings: quiet logs, limits far above the load.
common=(PERCH_LOG_LEVEL=warn PERCH_RATE_LIMIT_AUTH=100000/1m PERCH_RATE_LIMIT_USER=100000000/1m
  PERCH_ANONYMOUS_BROADCAST=false PERCH_SECRET_KEY="$(head -c 32 /dev/urandom | base64)")
declare -A pid port env

# start_perch NAME: runs perch serve as instance NAME (port[NAME],
# env[NAME]) until it answers /healthz. Its output goes to NAME.log
# through a pipe.
start_perch() {
  local name=$1 fifo="$dir/$1.fifo"
  [ -p "$fifo" ] || mkfifo "$fifo"
  cat "$fifo" >>"$dir/$name.log" &
  pids+=($!)
  # shellcheck disable=SC2086 # env[NAME] is a list of settings
  env "${common[@]}" ${env[$name]} PERCH_LISTEN="127.0.0.1:${port[$name]}" "$dir/perch" serve >"$fifo" 2>&1 &
  pid[$name]=$!
  pids+=($!)
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:${port[$name]}/healthz" >/dev/null && return 0
    kill -0 "${pid[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "instance $name did not start; its log:" >&2
  tail -20 "$dir/$name.log" >&2
  return 1
}

# stop_perch NAME [SIGNAL]: signals the instance (TERM by default) and
# waits for it to exit, 30 s at most.
stop_perch() {
  local name=$1 sig=${2:-TERM}
  { # stderr away: bash's note that a job was killed
    kill "-$sig" "${pid[$name]}" || return 0
    for _ in $(seq 300); do kill -0 "${pid[$name]}" || break; sleep 0.1; done
    kill -KILL "${pid[$name]}" || true
    wait "${pid[$name]}" || true
  } 2>/dev/null
}

url() { echo "http://127.0.0.1:${port[$1]}"; }

# The timeline of a scenario, in seconds since its load began.
# Microseconds (bash 5's EPOCHREALTIME), so that a fault falls where the
# load's own clock, which began at the same moment, puts it.
t0=0
now_us() { echo "${EPOCHREALTIME/./}"; }
at() { while (($(now_us) - t0 < $1 * 1000000)); do sleep 0.02; done; }
note() { local us=$(($(now_us) - t0)); printf '   t=%d.%01ds: %s\n' $((us / 1000000)) $((us % 1000000 / 100000)) "$*"; }

# run_load NAME FLAGS...: starts a scenario's load in the background and
# returns once it has begun (its clients connected), which starts the
# timeline; finish_load waits for it and prints its report.
load=0
run_load() {
  local name=$1
  shift
  rm -f "$dir/started"
  echo "== $name"
  timeout 300 "$dir/loadgen" faults -name "$name" -started "$dir/started" "$@" >"$dir/$name.out" 2>&1 &
  load=$!
  pids+=($load)
  for _ in $(seq 4500); do
    if [ -e "$dir/started" ]; then t0=$(now_us); return 0; fi
    kill -0 $load 2>/dev/null || break
    sleep 0.02
  done
  echo "the load of $name did not start:" >&2
  cat "$dir/$name.out" >&2
  return 1
}
finish_load() {
  local name=$1 rc=0
  wait $load || rc=$?
  sed 's/^/   /' "$dir/$name.out"
  [ $rc = 0 ] || echo "   the load of $name failed (exit $rc)"
  grep '^faults ' "$dir/$name.out" >>"$dir/summary" || echo "faults $name: no report (the load failed, exit $rc)" >>"$dir/summary"
}
# readyz NAME: the instance's answer to /readyz, for the timeline.
readyz() { curl -s -m 2 -w ' (%{http_code})' "$(url "$1")/readyz" | tr -d '\n' || true; }

rate=150 secs=30
load_flags=(-rate $rate -seconds $secs -retry-for 20s -settle 20s)

# ---- SQLite, one instance -------------------------------------------------
free_port p
port[sqlite]=$p env[sqlite]="PERCH_DATABASE_URL=$dir/kill9.db"
start_perch sqlite
run_load kill9-sqlite -bases "$(url sqlite)" -db "$dir/kill9.db" -users 4 -per-user 3 "${load_flags[@]}"
for t in 7 14 21; do
  at $t
  note "kill -9 the server, and start it again on the same database"
  stop_perch sqlite KILL
  start_perch sqlite
done
finish_load kill9-sqlite
stop_perch sqlite

free_port p
port[disk]=$p env[disk]="PERCH_DATABASE_URL=$dir/disk.db"
start_perch disk
run_load full-disk-sqlite -bases "$(url disk)" -db "$dir/disk.db" -users 4 -per-user 3 "${load_flags[@]}"
at 8
prlimit --pid "${pid[disk]}" --fsize=4096:unlimited
note "writes fail from now (prlimit --fsize=4096:unlimited on the server, a soft limit of 4 KiB; the database is $(du -k "$dir/disk.db" | cut -f1) KiB, its WAL $(du -k "$dir/disk.db-wal" | cut -f1) KiB)"
for t in 10 14 18; do
  at $t
  note "/readyz answers $(readyz disk)"
done
at 20
prlimit --pid "${pid[disk]}" --fsize=unlimited
note "writes succeed again (the limit lifted)"
at 22
note "/readyz answers $(readyz disk)"
finish_load full-disk-sqlite
echo "   the errors the server logged (the most frequent 5, with their counts):"
{ grep -o 'err="[^"]*"' "$dir/disk.log" || true; } | sort | uniq -c | sort -rn | head -5 | sed 's/^/     /'
stop_perch disk

free_port p
port[bad]=$p env[bad]="PERCH_DATABASE_URL=$dir/bad.db"
start_perch bad
# Two users, and 4 KB of message an event: the never-reading clients'
# user gets some 9 MB in the run, more than the server and the kernel
# buffer for one (1 MiB unsent, 4 MiB of send buffer at most here).
run_load bad-clients-sqlite -bases "$(url bad)" -db "$dir/bad.db" -users 2 -per-user 3 -bad -padding 3900 "${load_flags[@]}"
finish_load bad-clients-sqlite
stop_perch bad

# ---- three instances on a private PostgreSQL and Redis --------------------
free_port pgport
[ "$(id -u)" != 0 ] || chown postgres "$pgdir"
as_pg "$pgbin/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 --no-instructions >"$dir/initdb.log"
pg_up=1
as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w -t 60 \
  -o "-p $pgport -k $pgdir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
pg="postgres://postgres@127.0.0.1:$pgport/perch?sslmode=disable"
psql -q "postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable" -c 'CREATE DATABASE perch'

free_port redisport
redis=0
start_redis() {
  redis-server --port "$redisport" --bind 127.0.0.1 --save '' --appendonly no >>"$dir/redis.log" 2>&1 &
  redis=$!
  pids+=($redis)
  for _ in $(seq 100); do redis-cli -p "$redisport" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "redis-server did not start" >&2
  return 1
}
stop_redis() { kill -TERM $redis 2>/dev/null || true; wait $redis 2>/dev/null || true; }
start_redis

bases=""
for i in 1 2 3; do
  free_port p
  port[i$i]=$p env[i$i]="PERCH_DATABASE_URL=$pg PERCH_REDIS_URL=redis://127.0.0.1:$redisport/0"
  start_perch "i$i" # one at a time: the first migrates the schema
  bases+="${bases:+,}$(url "i$i")"
done
cluster=(-bases "$bases" -db "$pg" -users 6 -per-user 3 "${load_flags[@]}")

run_load kill-instance-pg "${cluster[@]}"
at 10
note "kill -9 instance 2"
stop_perch i2 KILL
at 20
start_perch i2
note "instance 2 started again"
finish_load kill-instance-pg

# Events go to instance 1 alone here: the clients of instances 2 and 3 learn
# of them only through Redis's wake-ups or, while it is down, the poll.
run_load redis-down-pg "${cluster[@]}" -post-to 1
at 5
stop_redis
note "Redis stopped"
at 15
note "/readyz of instance 1 answers $(readyz i1)"
at 25
start_redis
note "Redis started again (empty)"
finish_load redis-down-pg

run_load pg-restart "${cluster[@]}"
at 10
note "PostgreSQL restarting (pg_ctl restart -m fast)"
as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -m fast -w -t 60 restart >/dev/null
note "PostgreSQL is back"
finish_load pg-restart

# Events go to instances 1 and 2 (each publishing wake-ups that the pause
# holds up, as in the issue's finding), none to instance 3, whose clients
# depend on the wake-ups and the poll alone.
run_load redis-pause-pg "${cluster[@]}" -post-to 2
for t in 5 12 19; do
  at $t
  redis-cli -p "$redisport" CLIENT PAUSE 2000 WRITE >/dev/null
  note "CLIENT PAUSE 2000 WRITE on Redis"
done
finish_load redis-pause-pg

run_load sigterm-pg "${cluster[@]}"
at 10
seen=$(wc -l <"$dir/i3.log")
note "SIGTERM to instance 3"
stop_perch i3 # waits for the drain to end
note "instance 3 has exited; what it logged meanwhile:"
tail -n +$((seen + 1)) "$dir/i3.log" | cut -c1-240 | head -8 | sed 's/^/     /'
at 20
start_perch i3
note "instance 3 started again"
finish_load sigterm-pg

for i in 1 2 3; do stop_perch "i$i"; done
echo
echo "== summary ($((SECONDS - began)) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
cat "$dir/summary"
