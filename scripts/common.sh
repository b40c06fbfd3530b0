# SPDX-License-Identifier: BSD-3-Clause
# Shared by scripts/demo and scripts/test: install what is missing, build.
# EVD_BUILD_DIR: the build directory (default: build/ in the source tree;
# the sanitizer builds go beside it, with -asan and -tsan appended).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${EVD_BUILD_DIR:-$top/build}

# Debian packages the build needs (the demo, the benchmarks), and those only
# the test suite needs besides (model checking, fuzzing, cppcheck, the API
# reference).
build_packages=(build-essential meson ninja-build pkg-config libdpdk-dev dpdk-dev libibverbs-dev
	libpcap-dev python3)
test_packages=(spin clang libclang-rt-14-dev cppcheck doxygen)

have_build() {
	command -v cc >/dev/null && command -v meson >/dev/null && command -v ninja >/dev/null &&
		command -v pkg-config >/dev/null && command -v python3 >/dev/null &&
		command -v dpdk-telemetry.py >/dev/null && command -v make >/dev/null &&
		pkg-config --exists libdpdk && pkg-config --exists libibverbs &&
		pkg-config --exists libpcap
}

have_all() {
	have_build && command -v spin >/dev/null && command -v clang >/dev/null &&
		command -v cppcheck >/dev/null && command -v doxygen >/dev/null &&
		command -v readelf >/dev/null && command -v objdump >/dev/null &&
		compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null
}

# apt-get, waiting up to 10 minutes for a dpkg lock another process holds
# (a fresh machine's apt-daily or packagekit may be running at boot)
apt_get() {
	apt-get -o DPkg::Lock::Timeout=600 "$@"
}

# ensure_deps [--build-only]: install what is missing: the build's packages,
# and with no argument the test suite's too
ensure_deps() {
	local check=have_all packages=("${build_packages[@]}" "${test_packages[@]}")

	if [ "${1:-}" = --build-only ]; then
		check=have_build
		packages=("${build_packages[@]}")
	fi
	if $check; then
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "evd: missing dependencies; as root run:" >&2
		echo "  apt-get update && apt-get install -y ${packages[*]}" >&2
		exit 1
	fi
	echo "evd: installing ${packages[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt_get update -qq
	apt_get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
	$check || { echo "evd: dependencies still missing after apt-get" >&2; exit 1; }
}

# ensure_tun: the tap tests (net_tap) need /dev/net/tun; as root, load the
# module where it is not (best effort: a test without it says so and skips)
ensure_tun() {
	[ -e /dev/net/tun ] || [ "$(id -u)" -ne 0 ] && return 0
	modprobe tun 2>/dev/null || true
	if [ ! -e /dev/net/tun ] && [ -e /sys/class/misc/tun/dev ]; then
		mkdir -p /dev/net && mknod /dev/net/tun c 10 200 2>/dev/null || true
	fi
	return 0
}

# apt_install PKG...: for the benchmarks' extra tools (valgrind, dpdk-doc).
apt_install() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "evd: $* missing; as root run: apt-get install -y $*" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt_get install -y -qq --no-install-recommends "$@" >/dev/null ||
		{ apt_get update -qq && apt_get install -y -qq --no-install-recommends "$@" >/dev/null; }
}

# header SCRIPT: its header comment (after the SPDX line), the text of its
# --help and usage messages
header() {
	awk 'NR >= 3 && /^#/ { sub(/^# ?/, ""); print; next } NR >= 3 { exit }' "$1"
}

# quietly DESCRIPTION CMD...: run CMD with its output kept aside; on failure
# show it (meson prints its errors on stdout) and stop, with status
# $quiet_status (1; 3 where a script's 1 means lost packets).
quiet_status=1
quietly() {
	local what=$1 out
	shift
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "evd: $what failed: $*" >&2
		exit "$quiet_status"
	fi
}

# setup_build DIR [meson options...]: configure DIR, or reconfigure it (so
# that options changed here take effect in a build directory already there).
setup_build() {
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		quietly "meson setup" meson setup --reconfigure "$dir" "$top" "$@"
	else
		quietly "meson setup" meson setup "$dir" "$top" "$@"
	fi
}

build_evd() {
	setup_build "$build" "$@"
	ninja -C "$build"
}

# build_evd_quiet: the same, its output shown only if the build fails
# (ninja prints its FAILED lines and the compiler's errors on stdout), with
# status 3: the scripts that use it (fwd-pair, ethdev-demo, bench) keep 1
# for lost packets
build_evd_quiet() {
	local quiet_status=3
	setup_build "$build" "$@"
	quietly "the build" ninja -C "$build"
}
