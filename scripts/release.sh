#!/usr/bin/env bash
# scripts/release.sh [VERSION]: the release, in dist/ (emptied first):
#
#   perch_V_OS_ARCH.tar.gz    linux and darwin, amd64 and arm64
#   perch_V_windows_ARCH.zip  windows, amd64 and arm64
#   perch_DEBV_ARCH.deb       linux amd64 and arm64: /usr/bin/perch, perch.service
#   SHA256SUMS
#
# V is VERSION without a leading v; DEBV is its Debian form (debian_version).
# VERSION defaults to git describe --tags --always --dirty. Every binary is
# static (CGO_ENABLED=0, so macOS's has no tray: perch tray says so), built
# with -trimpath and stamped with the version and commit (perch version).
# Every archive's entries carry the commit's time and root as owner, so the
# same commit gives the same files. Needs: go, tar, gzip, zip, dpkg-deb.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
	echo "release.sh: $*" >&2
	exit 1
}

# debian_version VERSION prints the Debian form of a git version: no leading
# v; a pre-release's hyphen becomes ~ (1.3.0-rc1 → 1.3.0~rc1, which sorts
# before 1.3.0); commits after a tag become +N.gHASH (1.3.0-4-gabc1234 →
# 1.3.0+4.gabc1234, after it); -dirty becomes +dirty; an untagged commit
# (abc1234) becomes 0~git.abc1234, below every release.
debian_version() {
	local v=${1#v} dirty=""
	if [[ $v == *-dirty ]]; then
		v=${v%-dirty}
		dirty="+dirty"
	fi
	if [[ $v =~ ^(.+)-([0-9]+)-(g[0-9a-f]+)$ ]]; then
		v="${BASH_REMATCH[1]//-/"~"}+${BASH_REMATCH[2]}.${BASH_REMATCH[3]}"
	else
		v=${v//-/"~"}
	fi
	[[ $v =~ ^[0-9] ]] || v="0~git.$v"
	v+=$dirty
	[[ $v =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || return 1
	printf '%s\n' "$v"
}

version=${1:-$(git describe --tags --always --dirty)}
[[ $version =~ ^v?[0-9A-Za-z][0-9A-Za-z.+~-]*$ ]] ||
	fail "VERSION $version: want letters, digits and . + ~ - only, e.g. v1.2.3 or v1.3.0-rc1"
debversion=$(debian_version "$version") || fail "VERSION $version has no Debian form"
name_version=${version#v}
commit=$(git rev-parse --short=12 HEAD)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}

for tool in go tar gzip zip dpkg-deb sha256sum; do
	command -v "$tool" >/dev/null || fail "needs $tool (Debian: apt-get install zip dpkg)"
done

dist=dist
rm -rf "$dist"
mkdir -p "$dist"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

ldflags="-s -w -X main.version=$version -X main.commit=$commit"
targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
docs=(README.md)
[ -f LICENSE ] && docs+=(LICENSE)

# Archive entries: sorted, owned by root, dated at the commit.
tar_flags=(--sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH")

# deb ARCH BINARY builds the .deb of linux/ARCH from a staging tree.
deb() {
	local arch=$1 bin=$2 root="$stage/deb-$1"
	install -D -m 0755 "$bin" "$root/usr/bin/perch"
	install -D -m 0644 packaging/deb/perch.service "$root/lib/systemd/system/perch.service"
	# 0640: the postinst gives it to the perch group once that exists.
	install -D -m 0640 packaging/deb/perch.env "$root/etc/perch/perch.env"
	install -D -m 0644 "${docs[@]}" -t "$root/usr/share/doc/perch/"
	install -d "$root/DEBIAN"
	install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$root/DEBIAN/"
	echo /etc/perch/perch.env >"$root/DEBIAN/conffiles"
	cat >"$root/DEBIAN/control" <<-EOF
		Package: perch
		Version: $debversion
		Architecture: $arch
		Maintainer: ${PERCH_DEB_MAINTAINER:-Perch developers <perch@perch.invalid>}
		Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
		Section: net
		Priority: optional
		Homepage: https://github.com/perch-dev/perch
		Description: self-hostable notification service
		 Perch receives events from the systems a team already runs (PagerDuty,
		 GitHub, Datadog, or anything that can POST JSON) and pushes each one,
		 at once, to the desktop menu bar of the user, team or organisation it
		 is for. This package runs the server as the systemd service perch
		 (settings in /etc/perch/perch.env, data in /var/lib/perch); the same
		 binary is the client (perch login, perch listen, perch tray).
	EOF
	find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	# gzip, not dpkg-deb's xz: every dpkg reads it, and it takes a second.
	dpkg-deb --root-owner-group -Zgzip --build "$root" "$dist/perch_${debversion}_${arch}.deb" >/dev/null
	echo "deb   $dist/perch_${debversion}_${arch}.deb"
}

# build TARGET builds the binary of GOOS/GOARCH and its archive, and the
# .deb of a linux one.
build() {
	local goos=${1%/*} goarch=${1#*/} exe=perch
	[ "$goos" = windows ] && exe=perch.exe
	local dir="perch_${name_version}_${goos}_${goarch}"
	mkdir -p "$stage/$dir"
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -ldflags "$ldflags" -o "$stage/$dir/$exe" ./cmd/perch
	echo "build $1: $(stat -c %s "$stage/$dir/$exe") bytes"
	cp "${docs[@]}" "$stage/$dir/"
	touch -d "@$SOURCE_DATE_EPOCH" "$stage/$dir" "$stage/$dir"/*
	if [ "$goos" = windows ]; then
		(cd "$stage" && TZ=UTC zip -q -X -r "$OLDPWD/$dist/$dir.zip" "$dir")
	else
		tar -C "$stage" "${tar_flags[@]}" -cf - "$dir" | gzip -n >"$dist/$dir.tar.gz"
	fi
	if [ "$goos" = linux ]; then
		deb "$goarch" "$stage/$dir/perch"
	fi
}

# The targets, as many at a time as there are processors: a warm build is
# mostly linking and compressing, one processor each.
pids=()
for target in "${targets[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do
		wait -n || true # each job's status is read below
	done
	build "$target" &
	pids+=("$!")
done
failed=()
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || failed+=("${targets[$i]}")
done
[ ${#failed[@]} -eq 0 ] || fail "building ${failed[*]} failed (the output above says why)"

(cd "$dist" && sha256sum -- *.tar.gz *.zip *.deb >SHA256SUMS)
echo "release $version (commit $commit) in $dist/:"
(cd "$dist" && stat -c '  %10s  %n' -- *.tar.gz *.zip *.deb SHA256SUMS)
