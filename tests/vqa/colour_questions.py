"""Small synthetic colour questions for VQA-VS tests: "What color is the banana/sky/grass?",
answered with the object's colour 80 % of the time (a learnable shortcut), else "red" or "x"."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

OBJECTS = ("banana", "sky", "grass")
COLOURS = ("yellow", "blue", "green")


def colour_questions(n: int, answers: Callable[[str], list[str]],
                     objects: bool = False) -> pd.DataFrame:
    """``n`` questions (seed 0); ``answers`` turns the drawn answer into the ten annotations;
    ``objects`` adds each question's object list."""
    r = np.random.default_rng(0)
    rows = []
    for i in range(n):
        o = int(r.integers(3))
        ans = COLOURS[o] if r.random() < 0.8 else str(r.choice(["red", "x"]))
        row = {"question_id": i, "image_id": i, "answers": answers(ans),
               "question": f"What color is the {OBJECTS[o]}?"}
        if objects:
            row["objects"] = [OBJECTS[o]]
        rows.append(row)
    return pd.DataFrame(rows)
