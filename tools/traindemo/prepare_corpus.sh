#!/usr/bin/env bash
# Writes the training corpus for the demo model: the King James Bible from
# Debian's bible-kjv package (public domain), one verse per line, with the
# verse references ("Ge1:1 ") stripped.
#   usage: tools/traindemo/prepare_corpus.sh OUT.txt
set -euo pipefail
out=${1:?usage: prepare_corpus.sh OUT.txt}
if ! command -v bible >/dev/null; then
  echo "bible not found: apt-get install bible-kjv" >&2
  exit 1
fi
bible -f 'Gen1:1-Rev22:21' | sed -E 's/^[0-9]?[A-Za-z]+[0-9]+:[0-9]+ //' >"$out"
lines=$(wc -l <"$out")
if [ "$lines" -lt 31000 ]; then
  echo "corpus too short ($lines lines): bible-kjv output changed?" >&2
  exit 1
fi
echo "wrote $out: $lines verses, $(wc -c <"$out") bytes"
