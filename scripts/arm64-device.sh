#!/usr/bin/env bash
# An emulated AArch64 device: an arm64 Debian userland with Python 3.11 and tunecli's base
# dependencies (the aarch64 wheels from PyPI), run by qemu-user on an x86-64 Linux host.
#
#   scripts/arm64-device.sh build                 build the root (idempotent: reuses the cache)
#   scripts/arm64-device.sh check                 exit 0 when qemu and a built root are present
#   scripts/arm64-device.sh python ARGS...        run the arm64 Python (tunecli from this checkout)
#   scripts/arm64-device.sh server ARGS...        run `tunecli server ARGS...` on the emulated board,
#                                                 e.g. server --tracker 127.0.0.1:9190 --key rk3399
#
# Needs: qemu-aarch64-static (Debian: apt-get install qemu-user-static), apt-get and dpkg (only
# to build the root; nothing is installed on the host), pip (to fetch the aarch64 wheels) and
# access to Debian's archive and PyPI. No chroot, no binfmt_misc, no root rights: arm64 .deb
# files are fetched with a private apt state and unpacked with `dpkg -x`, and qemu maps absolute
# paths into the root (-L). Child processes (the server's measurement worker) start through a
# small host-side launcher, so no binfmt registration is needed either.
#
# Environment:
#   TUNECLI_ARM64_CACHE   where the root lives (default ${XDG_CACHE_HOME:-~/.cache}/tunecli/arm64)
#   TUNECLI_ARM64_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   QEMU_AARCH64          the qemu-user binary (default: qemu-aarch64-static, then qemu-aarch64)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${TUNECLI_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tunecli/arm64}"
MIRROR="${TUNECLI_ARM64_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
ROOT="$CACHE/root"
SITE="$ROOT/opt/tunecli/site-packages"   # the wheels; tunecli itself comes from $REPO
LAUNCHER="$CACHE/bin/python3.11"
STAMP="$CACHE/.built"
# arm64 Debian packages: the interpreter and what the kernels link against (libgomp for parallel loops).
DEBS=(python3.11 libgomp1 libstdc++6)
# Bump when the recipe changes, so that an old cache is rebuilt.
RECIPE=1

die() { echo "arm64-device: $*" >&2; exit 1; }

qemu_bin() {
    if [[ -n "${QEMU_AARCH64:-}" ]]; then echo "$QEMU_AARCH64"; return; fi
    command -v qemu-aarch64-static || command -v qemu-aarch64 || return 1
}

# The base dependencies of tunecli (pyproject.toml's [project] dependencies), one per line.
base_requirements() {
    python3 - "$REPO/pyproject.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    deps = tomllib.load(f)["project"]["dependencies"]
# A device server never tunes: it needs the base dependencies but not the cost model's xgboost.
print("\n".join(d for d in deps if not d.startswith("xgboost")))
EOF
}

recipe_id() {
    { echo "recipe $RECIPE $SUITE $MIRROR"; printf '%s\n' "${DEBS[@]}"; base_requirements; } | sha256sum | cut -c1-16
}

apt_arm64() {
    local apt="$CACHE/apt"
    apt-get -q \
        -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
        -o Dir::State="$apt/state" -o Dir::State::Lists="$apt/lists" -o Dir::State::status="$apt/status" \
        -o Dir::Cache="$apt/cache" -o Dir::Etc::SourceList="$apt/sources.list" \
        -o Dir::Etc::SourceParts="$apt/sources.list.d" -o Dir::Etc::Preferences=/dev/null \
        -o Dir::Etc::PreferencesParts="$apt/preferences.d" -o APT::Sandbox::User=root \
        -o Debug::NoLocking=1 -o APT::Install-Recommends=0 "$@"
}

