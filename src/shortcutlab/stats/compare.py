"""The BiasBed comparison protocol on one score table: Friedman → Iman-Davenport → Nemenyi.

``compare(table)`` ranks the algorithms within each block, runs the omnibus tests, computes
pairwise Nemenyi p-values and the critical difference, and keeps mean ± std over runs when the
table lists individual runs. :class:`ComparisonResult` writes JSON, CSV, LaTeX and a CD diagram.

Conventions (textbook by default): ``df="pingouin"`` for pingouin's Iman-Davenport degrees of
freedom, ``nemenyi_clip=True`` for old scikit-posthocs' [0.001, 0.9] p-value range, and
``exclude_blocks`` for BiasBed's *strict* setting (see :func:`strict_blocks`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from scipy.stats import rankdata

from shortcutlab.errors import StatsError, unknown_choice
from shortcutlab.stats.friedman import FriedmanResult, friedman_test
from shortcutlab.stats.posthoc import (
    cd_cliques,
    cd_diagram,
    critical_difference,
    mean_ranks,
    nemenyi_p_values,
)
from shortcutlab.stats.tables import ScoreTable, load_table, parse_table
from shortcutlab.utils.display import ShowsResult
from shortcutlab.utils.html import figure_to_png, literal_text
from shortcutlab.utils.io import OutputSet, output_set
from shortcutlab.utils.sanitize import finite_or_none


@dataclass(frozen=True, repr=False)
class ComparisonResult(ShowsResult, FriedmanResult):
    """The omnibus tests (the :class:`FriedmanResult` fields) plus the post-hoc analysis;
    pure data plus writers.

    ``ranks``: mean rank per algorithm (1 = best); ``nemenyi``: algorithm × algorithm p-values;
    ``block_ranks``: the within-block ranks; ``std``/``n_runs`` are None for a wide table.
    """

    _float_format = "{:.3g}"  # p-values of 1e-6 next to ranks of 2.5

    means: pd.DataFrame
    std: pd.DataFrame | None
    n_runs: pd.DataFrame | None
    block_ranks: pd.DataFrame
    ranks: pd.Series
    nemenyi: pd.DataFrame
    critical_difference: float
    alpha: float
    lower_is_better: bool
    nemenyi_clipped: bool = False
    excluded_blocks: tuple[str, ...] = ()
    nemenyi_method: str = "exact"
    tie_corrected: bool = True

    @property
    def algorithms(self) -> list[str]:
        return [str(a) for a in self.means.columns]

    @property
    def blocks(self) -> list[str]:
        return [str(b) for b in self.means.index]

    @property
    def significant(self) -> bool:
        """Whether the Iman-Davenport test rejects "all algorithms perform equally" at α."""
        return self.p_value < self.alpha

    def significant_pairs(self) -> list[tuple[str, str, float]]:
        """Pairs (better, worse, p) whose Nemenyi p-value is below α, most significant first."""
        out = []
        algos = self.algorithms
        for i, a in enumerate(algos):
            for b in algos[i + 1 :]:
                p = float(self.nemenyi.loc[a, b])
                if p < self.alpha:
                    better, worse = (a, b) if self.ranks[a] <= self.ranks[b] else (b, a)
                    out.append((better, worse, p))
        return sorted(out, key=lambda t: (t[2], t[0], t[1]))

    def cliques(self) -> list[list[str]]:
        """Groups not significantly different from each other (the CD diagram's bars)."""
        return cd_cliques(self.ranks.to_dict(), self.critical_difference)

    def _display(self) -> tuple[str, pd.DataFrame, list[str]]:
        verdict = "differ" if self.significant else "do not differ significantly"
        title = (f"{len(self.algorithms)} algorithms on {len(self.blocks)} blocks {verdict} "
                 f"(Iman-Davenport F={self.F:.3g}, p={self.p_value:.3g}, alpha={self.alpha:g}); "
                 f"Nemenyi critical difference {self.critical_difference:.3f}")
        notes = [".ranks, .nemenyi, .means, .to_dict(), .to_latex() and .cd_diagram() give the "
                 "rest"]
        return title, self.ranks_frame(), notes




    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; non-finite numbers (F = ∞ under perfect agreement, std of one run)
        become None so the output is strict JSON."""

        def frame(df: pd.DataFrame) -> dict[str, dict[str, float | None]]:
            return {
                str(b): {str(a): finite_or_none(float(v)) for a, v in row.items()}
                for b, row in df.iterrows()
            }

        out: dict[str, Any] = {
            "chi2": finite_or_none(self.chi2),
            "chi2_p_value": finite_or_none(self.chi2_p_value),
            "F": finite_or_none(self.F),
            "p_value": finite_or_none(self.p_value),
            "df": [self.df_num, self.df_den],
            "df_convention": self.df_convention,
            "nemenyi_clipped": self.nemenyi_clipped,
            "nemenyi_method": self.nemenyi_method,
            "tie_corrected": self.tie_corrected,
            "excluded_blocks": list(self.excluded_blocks),
            "critical_difference": finite_or_none(self.critical_difference),
            "alpha": self.alpha,
            "lower_is_better": self.lower_is_better,
            "n_blocks": len(self.blocks),
            "n_algorithms": len(self.algorithms),
            "significant": self.significant,
            "ranks": {str(a): float(r) for a, r in self.ranks.items()},
            "nemenyi": {
                str(a): {str(b): float(self.nemenyi.loc[a, b]) for b in self.nemenyi.columns}
                for a in self.nemenyi.index
            },
            "blocks": self.blocks,
            "algorithms": self.algorithms,
            "means": frame(self.means),
        }
        if self.std is not None and self.n_runs is not None:
            out["std"] = frame(self.std)
            out["n_runs"] = {
                str(b): {str(a): int(v) for a, v in row.items()}
                for b, row in self.n_runs.iterrows()
            }
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """One strict-JSON object (sorted keys): chi2, chi2_p_value, F, p_value, ranks, ..."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, allow_nan=False)

    def ranks_frame(self) -> pd.DataFrame:
        """Algorithms best-first with mean rank and whether each differs from the best (Nemenyi)."""
        order = self.ranks.sort_values(kind="stable").index
        best = order[0]
        return pd.DataFrame(
            {
                "mean_rank": self.ranks[order].to_numpy(),
                "p_vs_best": [float(self.nemenyi.loc[best, a]) for a in order],
            },
            index=pd.Index([str(a) for a in order], name="algorithm"),
        )

    def scores_frame(self, decimals: int = 2) -> pd.DataFrame:
        """Blocks × algorithms as text 'mean ± std' (or just the mean for a wide table)."""
        fmt = f"{{:.{decimals}f}}"
        text = self.means.map(fmt.format)
        if self.std is not None:
            spread = self.std.map(lambda v: "" if pd.isna(v) else " ± " + fmt.format(v))
            text = text + spread
        return text

    def scores_csv(self) -> str:
        """Long CSV: block, algorithm, mean, std, n_runs, rank (within the block)."""
        long = self.means.stack().rename("mean").to_frame()
        if self.std is not None and self.n_runs is not None:
            long["std"] = self.std.stack()
            long["n_runs"] = self.n_runs.stack()
        long["rank"] = self.block_ranks.stack()
        long.index.names = ["block", "algorithm"]
        return long.reset_index().to_csv(index=False, float_format="%.10g")

    def to_latex(self, decimals: int | None = None) -> str:
        """A LaTeX table of mean (± std) per block, best per block in bold, mean ranks last,
        followed by the table of Nemenyi p-values; needs only ``booktabs``. ``decimals``
        (default: the fewest, from 1 to 4, that keep the means of each block as distinct as
        they are, so fractions 0.80/0.82/0.79 do not all print as 0.8)."""
        algos = self.algorithms
        decimals = _distinct_decimals(self.means) if decimals is None else decimals
        fmt = f"{{:.{decimals}f}}"
        lines = [
            "% Generated by shortcutlab stats compare. Requires \\usepackage{booktabs}.",
            "\\begin{table}[t]",
            "\\centering",
            "\\begin{tabular}{l" + "r" * len(algos) + "}",
            "\\toprule",
            "Block & " + " & ".join(_tex(a) for a in algos) + " \\\\",
            "\\midrule",
        ]
        for b in self.blocks:
            row = self.means.loc[b]
            best = row.min() if self.lower_is_better else row.max()
            cells = []
            for a in algos:
                cell = fmt.format(row[a])
                if self.std is not None and not pd.isna(self.std.loc[b, a]):
                    cell += " $\\pm$ " + fmt.format(self.std.loc[b, a])
                cells.append(f"\\textbf{{{cell}}}" if row[a] == best else cell)
            lines.append(_tex(b) + " & " + " & ".join(cells) + " \\\\")
        lines += [
            "\\midrule",
            "Mean rank & " + " & ".join(f"{self.ranks[a]:.2f}" for a in algos) + " \\\\",
            "\\bottomrule",
            "\\end{tabular}",
            f"\\caption{{Friedman $\\chi^2 = {self.chi2:.3f}$ ($p = {_p(self.chi2_p_value)}$), "
            f"Iman-Davenport $F({self.df_num:.4g}, {self.df_den:.4g}) = {_num(self.F)}$ "
            f"($p = {_p(self.p_value)}$), Nemenyi critical difference "
            f"$CD_{{\\alpha={self.alpha:g}}} = {self.critical_difference:.3f}$; "
            f"{'lower' if self.lower_is_better else 'higher'} is better.}}",
            "\\end{table}",
            "",
            "\\begin{table}[t]",
            "\\centering",
            "\\begin{tabular}{l" + "r" * len(algos) + "}",
            "\\toprule",
            " & " + " & ".join(_tex(a) for a in algos) + " \\\\",
            "\\midrule",
        ]
        for a in algos:
            cells = []
            for b in algos:
                p = float(self.nemenyi.loc[a, b])
                cell = "--" if a == b else _p(p)
                cells.append(f"\\textbf{{{cell}}}" if a != b and p < self.alpha else cell)
            lines.append(_tex(a) + " & " + " & ".join(cells) + " \\\\")
        lines += [
            "\\bottomrule",
            "\\end{tabular}",
            f"\\caption{{Nemenyi post-hoc p-values; bold: $p < {self.alpha:g}$.}}",
            "\\end{table}",
            "",
        ]
        return "\n".join(lines)

    def cd_diagram(self, title: str | None = None) -> Figure:
        """The Demšar critical-difference diagram of this comparison."""
        return cd_diagram(self.ranks.to_dict(), self.critical_difference, title=title)

    def write(self, out_dir: str | os.PathLike[str], stem: str = "comparison") -> list[Path]:
        """Write JSON, scores/ranks/Nemenyi CSVs, LaTeX and the CD diagram PNG: all six or, on a
        failure, none (old files stay as they were)."""
        with output_set() as outputs:
            return self.stage(outputs, out_dir, stem)

    def stage(self, outputs: OutputSet, out_dir: str | os.PathLike[str],
              stem: str = "comparison") -> list[Path]:
        """The six files of :meth:`write`, staged in ``outputs`` (a larger all-or-none set)."""
        out = Path(out_dir)
        with literal_text():  # algorithm names are data, not mathtext
            png = figure_to_png(self.cd_diagram(), dpi=150)
        return [
            outputs.write_json(out / f"{stem}.json", self.to_dict()),
            outputs.write_text(out / f"{stem}_scores.csv", self.scores_csv()),
            outputs.write_text(out / f"{stem}_ranks.csv",
                               self.ranks_frame().to_csv(float_format="%.10g")),
            outputs.write_text(out / f"{stem}_nemenyi.csv",
                               self.nemenyi.to_csv(float_format="%.10g")),
            outputs.write_text(out / f"{stem}.tex", self.to_latex()),
            outputs.write_bytes(out / f"{stem}_cd_diagram.png", png),
        ]


def _distinct_decimals(means: pd.DataFrame, most: int = 4) -> int:
    """Fewest decimals (1..``most``) at which every row keeps its number of distinct values."""
    distinct = means.nunique(axis=1)
    for decimals in range(1, most):
        if (means.round(decimals).nunique(axis=1) == distinct).all():
            return decimals
    return most


def _tex(text: object) -> str:
    """Escape LaTeX special characters in a label."""
    repl = {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
    }
    return "".join(repl.get(ch, ch) for ch in str(text))


def _p(p: float) -> str:
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.2e}"


