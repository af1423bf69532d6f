# Sourced by tests/sanitize.sh and tests/tsan.sh: a sanitized build goes
# into a temporary copy of the tree, so the normal build is left alone,
# and the run's reports are shown at the end. The caller sets `root` (the
# tree) and `py` (the interpreter).

# sanitizer_runtime SCRIPT LIB PACKAGE: prints gcc's LIB (libasan.so,
# libtsan.so), or says what to install and exits 2.
sanitizer_runtime() {
    local lib
    lib=$(gcc -print-file-name="$2")
    if [ ! -e "$lib" ]; then
        echo "$1: gcc has no $2 (install gcc's sanitizer" \
             "runtime, Debian: $3)" >&2
        exit 2
    fi
    echo "$lib"
}

# sanitizer_build SCRIPT WHAT SANITIZE: copies the sources to a new
# `work` directory (removed at exit) and builds the extension there with
# TFMINI_SANITIZE=SANITIZE; on failure shows the build log's tail.
sanitizer_build() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/tfmini-${1%.sh}.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    cp -r "$root/csrc" "$root/include" "$root/tfmini" "$root/tests" "$root/setup.py" \
          "$root/pyproject.toml" "$work/"
    [ -f "$root/README.md" ] && cp "$root/README.md" "$work/"
    find "$work/tfmini" \( -name '*.so' -o -name __pycache__ \) -prune \
         -exec rm -rf {} +
    rm -rf "$work/tests/c/build"

    echo "$1: building with -fsanitize=$2 in $work"
    (cd "$work" && TFMINI_SANITIZE=$3 "$py" setup.py -q build_ext \
         --inplace >build.log 2>&1) || { tail -40 "$work/build.log"; exit 1; }
}

# sanitizer_exit STATUS TITLE LINES: shows the first LINES lines of each
# report in $work/reports and exits with STATUS, or 1 where STATUS is 0
# but a report was written (a report fails the run).
sanitizer_exit() {
    local status=$1 f
    for f in "$work"/reports/*; do
        [ -e "$f" ] || continue
        echo "==== $2 report $(basename "$f")"
        head -"$3" "$f"
        [ "$status" -ne 0 ] || status=1
    done
    exit "$status"
}
