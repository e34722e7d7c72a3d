#!/usr/bin/env bash
# The test suite on any machine with the Swift toolchain: installs the peers the tests run, then runs them.
#
#   scripts/test.sh                       # everything (what CI runs)
#   scripts/test.sh --filter TLSInterop   # the arguments go to `swift test`
#
# The suite talks to real programs: openssl, curl and python3 (TLS interop), redis-server, memcached and
# mosquitto (loadtest tcp and the mqtt-load example), prlimit (util-linux: an example server under a low
# descriptor limit), and Python's websockets package (the WebSocket tests' peer); building needs OpenSSL 3's
# headers. What is missing is installed: the distribution's packages with apt-get as root, or through sudo
# where it needs no password; websockets into a virtual environment of the suite's own, .build/test-venv
# (never into the system's Python), whose bin directory is then put first on PATH so that the tests'
# `python3` is the venv's. One line says what was installed, or what to run where nothing could be.
# Then `swift test`: XCTest's cases, then Swift Testing's (Tests/PerfTestExamples has both kinds, as a suite a
# user copies may), each runner with its own summary.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build
log=.build/test-setup.log
: >"$log"
venv=.build/test-venv
installed=()
missing=()

# A tool on PATH, or in the sbin directories an unprivileged PATH leaves out (Debian puts mosquitto there).
have() { PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" command -v "$1" >/dev/null 2>&1; }

# How this user may install the distribution's packages: as root, through passwordless sudo, or not at all.
apt=()
if command -v apt-get >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        apt=(sudo -n env DEBIAN_FRONTEND=noninteractive apt-get)
    fi
fi
apt_updated=false
# Installs Debian packages "$@" quietly (their output goes to the log); false when it cannot.
apt_install() {
    [ ${#apt[@]} -gt 0 ] || return 1
    if ! $apt_updated; then
        "${apt[@]}" update -qq >>"$log" 2>&1 || return 1
        apt_updated=true
    fi
    "${apt[@]}" install -y -qq --no-install-recommends "$@" >>"$log" 2>&1
}

# The distribution's packages: tool, then the Debian/Ubuntu package that brings it.
packages=()
[ -f /usr/include/openssl/ssl.h ] || packages+=(libssl-dev)
while read -r tool package; do
    have "$tool" || packages+=("$package")
done <<'EOF'
openssl openssl
curl curl
python3 python3
redis-server redis-server
memcached memcached
mosquitto mosquitto
prlimit util-linux
EOF
if [ ${#packages[@]} -gt 0 ]; then
    if apt_install "${packages[@]}"; then
        installed+=("${packages[@]}")
        hash -r
    else
        missing+=("${packages[*]} (apt-get install ${packages[*]}; Fedora/RHEL: dnf install, with openssl-devel for libssl-dev)")
    fi
fi

# Python's websockets, in the suite's own virtual environment. A venv whose interpreter is gone (its base
# Python was removed or upgraded) is made again.
venv_ok() { "$venv/bin/python3" -c 'import sys' >/dev/null 2>&1; }
if have python3; then
    if ! venv_ok; then
        rm -rf "$venv"
        # Debian's python3 makes a venv only with python3-venv (ensurepip) installed.
        if ! python3 -m venv "$venv" >>"$log" 2>&1; then
            rm -rf "$venv"
            if apt_install python3-venv && python3 -m venv "$venv" >>"$log" 2>&1; then
                installed+=(python3-venv)
            fi
        fi
    fi
    if venv_ok; then
        if ! "$venv/bin/python3" -c 'import websockets.asyncio.server' >/dev/null 2>&1; then
            if "$venv/bin/python3" -m pip install -q --disable-pip-version-check 'websockets>=13' >>"$log" 2>&1; then
                installed+=("websockets (into $venv)")
            else
                missing+=("websockets ($venv/bin/python3 -m pip install websockets failed: see $log)")
            fi
        fi
        export PATH="$PWD/$venv/bin:$PATH"
    else
        rm -rf "$venv"
        missing+=("a Python venv for websockets (apt-get install python3-venv, then run scripts/test.sh again)")
    fi
fi

if [ ${#missing[@]} -gt 0 ]; then
    printf -v text '%s; ' "${missing[@]}"
    echo "scripts/test.sh: could not install, so the tests that need them will fail: ${text%; }"
    [ -s "$log" ] && tail -n 5 "$log" | sed 's/^/  /'
elif [ ${#installed[@]} -gt 0 ]; then
    echo "scripts/test.sh: installed ${installed[*]}"
else
    echo "scripts/test.sh: every peer the tests need is installed"
fi
exec swift test "$@"
