"""Validate `vqa analyze` on real data: VQA-VS ``Val.zip`` laid out as a release.

Val is split 75/25 by our construction (no val part); the training and IID test questions are
written as ``Training/`` and ``IID-Test/`` in the authors' format, the tail sets of the build as
``OOD-Test/<S>/``. ``analyze_release`` must then recover the build: the same Table 1, head-split
Jaccard and OOD coincidence, and recomputed OOD sets equal to the released ones (Jaccard 1).
Val has no image objects, so the five visual and multi-modal sets are empty.

    python benchmarks/validate_vqa_analysis.py [--zip PATH]

Without the reference data (no file at ``--zip``) the check cannot run, and that is an error, not
a pass: one ``error:`` line on stderr says which file is needed and where to get it, and the
script exits with status 2. This is the convention of every ``benchmarks/validate_*.py`` that
needs reference data: 0 the numbers agree, 1 they disagree, 2 the data are missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

DEFAULT_ZIP = Path(__file__).resolve().parents[2] / "shared" / "data" / "vqa-vs" / "Val.zip"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zip", type=Path, default=DEFAULT_ZIP)
    args = parser.parse_args()
    if not args.zip.exists():
        print(f"error: reference data {args.zip} is absent: the check needs the VQA-VS Val.zip "
              "(from the VQA-VS authors' repository, PhoebusSi/VQA-VS); place it there or pass "
              "--zip PATH.", file=sys.stderr)
        return 2
    import numpy as np
    import pandas as pd

    from shortcutlab.vqa import (
        SHORTCUTS,
        BuildConfig,
        analyze_release,
        build_splits,
        load_table,
        read_release,
    )

    with zipfile.ZipFile(args.zip) as zf:
        name = {k: next(n for n in zf.namelist() if n.endswith(f"Val-{k}.json") and
                        "__MACOSX" not in n) for k in ("Ques", "Ans")}  # fmt: skip
        docs = {k: json.loads(zf.read(n)) for k, n in name.items()}
    t0 = time.perf_counter()
    table = load_table(args.zip)
    built = build_splits(table, BuildConfig(fractions=(0.75, 0.0, 0.25)))
    s = built.samples
    split = dict(zip(s["question_id"], s["split"], strict=True))
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for part, folder in (("train", "Training"), ("test", "IID-Test")):
            (root / folder).mkdir()
            for k in ("Ques", "Ans"):
                keep = [d for d in docs[k] if split[str(d["question_id"])] == part]
                (root / folder / f"{folder}-{k}.json").write_text(json.dumps(keep))
        test = s[s["split"] == "test"]
        for k in SHORTCUTS:
            (root / "OOD-Test" / k).mkdir(parents=True)
            ids = [{"question_id": int(q)} for q in test.loc[test[f"tail:{k}"], "question_id"]]
            (root / "OOD-Test" / k / f"OOD-Test-{k}-Ques.json").write_text(json.dumps(ids))
        t2 = time.perf_counter()
        release = read_release(root)
        data = [root / f / f"{f}-{k}.json" for f in ("Training", "IID-Test")
                for k in ("Ques", "Ans")]  # fmt: skip
        out = analyze_release(load_table(data), release)
        t3 = time.perf_counter()
    ok = out["statistics"].equals(built.statistics)
    ok &= bool(np.allclose(out["jaccard"], built.jaccard, equal_nan=True))
    ok &= bool(np.allclose(out["coincidence"], built.coincidence, equal_nan=True))
    agree = out["agreement"].set_index("shortcut")
    nonempty = agree["released"] > 0
    ok &= bool((agree.loc[nonempty, "jaccard"] == 1.0).all())
    pd.set_option("display.width", 120)
    print(f"Val: {len(table):,} questions -> train {out['sizes']['train']:,}, "
          f"IID test {out['sizes']['test']:,}; build {t1 - t0:.1f} s, write {t2 - t1:.1f} s, "
          f"read + analyze {t3 - t2:.1f} s")
    print(out["statistics"].to_string(index=False))
    print(agree.to_string())
    print("E (train):", {k: round(v, 3) for k, v in
                         zip(out["imbalance"]["shortcut"], out["imbalance"]["E_train"],
                             strict=True) if v == v})  # fmt: skip
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