build_root() {
    command -v apt-get >/dev/null || die "apt-get is needed to fetch the arm64 packages"
    command -v dpkg >/dev/null || die "dpkg is needed to unpack the arm64 packages"
    local id; id="$(recipe_id)"
    if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$id" ]]; then
        echo "$ROOT"
        return
    fi
    local apt="$CACHE/apt" start=$SECONDS
    mkdir -p "$apt"/{state,lists/partial,cache/archives/partial,sources.list.d,preferences.d}
    : > "$apt/status"
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [[ -f "$keyring" ]] || die "$keyring is missing (apt-get install debian-archive-keyring)"
    cat > "$apt/sources.list" <<EOF
deb [arch=arm64 signed-by=$keyring] $MIRROR $SUITE main
deb [arch=arm64 signed-by=$keyring] $MIRROR $SUITE-updates main
EOF
    echo "arm64-device: fetching arm64 packages (${DEBS[*]} and their dependencies)" >&2
    apt_arm64 update >&2
    apt_arm64 install -y --download-only "${DEBS[@]}" >&2
    rm -rf "$ROOT.tmp"
    mkdir -p "$ROOT.tmp"
    local deb
    for deb in "$apt"/cache/archives/*.deb; do
        dpkg -x "$deb" "$ROOT.tmp"
    done
    [[ -x "$ROOT.tmp/usr/bin/python3.11" ]] || die "python3.11 is missing from the unpacked packages"
    # Keep the guest away from the host's Python packages: these paths exist in the root, so qemu
    # maps them there instead of to the host.
    mkdir -p "$ROOT.tmp/usr/local/lib/python3.11/dist-packages" "$ROOT.tmp/usr/lib/python3/dist-packages"
    echo "arm64-device: fetching the aarch64 wheels of tunecli's dependencies" >&2
    local -a reqs
    mapfile -t reqs < <(base_requirements)
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-compile --target "$ROOT.tmp/opt/tunecli/site-packages" \
        --platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64 --platform linux_aarch64 \
        --implementation cp --python-version 3.11 --abi cp311 --only-binary=:all: "${reqs[@]}" >&2
    # Byte-compile with the host's Python 3.11 (the same bytecode), which is much faster than
    # letting the emulated interpreter compile the standard library on every first import.
    python3 -m compileall -q -j 0 "$ROOT.tmp/usr/lib/python3.11" "$ROOT.tmp/opt/tunecli/site-packages" \
        >/dev/null 2>&1 || true
    rm -rf "$ROOT"
    mv "$ROOT.tmp" "$ROOT"
    write_launcher
    echo "$id" > "$STAMP"
    echo "arm64-device: root built in $((SECONDS - start)) s, $(du -sh "$ROOT" | cut -f1) ($ROOT)" >&2
    echo "$ROOT"
}

# A host-side script that runs the arm64 Python under qemu; it is the guest's sys.executable
# (qemu's -0 sets argv[0]), so the server's worker processes start through it as well.
write_launcher() {
    local qemu; qemu="$(qemu_bin)" || die "qemu-aarch64-static not found (apt-get install qemu-user-static)"
    mkdir -p "$(dirname "$LAUNCHER")"
    cat > "$LAUNCHER.tmp" <<EOF
#!/bin/sh
# Runs the emulated arm64 Python of $ROOT (written by scripts/arm64-device.sh).
exec "$qemu" -L "$ROOT" -0 "$LAUNCHER" "$ROOT/usr/bin/python3.11" "\$@"
EOF
    chmod +x "$LAUNCHER.tmp"
    mv "$LAUNCHER.tmp" "$LAUNCHER"
}

check() {
    qemu_bin >/dev/null || die "qemu-aarch64-static not found (apt-get install qemu-user-static)"
    [[ -f "$STAMP" && "$(cat "$STAMP")" == "$(recipe_id)" ]] || die "no arm64 root built in $CACHE (run: $0 build)"
}

run_python() {
    check
    [[ -x "$LAUNCHER" ]] || write_launcher
    export PYTHONPATH="$REPO:$SITE"
    export PYTHONNOUSERSITE=1
    unset PYTHONHOME
    exec "$LAUNCHER" "$@"
}

case "${1:-build}" in
    build) build_root ;;
    check) check ;;
    python) shift; run_python "$@" ;;
    server) shift; run_python -c 'from tunecli.commands import main; main()' server "$@" ;;
    root) echo "$ROOT" ;;
    *) die "unknown command ${1} (build, check, python, server, root)" ;;
esac
