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

# docs/<name>.md named in code and scripts. One grep over every file, not
# one per file: forks are most of this script's time on a loaded machine.
while IFS=: read -r f ref; do
  [ -e "$ref" ] || fail "$f" "names $ref, which does not exist"
done < <(grep -oHE '\bdocs/[A-Za-z0-9_./-]+\.md' $code | sort -u)

# Files of the tree named by their path (libbus/src/view.c, deploy/policy.c)
# in code, scripts and documents: a comment that names a file moved away
# misleads its reader.
dirs='libbus|services|edge|netrelay|podnet|cli|deploy|replay|schema|sshwire|tests|bench|fuzz|ops|broker-config|examples|docs'
while IFS=: read -r f ref; do
  [ -e "$ref" ] || fail "$f" "names $ref, which does not exist"
done < <(grep -oHE "\b($dirs)/[A-Za-z0-9_./-]+\.(c|h|md|py|sh|yaml|in)\b" \
  $docs $code | sort -u)

# Nothing points outside the tree: each file's first such line.
while IFS=: read -r f line; do
  case $f in ./tests/docs_refs.sh) continue ;; esac
  fail "$f" "refers to a document outside the tree: $line"
done < <(grep -nHE '\.\./shared|\bDESIGN\.md\b|\bSTYLE\.md\b' $docs $code |
  sort -s -t: -k1,1 -u)

[ $bad = 0 ] && echo "every referenced document exists"
exit $bad
