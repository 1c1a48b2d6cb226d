#!/usr/bin/env bash
# Build the pinned Bochs (host/bochs/pinned.env) into the user's cache,
# once: $XDG_CACHE_HOME/ptilab/bochs-<commit> (default ~/.cache/ptilab),
# the place host/bochs looks first. A build whose commit and configure
# flags match pinned.env is reused; another is rebuilt.
#
# The source is $BOCHS_SOURCE: a tarball of Bochs's bochs/ tree at the
# pinned commit (checked against BOCHS_TARBALL_SHA256; CI uses the one in
# ../shared/vendor, having no network), or a git URL or directory of
# Bochs's repository, checked out at the commit (default
# https://github.com/bochs-emu/Bochs.git).
#
# Needs a C++ compiler, make and xz (git for a clone): `make deps`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
while IFS='=' read -r key value; do
	case $key in
	BOCHS_COMMIT) commit=$value ;;
	BOCHS_TARBALL_SHA256) sha256=$value ;;
	BOCHS_CONFIGURE) configure=$value ;;
	esac
done < <(grep -E '^[A-Z0-9_]+=' "$here/pinned.env")

cache=${XDG_CACHE_HOME:-$HOME/.cache}/ptilab
dest=$cache/bochs-${commit:0:12}
stamp="$commit $configure"
if [ -x "$dest/bin/bochs" ] && [ "$(cat "$dest/pinned" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

mkdir -p "$cache"
# One build at a time (parallel make targets, two checkouts).
exec 9>"$cache/bochs.lock"
flock 9
if [ -x "$dest/bin/bochs" ] && [ "$(cat "$dest/pinned" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

source=${BOCHS_SOURCE:-https://github.com/bochs-emu/Bochs.git}
work=$(mktemp -d "$cache/bochs-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build.sh: building Bochs ${commit:0:12} from $source into $dest (about two minutes)" >&2

case $source in
*.tar.xz | *.tar.gz | *.tgz | *.tar)
	got=$(sha256sum "$source" | cut -d' ' -f1)
	if [ "$got" != "$sha256" ]; then
		echo "build.sh: $source: SHA-256 $got, want $sha256 (host/bochs/pinned.env)" >&2
		exit 1
	fi
	mkdir "$work/src"
	tar -xf "$source" -C "$work/src" --strip-components=1
	tree=$work/src
	;;
*)
	git clone --quiet --no-checkout "$source" "$work/repo"
	git -C "$work/repo" checkout --quiet "$commit"
	tree=$work/repo/bochs
	;;
esac

# A new prefix per build, moved into place when complete: a failed or
# interrupted build leaves no half-installed Bochs behind.
prefix=$dest.new
rm -rf "$prefix"
# shellcheck disable=SC2086 # the flags are words
(cd "$tree" && ./configure --prefix="$dest" $configure >"$work/configure.log" 2>&1) ||
	{ tail -n 30 "$work/configure.log" >&2; exit 1; }
make -C "$tree" -j"$(nproc)" >"$work/make.log" 2>&1 ||
	{ tail -n 30 "$work/make.log" >&2; exit 1; }
make -C "$tree" install prefix="$prefix" >"$work/install.log" 2>&1 ||
	{ tail -n 30 "$work/install.log" >&2; exit 1; }
printf '%s\n' "$stamp" >"$prefix/pinned"
rm -rf "$dest"
mv "$prefix" "$dest"
echo "build.sh: Bochs ready: $dest/bin/bochs" >&2
