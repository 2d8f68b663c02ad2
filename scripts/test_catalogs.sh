#!/usr/bin/env bash
# Regenerate tests/data/catalogs/: real German catalogs of two Debian packages that are not in
# gettext-en-de's catalogs.tsv (nano, wdiff), from their binary packages.
#
#   scripts/test_catalogs.sh [OUT]        (default tests/data/catalogs; needs apt-get,
#                                          dpkg-deb, msgunfmt, msgfmt and python with polib)
#
# For each package P: P.de.po is the package's own .mo turned back into a catalog (msgunfmt),
# the reference. A .mo keeps no flags, so each entry whose msgid holds a printf directive gets
# the c-format flag, as xgettext gives a C string with one; msgfmt --check-format must accept
# the result (the package's own German does). P.pot is the template: every msgstr blank, the
# header's Language blank and its Plural-Forms xgettext's placeholder. nano.mixed.po is
# nano.de.po with every second entry blanked and every fifth of the rest marked fuzzy. All
# are wrapped by msgcat, as gettext's tools write catalogs.
# Everything is deterministic: the same packages give the same files.
set -euo pipefail
out=$(realpath -m "${1:-tests/data/catalogs}")
python=${PYTHON:-python3}
packages=(nano=7.2-1+deb12u1 wdiff=1.2.2-5)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$work"
for spec in "${packages[@]}"; do
    name=${spec%%=*}
    apt-get download "$spec" >/dev/null 2>&1
    dpkg-deb -x "${name}"_*.deb "root-$name"
    msgunfmt "root-$name/usr/share/locale/de/LC_MESSAGES/$name.mo" -o "$name.raw.po"
done
"$python" - "$out" <<'EOF'
import re
import sys
from pathlib import Path

import polib

out = Path(sys.argv[1])
# A printf directive (what makes xgettext mark a C string c-format); "%%" alone does not.
directive = re.compile(
    r"%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|Z|t)?[diouxXeEfFgGaAcspnm]"
)
for name in ("nano", "wdiff"):
    po = polib.pofile(f"{name}.raw.po", wrapwidth=78)
    for entry in po:
        if directive.search(entry.msgid) or directive.search(entry.msgid_plural or ""):
            entry.flags.append("c-format")
    po.save(out / f"{name}.de.po")
    for entry in po:
        entry.msgstr = ""
        entry.msgstr_plural = {n: "" for n in entry.msgstr_plural}
    po.metadata["Language"] = ""
    po.metadata["Plural-Forms"] = "nplurals=INTEGER; plural=EXPRESSION;"
    po.save(out / f"{name}.pot")

po = polib.pofile(out / "nano.de.po", wrapwidth=78)
for i, entry in enumerate(po):
    if i % 2:
        entry.msgstr = ""
        entry.msgstr_plural = {n: "" for n in entry.msgstr_plural}
    elif i % 10 == 4:
        entry.flags.insert(0, "fuzzy")
po.save(out / "nano.mixed.po")
EOF
# Wrapped as gettext's own tools wrap (polib wraps some long lines elsewhere), as catalogs are.
for file in nano.de.po nano.pot nano.mixed.po wdiff.de.po wdiff.pot; do
    msgcat -o "$out/$file" "$out/$file"
done
for name in nano wdiff; do
    msgfmt --check-format -o /dev/null "$out/$name.de.po"
done
ls -l "$out"