def _num(x: float) -> str:
    return f"{x:.3f}" if math.isfinite(x) else "\\infty"


def strict_blocks(
    trained_on: dict[str, str | list[str]] | list[tuple[str, str]],
    blocks: list[str],
    algorithms: list[str] | None = None,
) -> list[str]:
    """The blocks BiasBed's *strict* setting drops: test sets made with the same method as the
    training data of any competitor (Stylized ImageNet when "ERM on Stylized ImageNet" competes).

    ``trained_on``: competitor → the block(s) that are in-distribution for it (or a list of
    (competitor, block) pairs). A named block that is not in ``blocks``, or (when
    ``algorithms`` is given) a competitor that is not in ``algorithms``, is an error naming the
    valid choices: a misspelt competitor would otherwise drop blocks for an algorithm that
    does not compete.
    """
    pairs = trained_on.items() if isinstance(trained_on, dict) else trained_on
    out: list[str] = []
    for competitor, names in pairs:
        if algorithms is not None and competitor not in algorithms:
            raise StatsError(unknown_choice("competitor of --trained-on", competitor, algorithms))
        for name in [names] if isinstance(names, str) else names:
            if name not in blocks:
                raise StatsError(unknown_choice("in-distribution block", name, blocks))
            if name not in out:
                out.append(name)
    return out


