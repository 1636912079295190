#!/usr/bin/env bash
# Every document the tree points at exists: markdown links between the
# README and docs/ (and each part's README), with their #anchors, each
# `docs/<name>.md` named in code, scripts and build files, and each file
# of the tree named by its path. The tree stands on its own, so a
# reference that leaves it is an error too.
#
#   tests/docs_refs.sh [SOURCE_DIR]     exit 0 when every one resolves
set -uo pipefail
cd "${1:-$(dirname "$0")/..}" || exit 2
bad=0
fail() { echo "$1: $2" >&2; bad=1; }

# GitHub's anchor for a heading: lower case, punctuation dropped, spaces
# as dashes.
anchors() {
  sed -n 's/^#\{1,6\} \(.*\)$/\1/p' "$1" |
    tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

docs=$(find . -name '*.md' -not -path './build/*' -not -path './.git/*' \
  -not -path '*/node_modules/*' | sort)
code=$(find . \( -name '*.c' -o -name '*.h' -o -name '*.py' -o -name '*.sh' \
  -o -name 'CMakeLists.txt' -o -name '*.cmake' -o -path './ops/*' \
  -o -path './tests/golden/record' \) -type f -not -path './build/*' \
  -not -path './.git/*' | sort)

# Markdown links to other files of the tree.
for md in $docs; do
  dir=$(dirname "$md")
  grep -oE '\]\([^)[:space:]]+\)' "$md" | sed 's/^](//; s/)$//' |
    while read -r link; do
      case $link in http://* | https://* | mailto:* | '#'*) continue ;; esac
      path=${link%%#*}
      anchor=${link#"$path"}
      anchor=${anchor#\#}
      target=$dir/$path
      if [ ! -e "$target" ]; then
        echo "$md: link to $link: no such file" >&2
        echo x
      elif [ -n "$anchor" ] && [ "${path##*.}" = md ] &&
        ! grep -qx -- "$anchor" <<<"$(anchors "$target")"; then
        echo "$md: link to $link: no such heading in $path" >&2
        echo x
      fi
    done | grep -c x >/dev/null && bad=1
done

# docs/<name>.md named in code and scripts.
for f in $code; do
  for ref in $(grep -oE '\bdocs/[A-Za-z0-9_./-]+\.md' "$f" | sort -u); do
    [ -e "$ref" ] || fail "$f" "names $ref, which does not exist"
  done
done

# Files of the tree named by their path (libbus/src/view.c, deploy/policy.c)
# in code, scripts and documents: a comment that names a file moved away
# misleads its reader.
dirs='libbus|services|edge|netrelay|podnet|cli|deploy|replay|schema|sshwire|tests|bench|fuzz|ops|broker-config|examples|docs'
for f in $docs $code; do
  for ref in $(grep -ohE "\b($dirs)/[A-Za-z0-9_./-]+\.(c|h|md|py|sh|yaml|in)\b" "$f" |
    sort -u); do
    [ -e "$ref" ] || fail "$f" "names $ref, which does not exist"
  done
done

# Nothing points outside the tree.
for f in $docs $code; do
  case $f in ./tests/docs_refs.sh) continue ;; esac
  if grep -nE '\.\./shared|\bDESIGN\.md\b|\bSTYLE\.md\b' "$f" >/dev/null; then
    fail "$f" "refers to a document outside the tree: $(grep -nE \
      '\.\./shared|\bDESIGN\.md\b|\bSTYLE\.md\b' "$f" | head -1)"
  fi
done

[ $bad = 0 ] && echo "every referenced document exists"
exit $bad
