#!/usr/bin/env bash
# The documentation: README.md is a hub of at most 200 lines that links every page of docs/;
# every relative link in README.md and docs/*.md reaches a file that exists, and every #anchor
# into a markdown file a heading that exists there (GitHub's rule: lowercase, punctuation other
# than hyphens, underscores and spaces dropped, spaces to hyphens, -1, -2, ... for repeats);
# every page of docs/ starts with a "# Title" line; and docs/options.md is what
# docs/generate_options.sh makes from the executables in bin/ now (skipped, saying so, when
# bin/ has not been built). Needs no MPI and no build beyond bin/.
# Usage: bash tests/docs_tests.sh. Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

# Non-ASCII letters in headings count as letters, as GitHub counts them.
locale -a 2>/dev/null | grep -qix 'c\.utf-\?8' && export LC_ALL=C.UTF-8

max_readme_lines=200
pages=(docs/*.md)

# links FILE: "LINE<TAB>TARGET" for each markdown link [text](TARGET) outside fenced code blocks
# and inline code spans.
links() {
  awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      while (match(line, /\]\([^)]+\)/)) {
        target = substr(line, RSTART + 2, RLENGTH - 3)
        sub(/[ \t].*/, "", target)
        print FNR "\t" target
        line = substr(line, RSTART + RLENGTH)
      }
    }' "$1"
}

# anchors FILE: the anchor of every heading outside fenced code blocks, one a line.
anchors() {
  local heading slug
  local -A seen=()
  while IFS= read -r heading; do
    slug=${heading,,}
    slug=${slug//[^[:alnum:] _-]/}
    slug=${slug// /-}
    if [[ -n ${seen[$slug]+x} ]]; then
      seen[$slug]=$((seen[$slug] + 1))
      echo "$slug-${seen[$slug]}"
    else
      seen[$slug]=0
      echo "$slug"
    fi
  done < <(awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    /^#+[ \t]/ { sub(/^#+[ \t]+/, ""); sub(/[ \t]+#+[ \t]*$/, ""); print }' "$1")
}

# --- (a) README.md is a hub --------------------------------------------------------------------
lines=$(wc -l <README.md)
if ((lines <= max_readme_lines)); then
  ok "README.md has at most $max_readme_lines lines ($lines)"
else
  not_ok "README.md has at most $max_readme_lines lines" "it has $lines"
fi

# --- (b) every page of docs/ is linked from README.md ------------------------------------------
readme_targets=$(links README.md | cut -f2 | sed 's/#.*//' | sed 's|^\./||' | sort -u)
for page in "${pages[@]}"; do
  grep -qxF "$page" <<<"$readme_targets" || problem "$page is not linked from README.md"
done
report "every page of docs/ (${#pages[@]}) is linked from README.md"

# --- (c) every relative link and anchor resolves -----------------------------------------------
checked=0
declare -A anchors_of=()  # a markdown file's anchors, one a line, found once
for file in README.md "${pages[@]}"; do
  dir=$(dirname "$file")
  while IFS=$'\t' read -r line target; do
    case $target in
      http://* | https://* | mailto:*) continue ;;
    esac
    checked=$((checked + 1))
    path=${target%%#*}
    anchor=
    [[ $target == *#* ]] && anchor=${target#*#}
    if [[ -z $path ]]; then
      resolved=$file
    else
      resolved=$dir/$path
    fi
    if [[ ! -e $resolved ]]; then
      problem "$file:$line: $target: no such file"
    elif [[ -n $anchor && $resolved == *.md ]]; then
      [[ -n ${anchors_of[$resolved]+x} ]] || anchors_of[$resolved]=$(anchors "$resolved")
      grep -qxF -- "$anchor" <<<"${anchors_of[$resolved]}" ||
        problem "$file:$line: $target: no heading with anchor #$anchor in $resolved"
    fi
  done < <(links "$file")
done
report "every relative link and anchor in README.md and docs/*.md resolves ($checked links)"

# --- every page starts with a title ------------------------------------------------------------
for page in "${pages[@]}"; do
  [[ $(head -n 1 "$page") == "# "* ]] || problem "$page does not start with a '# Title' line"
done
report "every page of docs/ starts with a '# Title' line"

# --- (d) docs/options.md is the executables' own --help ----------------------------------------
name="docs/options.md equals a fresh 'bash docs/generate_options.sh bin'"
if [[ ! -x bin/serial ]]; then
  skip "$name" "bin/serial is missing (run make first)"
elif ! bash docs/generate_options.sh bin >"$tmp/options.md" 2>"$tmp/options.err"; then
  not_ok "$name" "the generator failed: $(head -n 1 "$tmp/options.err")"
elif ! cmp -s "$tmp/options.md" docs/options.md; then
  not_ok "$name" "they differ (regenerate it: bash docs/generate_options.sh > docs/options.md): $(diff docs/options.md "$tmp/options.md" | head -n 3 | tr '\n' ' ' | head -c 300)"
else
  ok "$name"
fi

finish
