# c-echo-lib.sh: sourced by the callgrind counting scripts. `c_echo_setup NAME TARGET...` makes a scratch
# directory ($TMP, removed at exit with any server still running), copies ../shared/reference/c-echo (or
# C_REF_DIR) into it and builds TARGETs there, so the shared reference stays read-only.
c_echo_setup() {
    local name=$1; shift
    HERE="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
    C_REF_DIR="${C_REF_DIR:-$HERE/../../../shared/reference/c-echo}"
    TMP="$(mktemp -d "/tmp/$name.XXXXXX")"
    trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
    cp -r "$C_REF_DIR" "$TMP/c-echo" && chmod -R u+w "$TMP/c-echo"
    make -s -C "$TMP/c-echo" "$@" >/dev/null
}