def _drop_blocks(parsed: ScoreTable, exclude: list[str]) -> ScoreTable:
    blocks = parsed.blocks
    for name in exclude:
        if name not in blocks:
            raise StatsError(unknown_choice("block to exclude", name, blocks))
    keep = [b for b in parsed.means.index if str(b) not in exclude]

    def sub(frame: pd.DataFrame | None) -> pd.DataFrame | None:
        return None if frame is None else frame.loc[keep]

    return ScoreTable(parsed.means.loc[keep], sub(parsed.std), sub(parsed.n_runs), None)


def compare(
    table: pd.DataFrame | ScoreTable | str | os.PathLike[str],
    alpha: float = 0.05,
    lower_is_better: bool = False,
    *,
    df: str = "textbook",
    nemenyi_clip: bool = False,
    exclude_blocks: list[str] | tuple[str, ...] = (),
    nemenyi_method: str = "exact",
    tie_correction: bool = True,
) -> ComparisonResult:
    """Compare algorithms over blocks with Friedman, Iman-Davenport and Nemenyi at level α.

    ``table``: a wide or long DataFrame (see :mod:`shortcutlab.stats.tables`), a parsed
    :class:`ScoreTable`, or a path to a CSV/TSV/Parquet file. ``df``: ``textbook`` (default) or
    ``pingouin`` degrees of freedom of the F test; ``nemenyi_clip``: bound Nemenyi p-values to
    [0.001, 0.9] as old scikit-posthocs did; ``exclude_blocks``: blocks left out (BiasBed's
    strict setting, :func:`strict_blocks`); ``nemenyi_method``: ``exact`` or ``table`` (the
    bounded studentized-range table of BiasBed's Tables 4-5, see :func:`nemenyi_p_values`);
    ``tie_correction=False``: Friedman χ² without the tie correction (BiasBed's eq. 4).
    """
    if not isinstance(alpha, int | float) or not 0.0 < float(alpha) < 1.0:
        raise StatsError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    if isinstance(table, ScoreTable):
        parsed = table
    elif isinstance(table, pd.DataFrame):
        parsed = parse_table(table)
    else:
        parsed = load_table(table)
    excluded = [str(b) for b in exclude_blocks]
    if excluded:
        parsed = _drop_blocks(parsed, excluded)
    means = parsed.means
    scores = means.to_numpy(dtype=float)
    omnibus = friedman_test(scores, df=df, tie_correction=tie_correction)
    ranks_arr = mean_ranks(scores, lower_is_better=lower_is_better)
    algos = list(means.columns)
    block_ranks = pd.DataFrame(
        rankdata(scores if lower_is_better else -scores, axis=1, method="average"),
        index=means.index,
        columns=means.columns,
    )
    nemenyi = pd.DataFrame(
        nemenyi_p_values(ranks_arr, scores.shape[0], clip=nemenyi_clip, method=nemenyi_method),
        index=pd.Index(algos, name="algorithm"),
        columns=pd.Index(algos, name="algorithm"),
    )
    return ComparisonResult(
        **omnibus.to_dict(),
        means=means,
        std=parsed.std,
        n_runs=parsed.n_runs,
        block_ranks=block_ranks,
        ranks=pd.Series(ranks_arr, index=pd.Index(algos, name="algorithm"), name="mean_rank"),
        nemenyi=nemenyi,
        critical_difference=critical_difference(len(algos), scores.shape[0], float(alpha)),
        alpha=float(alpha),
        lower_is_better=lower_is_better,
        nemenyi_clipped=bool(nemenyi_clip),
        excluded_blocks=tuple(excluded),
        nemenyi_method=nemenyi_method,
        tie_corrected=bool(tie_correction),
    )
