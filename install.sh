#!/usr/bin/env bash
# Builds flowrun as a static release binary and installs it with its man page,
# shell completions and editor schema:
#
#   ./install.sh                  # under ~/.local
#   ./install.sh --prefix DIR     # under DIR (e.g. /usr/local, as root)
#
#   PREFIX/bin/flowrun
#   PREFIX/share/man/man1/flowrun.1
#   PREFIX/share/bash-completion/completions/flowrun
#   PREFIX/share/zsh/site-functions/_flowrun
#   PREFIX/share/fish/vendor_completions.d/flowrun.fish
#   PREFIX/share/flowrun/flowrun.schema.json
#
# The binary links the Swift runtime, Foundation and Dispatch statically
# (--static-swift-stdlib), and libstdc++ and libgcc where the compiler has
# their archives, so it runs where no Swift toolchain is installed;
# the install stops if `ldd` still finds a Swift library (or one of those). `flowrun --version`
# names the commit it was built from (passed to the compiler here, so a plain
# `swift build` needs neither git nor a generated file).
set -euo pipefail

prefix_given=false
prefix=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a folder" >&2; exit 2; }; prefix="$2"; prefix_given=true; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; prefix_given=true; shift ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (usage: ./install.sh [--prefix DIR])" >&2; exit 2 ;;
  esac
done
if ! "$prefix_given"; then
  [ -n "${HOME:-}" ] || { echo "install.sh: HOME is not set; name a folder with --prefix DIR" >&2; exit 2; }
  prefix="$HOME/.local"
fi
[ -n "$prefix" ] || { echo "install.sh: --prefix needs a folder, found an empty value" >&2; exit 2; }
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
cd "$(dirname "$0")"

commit=""
if git rev-parse --git-dir >/dev/null 2>&1; then
  commit=$(git rev-parse --short=12 HEAD)
  git diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
fi

# The Swift runtime's C++ library (libstdc++) and libgcc linked in too:
# loading and relocating them was a sixth of `flowrun --version`'s CPU and a
# fifth of its page faults (docs/BENCHMARKS.md, "The no-op run"). The
# runtime's link line names -lstdc++; a folder holding only the static
# archive, searched first (-L), makes that the archive. libyaml the same
# way (CYaml names -lyaml): one library fewer to find, map and relocate.
static_cxx_flags=()
static_yaml=false
mkdir -p .build/static-libs
archive=$(c++ -print-file-name=libstdc++.a 2>/dev/null || true)
if [ -f "$archive" ]; then
  ln -sf "$archive" .build/static-libs/libstdc++.a
  static_cxx_flags=(-Xswiftc -Xclang-linker -Xswiftc -static-libgcc)
fi
archive=$(c++ -print-file-name=libyaml.a 2>/dev/null || true)
if [ -f "$archive" ]; then
  ln -sf "$archive" .build/static-libs/libyaml.a
  # CYaml finds libyaml through pkg-config, whose -L comes first on the link
  # line: a yaml-0.1.pc of our own names the folder with the archive.
  printf '%s\n' "Name: LibYAML" "Description: libyaml, linked in by install.sh" "Version: 0" \
    "Cflags: -I/usr/include" "Libs: -L$PWD/.build/static-libs -lyaml" > .build/static-libs/yaml-0.1.pc
  static_cxx_flags+=(--pkg-config-path "$PWD/.build/static-libs")
  static_yaml=true
fi
static_cxx_flags+=(-Xswiftc "-L$PWD/.build/static-libs")

# No symbol exported: SwiftPM links executables with --export-dynamic, which
# put 5,663 of flowrun's own symbols in the dynamic symbol table. The Swift
# runtime looks its own path up with dladdr at every start, which walks that
# table (200,000 instructions), and the loader's lookups for libc probe it.
# Nothing looks a symbol of flowrun up by name; .symtab keeps them all.
export_flags=(-Xlinker "--version-script=$PWD/scripts/no-exports.map")

# The functions flowrun's everyday commands run, laid out together: one
# section a function, ordered by scripts/startup-order.txt (gold's
# --section-ordering-file). A no-op run took 404 page faults, now 353; the
# code it runs was spread over 13 MB (docs/BENCHMARKS.md, "Start-up functions
# laid out together"). Without gold the build is the same, only unordered.
order_flags=()
if command -v ld.gold >/dev/null 2>&1 && [ -f scripts/startup-order.txt ]; then
  order_flags=(-Xswiftc -use-ld=gold -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections
               -Xlinker "--section-ordering-file=$PWD/scripts/startup-order.txt")
fi

echo "install.sh: building a static release binary (commit ${commit:-unknown})"
# --disable-local-rpath: no RUNPATH $ORIGIN — the binary needs no library of
# its own, and the loader searched 11 folders beside it for libyaml and libm
# (22 failed system calls) at every start, `--version` and completion included.
swift build -c release --static-swift-stdlib --disable-local-rpath --product flowrun -Xcc "-DFLOWRUN_COMMIT=\"$commit\"" "${static_cxx_flags[@]}" "${order_flags[@]}" "${export_flags[@]}"
binary="$(swift build -c release --static-swift-stdlib --show-bin-path)/flowrun"

# What ldd lists must be the system's C libraries only.
needless='libswift|libFoundation|libdispatch|libBlocksRuntime|lib_FoundationICU'
[ -e .build/static-libs/libstdc++.a ] && needless="$needless|libstdc\+\+|libgcc_s"
"$static_yaml" && needless="$needless|libyaml"
if swift_libraries=$(ldd "$binary" | grep -E "$needless"); then
  echo "install.sh: $binary still needs Swift libraries:" >&2
  echo "$swift_libraries" >&2
  exit 1
fi

install -d "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
  "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d" "$prefix/share/flowrun"
install -m 755 "$binary" "$prefix/bin/flowrun"
install -m 644 man/flowrun.1 "$prefix/share/man/man1/flowrun.1"
install -m 644 schema/flowrun.schema.json "$prefix/share/flowrun/flowrun.schema.json"
"$prefix/bin/flowrun" --generate-completion-script bash > "$prefix/share/bash-completion/completions/flowrun"
"$prefix/bin/flowrun" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_flowrun"
"$prefix/bin/flowrun" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/flowrun.fish"

echo "install.sh: installed $("$prefix/bin/flowrun" --version) under $prefix"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "install.sh: add $prefix/bin to PATH" ;; esac
