#!/usr/bin/env bash
# Decode a fixed battery with the luong on PATH (or $LUONG) into OUT, to compare two commits'
# outputs byte for byte after a refactor of the search (issue 26 did: all 11 files identical;
# issue 39, one request path, added luong po on the test catalogs and the server's two APIs
# through real clients, scripts/server_battery.py: 27 files).
#
#   scripts/decoding_battery.sh DATES DATES2 TRANSLATION DATES_SOURCES DEVTEST_SOURCES OUT
#
# DATES, DATES2: two dates run folders (luong train dates --out D [--seed 1]); TRANSLATION: a
# subword model (e.g. --preset translation on gettext-en-de, a few epochs); the sources: one a
# line (300 dates from load_task("dates", n_train=0, n_dev=0, n_test=300, seed=3); the first
# column of gettext-en-de's devtest.tsv). TRANSLATION must record its pair (luong pair DIR
# --src-lang en --tgt-lang de) for luong po and LibreTranslate's /translate. Then:
# diff -r OUT_BEFORE OUT_AFTER.
set -euo pipefail
if [ $# -ne 6 ]; then
    echo "usage: $0 DATES DATES2 TRANSLATION DATES_SOURCES DEVTEST_SOURCES OUT" >&2
    exit 2
fi
dates=$1 dates2=$2 tr=$3 src=$4 devtest=$5 out=$6
L=${LUONG:-luong}
catalogs=$(dirname "$0")/../tests/data/catalogs
mkdir -p "$out"
$L translate "$tr" --input "$devtest" --beam 5 --alpha 0.6 > "$out/tr_beam5.txt"
$L translate "$tr" --input "$devtest" > "$out/tr_greedy.txt"
$L translate "$tr" --input "$devtest" --beam 4 --nbest 3 --beta 0.2 --format jsonl \
    > "$out/tr_beam4_nbest3_beta.jsonl"
$L translate "$dates" --input "$src" --beam 5 --nbest 3 --alpha 0.6 --beta 0.2 --format jsonl \
    > "$out/d_beam5.jsonl"
$L translate "$dates" --input "$src" --format jsonl > "$out/d_greedy.jsonl"
$L translate "$dates" --input "$src" --prefix 19 --beam 3 --nbest 2 --format jsonl \
    > "$out/d_prefix.jsonl"
$L translate "$dates" --input "$src" --sample --nbest 3 --seed 7 --temperature 1.5 --top-k 5 \
    --format jsonl > "$out/d_sample.jsonl"
$L translate "$dates" "$dates2" --input "$src" --beam 4 --nbest 2 --beta 0.3 --format jsonl \
    > "$out/d_ens.jsonl"
$L translate "$dates" "$dates2" --combine prob --input "$src" --prefix 2 --beam 3 \
    --format jsonl > "$out/d_ens_prefix.jsonl"
$L translate "$dates" --input "$src" --stream --sample --seed 3 > "$out/d_stream.txt"
$L eval "$dates" --task dates --n 500 --beam 3 --json > "$out/d_eval.json"
# luong po: --force, the battery writes over its earlier outputs; exit 3 is a catalog written
# with a format entry named as failing the placeholder check (--placeholders off)
po() { $L po "$@" --force || [ $? -eq 3 ]; }
for catalog in nano.pot nano.mixed.po wdiff.pot; do
    po "$tr" "$catalogs/$catalog" --out "$out/po_$catalog" 2> "$out/po_$catalog.stderr"
done
po "$tr" "$catalogs/wdiff.pot" --placeholders mask --out "$out/po_mask_wdiff.pot" \
    2> "$out/po_mask_wdiff.stderr"
po "$tr" "$catalogs/wdiff.pot" --placeholders off --beam 3 --out "$out/po_off_wdiff.pot" \
    2> "$out/po_off_wdiff.stderr"
$L translate "$tr" --input "$devtest" --beam 5 --placeholders constrain --format jsonl \
    > "$out/tr_constrain.jsonl"
$L translate "$tr" --input "$devtest" --placeholders mask > "$out/tr_mask.txt"
$L translate "$dates" --input "$src" --align --beam 3 > "$out/d_align.txt"
${PYTHON:-python3} "$(dirname "$0")/server_battery.py" "$dates" "$tr" "$src" "$devtest" "$out"
