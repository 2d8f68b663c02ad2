"""The last lines of ``make demo-translation``: the model's BLEU and chrF on the catalogs it
never trained on (the corpus's devtest, whole catalogs held out), how long the demo took,
and where the filled catalog is.

    python scripts/demo_summary.py runs/demo-de
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    folder = Path(sys.argv[1])
    metrics = json.loads((folder / "model" / "metrics.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "corpus" / "manifest.json").read_text(encoding="utf-8"))
    started = int((folder / "started").read_text(encoding="utf-8"))
    minutes = (time.time() - started) / 60
    held_out = sum(1 for c in manifest["catalogs"] if c.get("split") == "devtest")
    print(
        f"devtest ({metrics['test_sources']} sources of {held_out or 'the'} held-out catalogs):"
        f" BLEU {metrics['test_bleu']:.2f}, chrF {metrics['test_chrf']:.2f} (beam 5)"
    )
    print(
        f"trained {metrics['steps']} steps in {metrics['train_seconds'] / 60:.1f} minutes; "
        f"the demo took {minutes:.1f} minutes"
    )
    print(f"the filled catalog: {folder / 'wdiff.de.po'} (review its fuzzy entries)")


if __name__ == "__main__":
    main()
