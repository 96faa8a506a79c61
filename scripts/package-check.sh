#!/usr/bin/env bash
# scripts/package-check.sh: CI's check of the release (.ci/run). It builds
# it (scripts/release.sh), checks SHA256SUMS, installs this machine's .deb,
# runs /usr/bin/perch version, starts the packaged server as perch.service
# would (as the user perch, in /var/lib/perch, with /etc/perch/perch.env, but
# on a port the kernel picks), waits for /healthz (30 s at most), stops it,
# and purges the package. Needs root and a machine where perch is not
# installed; it works without systemd (it starts the server itself).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
	echo "package-check: FAILED: $*" >&2
	exit 1
}
step() { printf 'package-check: %s\n' "$*"; }

[ "$(id -u)" -eq 0 ] || fail "must run as root: it installs the .deb with dpkg -i"
if dpkg-query -W -f='${db:Status-Status}' perch 2>/dev/null | grep -qv '^not-installed$'; then
	fail "a perch package is on this machine already (dpkg -l perch); this check installs and purges its own, so remove that one first (dpkg --purge perch deletes /var/lib/perch)"
fi
[ ! -e /var/lib/perch ] || fail "/var/lib/perch exists; the purge at the end of this check would delete it"

started=$SECONDS
version=$(git describe --tags --always --dirty)
scripts/release.sh "$version" || fail "scripts/release.sh $version failed"
built=$SECONDS

(cd dist && sha256sum --check --strict --quiet SHA256SUMS) || fail "dist/SHA256SUMS does not match the files"

arch=$(dpkg --print-architecture)
debs=(dist/perch_*_"$arch".deb)
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
	fail "want one dist/perch_*_$arch.deb, found: ${debs[*]}"
fi
deb=${debs[0]}

server=""
cleanup() {
	if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
		kill -KILL "$server" 2>/dev/null || true
	fi
	if dpkg-query -W perch >/dev/null 2>&1; then
		dpkg --purge perch >/dev/null 2>&1 || echo "package-check: dpkg --purge perch failed; remove it by hand" >&2
	fi
	rm -rf "$work"
}
work=$(mktemp -d)
trap cleanup EXIT

step "dpkg -i $deb"
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i $deb failed (its output is above)"; }

getent passwd perch >/dev/null || fail "the postinst made no user perch"
for want in "/usr/bin/perch 755 root:root" "/lib/systemd/system/perch.service 644 root:root" \
	"/etc/perch/perch.env 640 root:perch" "/var/lib/perch 750 perch:perch"; do
	read -r path mode owner <<<"$want"
	got=$(stat -c '%a %U:%G' "$path" 2>/dev/null) || fail "$path is missing after dpkg -i"
	[ "$got" = "$mode $owner" ] || fail "$path is $got, want $mode $owner"
done
grep -qx /etc/perch/perch.env /var/lib/dpkg/info/perch.conffiles || fail "/etc/perch/perch.env is not a conffile"

step "/usr/bin/perch version"
/usr/bin/perch version | tee "$work/version"
[ "$(head -1 "$work/version")" = "perch $version" ] || fail "perch version's first line is not \"perch $version\""
grep -qx "os/arch: linux/$arch" "$work/version" || fail "perch version does not say os/arch: linux/$arch"

# The unit's environment: the file's KEY=value lines (as systemd reads them:
# no quotes here, no expansion), then the port. Nothing else is inherited.
envs=(PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/var/lib/perch USER=perch LOGNAME=perch)
while IFS= read -r line; do
	case $line in '' | '#'* | ';'*) continue ;; esac
	envs+=("$line")
done </etc/perch/perch.env
envs+=(PERCH_LISTEN=127.0.0.1:0)

step "perch serve as perch, with /etc/perch/perch.env and PERCH_LISTEN=127.0.0.1:0"
(cd /var/lib/perch && exec setpriv --reuid=perch --regid=perch --init-groups \
	env -i "${envs[@]}" /usr/bin/perch serve) >"$work/serve.log" 2>&1 &
server=$!

# The address is in the first line perch serve prints; then /healthz.
deadline=$((SECONDS + 30))
addr="" answer=""
while [ $SECONDS -lt $deadline ]; do
	kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; fail "perch serve exited (its output is above)"; }
	if [ -z "$addr" ]; then
		addr=$(sed -n 's|^perch listening on http://\([^ ]*\) .*|\1|p' "$work/serve.log")
	elif answer=$(curl -fsS --max-time 2 "http://$addr/healthz" 2>/dev/null); then
		break
	fi
	sleep 0.2
done
[ -n "$answer" ] || { cat "$work/serve.log" >&2; fail "no answer from /healthz within 30 s (address: ${addr:-never printed}; the server's output is above)"; }
step "GET http://$addr/healthz: $answer"
[ "$(stat -c %U /var/lib/perch/perch.db)" = perch ] || fail "/var/lib/perch/perch.db is not the user perch's"

kill -TERM "$server"
status=0
wait "$server" || status=$?
server=""
[ "$status" -eq 0 ] || { cat "$work/serve.log" >&2; fail "perch serve exited $status on SIGTERM, not 0"; }

step "dpkg --purge perch"
dpkg --purge perch >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg --purge perch failed"; }
for gone in /usr/bin/perch /lib/systemd/system/perch.service /etc/perch/perch.env /var/lib/perch; do
	[ ! -e "$gone" ] || fail "$gone is still there after dpkg --purge perch"
done

step "passed: release built in $((built - started)) s, the whole check $((SECONDS - started)) s"
