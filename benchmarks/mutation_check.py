"""Planted mutations: does the test suite catch realistic bugs in the numbers?

Each mutation replaces one exact piece of ``src/shortcutlab`` (an off-by-one, ``<`` for ``<=``,
a dropped term, ``1 - p``, a removed refusal, a wrong ddof ...) in a scratch copy of ``src/``
(the checkout is never modified), puts that copy first on ``PYTHONPATH`` and runs only the test
files that should catch it (``pytest -q -x``). A mutation is *caught* when those tests fail.

    .venv/bin/python benchmarks/mutation_check.py            # all, a markdown table on stdout
    .venv/bin/python benchmarks/mutation_check.py M04 M15    # some
    .venv/bin/python benchmarks/mutation_check.py --list

Exit 1 when a mutation listed with ``expect="caught"`` survives, when an old text is no longer
found exactly once (the table is stale), or when the target tests fail on the unmutated code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "shortcutlab"


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str  # relative to src/shortcutlab
    old: str
    new: str
    tests: tuple[str, ...]
    what: str
    expect: str = "caught"  # or "survived": a known gap in the tests named


MUTATIONS: tuple[Mutation, ...] = (
    Mutation("M01", "stats/friedman.py", "f = (n - 1) * chi2 / denom", "f = n * chi2 / denom",
             ("tests/stats/test_stats_friedman.py",),
             "Iman-Davenport F with N instead of N-1"),
    Mutation("M02", "stats/friedman.py", "return k - 1, (k - 1) * (n - 1)",
             "return k - 1, (k - 1) * n",
             ("tests/stats/test_stats_friedman.py",),
             "textbook denominator degrees of freedom off by one"),
    Mutation("M03", "stats/posthoc.py", "stats.studentized_range.ppf(1.0 - alpha,",
             "stats.studentized_range.ppf(alpha,",
             ("tests/stats/test_stats_posthoc.py",),
             "critical difference from the lower α quantile (alpha for 1 - alpha)"),
    Mutation("M04", "stats/posthoc.py", "if len(ranks) < 2:\n        raise StatsError(f\"a CD",
             "if len(ranks) < 1:\n        raise StatsError(f\"a CD",
             ("tests/stats/test_stats_posthoc.py",),
             "CD diagram's refusal of one algorithm removed (issue 35)"),
    Mutation("M05", "stats/posthoc.py", "values[j + 1] - values[i] < cd",
             "values[j + 1] - values[i] <= cd",
             ("tests/stats/test_stats_posthoc.py",),
             "a rank difference of exactly CD counted as not significant (< for <=)",
             expect="caught"),  # survived before test_a_rank_difference_of_exactly_cd_...
    Mutation("M06", "stats/selection.py", 'window = epochs[epochs["epoch"] >= cutoff]',
             'window = epochs[epochs["epoch"] > cutoff]',
             ("tests/stats/test_stats_selection.py",),
             "last-n selection averages n-1 epochs (>= for >)"),
    Mutation("M07", "stats/tables.py", "std = grouped.std(ddof=1)",
             "std = grouped.std(ddof=0)",
             ("tests/stats/test_stats_tables.py",),
             "comparison table's std over runs with ddof 0"),
    Mutation("M08", "diagvib/metrics.py", "sem = float(arr.std(ddof=1) / math.sqrt(n))",
             "sem = float(arr.std(ddof=0) / math.sqrt(n))",
             ("tests/diagvib/test_metrics.py",),
             "DiagViB-6 standard error with ddof 0"),
    Mutation("M09", "vqa/accuracy.py", "min(1.0, (total - h) / 3.0)", "min(1.0, total / 3.0)",
             ("tests/vqa/test_accuracy.py",),
             "VQA accuracy without the leave-one-out subsets"),
    Mutation("M10", "runner/records.py", "0.0 <= value <= 1.0", "0.0 <= value <= 100.0",
             ("tests/runner/test_faults.py::test_a_corrupted_file_is_named_skipped_moved_aside_and_rerun",),
             "result.json schema accepts accuracies in percent (check loosened)"),
    Mutation("M11", "train/metrics.py", "seen = support > 0\n", "seen = support >= 0\n",
             ("tests/diagvib/test_evaluation.py",
              "tests/train/test_trainer.py::test_mean_per_class_accuracy_matches_reference"),
             "mean per-class accuracy counts classes absent from the targets as 0"),
    Mutation("M12", "train/trainer.py", "if best[1] < 0 or val_loss < best[0]:",
             "if best[1] < 0 or val_loss <= best[0]:",
             ("tests/train/test_trainer.py::test_early_stopping_on_validation_loss",
              "tests/train/test_trainer.py::test_keep_best_state_returns_the_best_weights"),
             "checkpoint selection takes the last of tied epochs, not the first"),
    Mutation("M13", "utils/rng.py", "np.random.PCG64(seed_sequence(seed, *key))",
             "np.random.PCG64(seed_sequence(seed))",
             ("tests/utils/test_io_rng.py",),
             "random streams ignore their key (every purpose the same stream)"),
    Mutation("M14", "factor_analysis/significance.py", '"pvalue": result.pvalue}',
             '"pvalue": 1 - result.pvalue}',
             ("tests/imagenetx/test_imagenetx_cli.py::test_report_with_groups",),
             "Alexander-Govern p-value reported as 1 - p (issue 35; the test now checks scipy)",
             expect="caught"),  # survived before: the test checked keys and substrings
    Mutation("M15", "cli/stats.py", '@app.command("compare",', '@app.command("comparison",',
             ("tests/cli/test_help.py",),
             "the documented `shortcutlab stats compare` renamed away (help test pins its list)",
             expect="caught"),  # survived before the help test read the docs' commands
    Mutation("M16", "diagvib/studies.py", "if not 0 <= sample < len(table):",
             "if not 0 <= sample <= len(table):",
             ("tests/diagvib/test_studies.py",),
             "paper sample refusal off by one (sample 5 gives an IndexError)"),
    Mutation("M17", "factor_analysis/counts.py", "return ratio(1.0 - accuracy, base)",
             "return ratio(accuracy, base)",
             ("tests/imagenetx/test_imagenetx_evaluate.py::test_error_ratio_definition_and_flat_dict",
              "tests/factor_analysis/test_engine.py"),
             "ImageNet-X error ratio of the factor's accuracy, not its error"),
    Mutation("M18", "factor_analysis/counts.py", "q = [(1 - level) / 2 * 100,",
             "q = [(1 - level) * 100,",
             ("tests/imagenetx/test_imagenetx_evaluate.py::"
              "test_bootstrap_is_reproducible_and_brackets_the_estimate",),
             "bootstrap interval's lower percentile at 5, not 2.5 (the /2 dropped)"),
    Mutation("M19", "diagvib/metrics.py", '("FAMin", "min")', '("FAMin", "mean")',
             ("tests/diagvib/test_metrics.py",),
             "FAMin (eq. 2) takes the mean over correlated factors, as FAAvg"),
    Mutation("M20", "diagvib/metrics.py", 'both["so_acc"] - both["zgo_acc"]',
             'both["zgo_acc"] - both["so_acc"]',
             ("tests/diagvib/test_metrics.py",),
             "Table 2's CHGO − ZGO improvement with its sign flipped"),
    Mutation("M21", "diagvib/factors.py", "(360.0, 60.0, 120.0, 180.0, 240.0, 300.0)",
             "(360.0, 60.0, 120.0, 180.0, 240.0, 330.0)",
             ("tests/diagvib/test_factors.py",
              "tests/diagvib/test_render.py::test_every_hue_class_by_mean_hue"),
             "generator's magenta hue centred at 330° (Table A1: 300°): the images change",
             expect="caught"),  # survived before the hue tests read the colours' names
    Mutation("M22", "vqa/splits.py", "inter / np.maximum(size[:, None], 1)",
             "inter / np.maximum(size[None, :], 1)",
             ("tests/vqa/test_concepts_splits.py",),
             "VQA-VS coincidence ratio over the column set's size, not the row's (A∩B over B)"),
    Mutation("M23", "train/algorithms/padain.py",
             "if torch.rand((), generator=gen).item() >= self.p:",
             "if torch.rand((), generator=gen).item() < self.p:",
             ("tests/train/test_algorithms_biasbed.py",),
             "pAdaIN swaps with probability 1 − p, not p"),
    Mutation("M24", "train/algorithms/sagnet.py", '.mean() * self.hparams["w_adv"]',
             '.mean() * self.hparams["clip_adv"]',
             ("tests/train/test_algorithms_biasbed.py",),
             "SagNet's adversarial loss weighted by clip_adv (0.1 too), not w_adv",
             expect="caught"),  # survived before test_sagnet_adversarial_loss_is_w_adv_...
    Mutation("M25", "train/trainer.py", "persistent_workers=num_workers > 0, generator=generator)",
             "persistent_workers=num_workers > 0)",
             ("tests/train/test_trainer.py::test_dropout_draws_the_same_whatever_the_loaders",),
             "evaluation loaders without their own generator: dropout depends on the test sets"),
    Mutation("M26", "runner/jobs.py", "invalid = result_problem(result)\n",
             "invalid = None\n",
             ("tests/runner/test_jobs.py::"
              "test_a_result_without_its_required_keys_fails_and_is_not_counted",),
             "a job result lacking required keys is written and counted done (check dropped)"),
    Mutation("M27", "diagvib/studies.py", "used_rows.add(a)", "used_rows.add(b)",
             ("tests/diagvib/test_studies.py",),
             "CGO cells at most one per column, not per row (a class of Fi loses its OOD cells)"),
    Mutation("M28", "diagvib/studies.py", "int(round(base[s] * scale))", "int(base[s] * scale)",
             ("tests/diagvib/test_studies.py", "tests/diagvib/test_spec.py"),
             "scaled split sizes truncated, not rounded"),
    Mutation("M29", "diagvib/studies.py", "return _rows_uniform(train), _uniform(~train)",
             "return _uniform(train), _uniform(~train)",
             ("tests/diagvib/test_studies.py",),
             "CHGO weights every training cell equally: the shortcut class gets 1/5, not 1/3"),
    Mutation("M30", "diagvib/metrics.py", 'out["std"] = groups.std(ddof=0).to_numpy()',
             'out["std"] = groups.std(ddof=1).to_numpy()',
             ("tests/diagvib/test_metrics.py",),
             "P/FAAvg/FAMin std with ddof 1, not the authors' np.std (ddof 0)"),
    Mutation("M31", "diagvib/metrics.py", "std_cells = float(cells.std(ddof=1))",
             "std_cells = float(cells.std(ddof=0))",
             ("tests/diagvib/test_metrics.py",),
             "CHGO − ZGO std over (pair, sample) cells with ddof 0",
             expect="caught"),  # survived before test_metrics_match_reference checked std_cells
    Mutation("M32", "diagvib/metrics.py", "cells.setdefault(int(match.group(1))",
             "cells.setdefault(int(match.group(2))",
             ("tests/diagvib/test_metrics.py",),
             "CHGO shortcut-class accuracy grouped by the correlated class (column), not the row"),
    Mutation("M33", "diagvib/metrics.py", '["count"].min().rename("n_pairs")',
             '["count"].max().rename("n_pairs")',
             ("tests/diagvib/test_metrics.py", "tests/diagvib/test_aggregate_marks.py"),
             "FAAvg/FAMin n_pairs the most correlated factors of a sample, not the fewest"),
    Mutation("M34", "diagvib/metrics.py", "bad = done[val <= CHANCE + FIT_MARGIN]",
             "bad = done[val <= CHANCE]",
             ("tests/diagvib/test_metrics.py",),
             "did-not-fit runs: the margin above chance dropped"),
    Mutation("M35", "diagvib/checkpoints.py", "if match and int(match.group(1)) >= 1:",
             "if match and int(match.group(1)) >= 0:",
             ("tests/diagvib/test_checkpoints.py",),
             "checkpoint rule mean-last-0 accepted (silently the last epoch)"),
    Mutation("M36", "diagvib/checkpoints.py", "tail = jobs.tail(last)", "tail = jobs.head(last)",
             ("tests/diagvib/test_checkpoints.py",),
             "a job's spread over its first epochs, not its last",
             expect="caught"),  # survived before test_spread_reads_the_last_epochs_not_the_first
    Mutation("M37", "diagvib/evaluation.py", "if np.unique(idx).size != idx.size:",
             "if np.unique(idx).size > idx.size:",
             ("tests/diagvib/test_evaluation.py",),
             "scoring predictions with repeated indices accepted (an image counted twice)",
             expect="caught"),  # survived before test_repeated_indices_are_refused_not_...
    Mutation("M38", "diagvib/render.py", 'u[:, [_DRAW["light_dark"], _DRAW["light_bright"]]]',
             'u[:, [_DRAW["light_dark"], _DRAW["light_dark"]]]',
             ("tests/diagvib/test_render.py",),
             "dark and bright lightness drawn from one random number (perfectly correlated)"),
    Mutation("M39", "train/normalization.py", "std = (m2 / count).sqrt()",
             "std = (m2 / (count - 1)).sqrt()", ("tests/train/test_normalization.py",),
             "training-split channel std with ddof 1 (the authors z-score with the population's)"),
    Mutation("M40", "train/normalization.py",
             "m2 = m2 + b_m2 + delta.square() * (count * n / total)", "m2 = m2 + b_m2",
             ("tests/train/test_normalization.py",),
             "streamed channel variance without Chan's between-batch term (batch means differ)"),
    Mutation("M41", "train/trainer.py", "since_best >= config.patience",
             "since_best > config.patience",
             ("tests/train/test_trainer.py",),
             "early stopping one epoch late (patience p waits p + 1 epochs without improvement)"),
    Mutation("M42", "train/batches.py", "short = len(chunks[-1]) < self.batch_size",
             "short = len(chunks[-1]) <= self.batch_size",
             ("tests/train/test_trainer.py", "tests/train/test_device_batches.py"),
             "drop_last drops a complete last batch too (< for <=): an epoch loses a batch",
             expect="caught"),  # survived before test_drop_last_batches_are_those_of_torchs_...
    Mutation("M43", "train/algorithms/infodrop.py",
             "torch.exp(-patch / scale / (2.0 * bandwidth**2))",
             "torch.exp(-patch / scale / (bandwidth**2))",
             ("tests/train/test_infodrop_reference.py", "tests/train/test_algorithms_biasbed.py"),
             "InfoDrop's Gaussian kernel without the 2 of 2h^2 (densities, drop rates change)"),
    Mutation("M44", "train/algorithms/stylized.py",
             "weights = torch.cat([torch.zeros_like(weights), weights])",
             "weights = torch.cat([weights, weights])",
             ("tests/train/test_algorithms_biasbed.py",
              "tests/biasbed/test_reference_algorithms.py"),
             "Debiased's reference targets weigh clean rows as stylised (w 0.2, not 0.1)"),
    Mutation("M45", "diagvib/baselines/vae.py", "- 1.0 - logvar).sum() / n", "- 1.0).sum() / n",
             ("tests/diagvib/test_baselines.py",),
             "VAE's Gaussian KL without its -log sigma^2 term",
             expect="caught"),  # survived before test_vae_kl_term_is_the_closed_form_...
    Mutation("M46", "diagvib/baselines/networks.py", "order = keys.argsort(dim=0)",
             "order = keys.argsort(dim=1)",
             ("tests/diagvib/test_baselines.py",),
             "Factor-VAE's permute_dims shuffles within each code, not each dim over the batch"),
    Mutation("M47", "diagvib/baselines/asr.py", "least_likely = logits.detach().argmin(dim=1)",
             "least_likely = logits.detach().argmax(dim=1)",
             ("tests/diagvib/test_baselines.py",),
             "ASR lens pushed towards the most likely class, not the least likely",
             expect="caught"),  # survived before test_asr_adversarial_loss_targets_the_...
    Mutation("M48", "diagvib/baselines/vae.py", "(d_logits[:, 0] - d_logits[:, 1]).mean()",
             "(d_logits[:, 1] - d_logits[:, 0]).mean()",
             ("tests/diagvib/test_baselines.py",),
             "Factor-VAE's total-correlation estimate with its sign flipped (a reward, no penalty)",
             expect="caught"),  # survived before test_factor_vae_total_correlation_is_...
    Mutation("M49", "biasbed/protocol.py", "return max(1, math.ceil(0.3 * shortest))",
             "return max(1, int(0.3 * shortest))",
             ("tests/biasbed/test_protocol.py",),
             "BiasBed's last-30 % window rounded down (5 epochs: 1, not 2)",
             expect="caught"),  # survived before test_default_window_is_the_last_30_percent_...
    Mutation("M50", "diagvib/beta_vae.py", "variance = codes.var(0, unbiased=False)",
             "variance = codes.var(1, unbiased=False)",
             ("tests/diagvib/test_beta_vae.py",),
             "beta-VAE active units from the variance within each code, not across images",
             expect="caught"),  # survived before test_active_units_and_kl_from_latent_means_...
    Mutation("M51", "vqa/selection.py", '"iid-val": ("val", "iid"),',
             '"iid-val": ("test", "iid"),',
             ("tests/vqa/test_selection.py",),
             "Table 4's IID-val model selection picks the checkpoint on IID test (a leak)"),
    Mutation("M52", "vqa/accuracy.py", "if len(q) >= min_count)", "if len(q) > min_count)",
             ("tests/vqa/test_release.py", "tests/vqa/test_accuracy.py"),
             "VQA-VS vocabulary keeps answers of more than 9 questions, not at least 9"),
    Mutation("M53", "vqa/evaluate.py", "            if len(a) == 1\n",
             "            if len(a) == 0\n",
             ("tests/vqa/test_accuracy.py", "tests/vqa/test_io_eval.py"),
             "vqa-vs metric scores a one-reference question min(1, 1/3), not by exact match",
             expect="caught"),  # survived before test_single_reference_..._vqa_vs_metric_too
    Mutation("M54", "vqa/distributions.py", "c.div(totals.where(totals > 0, 1.0), axis=1)",
             "c.div(totals.where(totals > 0, 1.0), axis=0)",
             ("tests/vqa/test_answer_figures.py",),
             "Figs. 4/8/10 answer shares normalised along the wrong axis",
             expect="caught"),  # survived before test_proportions_are_shares_of_each_split
    Mutation("M55", "vqa/concepts.py", "toks = toks[len(qtoks) :]",
             "toks = toks[len(qtoks) - 1 :]",
             ("tests/vqa/test_concepts_splits.py", "tests/vqa/test_reference.py"),
             "KW candidates keep the last word of the question-type prefix (off by one)"),
    Mutation("M56", "vqa/distributions.py", "threshold=tail_threshold(n_test, len(answers),",
             "threshold=tail_threshold(len(rows), len(answers),",
             ("tests/vqa/test_answer_figures.py",),
             "the tail threshold drawn from the group's size over all splits, not IID test"),
    Mutation("M57", "imagenetx/spillover.py", "used = sizes.index[sizes >= MIN_MODELS]",
             "used = sizes.index[sizes > MIN_MODELS]",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "spill-over drops strengths with exactly 5 models (authors' code keeps more than 4)",
             expect="caught"),  # survived before test_spillover_keeps_a_strength_with_five_...
    Mutation("M58", "imagenetx/evaluate.py", "    out &= classes >= 0\n    return out",
             "    return out",
             ("tests/imagenetx/test_imagenetx_evaluate.py",),
             "ReaL: a missing prediction (-1) matches the -1 padding of the label sets"),
    Mutation("M59", "factor_analysis/analysis.py",
             "running = max(running, min(1.0, (len(order) - i) * pvalues[idx]))",
             "running = min(1.0, (len(order) - i) * pvalues[idx])",
             ("tests/factor_analysis/test_engine.py",),
             "Holm adjustment without its step-down monotonicity",
             expect="caught"),  # survived before test_holm_adjustment_matches_statsmodels
    Mutation("M60", "factor_analysis/table.py",
             "bad = ~np.isfinite(values) | (values < 0) | (values > 1)",
             "bad = ~np.isfinite(values) | (values < 0)",
             ("tests/factor_analysis/test_engine.py",),
             "probabilities above 1 (percent) accepted: calibration error silently wrong",
             expect="caught"),  # survived before the percent case of test_bad_predictions_...
    Mutation("M61", "factor_analysis/counts.py", 'probs, 0.0), side="left")',
             'probs, 0.0), side="right")',
             ("tests/factor_analysis/test_engine.py", "tests/imagenetx/test_imagenetx_analyses.py"),
             "calibration bins closed on the left: a confidence on an edge in the bin above"),
    Mutation("M62", "stats/compare.py",
             "critical_difference=critical_difference(len(algos), scores.shape[0], float(alpha)),",
             "critical_difference=critical_difference(scores.shape[0], len(algos), float(alpha)),",
             ("tests/stats/test_stats_compare.py",),
             "critical difference with k and N swapped"),
    Mutation("M63", "diagvib/studies.py", "if samples <= 0:", "if samples < 0:",
             ("tests/diagvib/test_studies.py",),
             "samples=0 accepted: an empty benchmark instead of a refusal"),
    Mutation("M64", "diagvib/sources.py", "inked = grey > BBOX_LEVEL",
             "inked = grey >= BBOX_LEVEL",
             ("tests/diagvib/test_sources.py",),
             "a digit's bounding box takes grey level 100 itself (the authors: strictly above)"),
    Mutation("M65", "diagvib/sources.py", "n_val = max(1, round(idx.size * SPLIT_FRACTIONS[1]))",
             "n_val = max(1, int(idx.size * SPLIT_FRACTIONS[1]))",
             ("tests/diagvib/test_sources.py",),
             "the seeded digit split truncates the validation share instead of rounding it"),
    Mutation("M66", "diagvib/dataset.py",
             "var = (hist * (values[None, :] - mean[:, None]) ** 2).sum(axis=1) / count",
             "var = (hist * (values[None, :] - mean[:, None]) ** 2).sum(axis=1) / (count - 1)",
             ("tests/diagvib/test_dataset.py",),
             "normalisation statistics with a ddof-1 variance (a relative error of 1/(2N))"),
    Mutation("M67", "runner/jobs.py", "if self.threads == DEFAULT_THREADS:",
             "if self.threads >= DEFAULT_THREADS:",
             ("tests/runner/test_jobs.py",),
             "torch's thread count left out of job ids: jobs on 1 and 4 threads share a folder"),
    Mutation("M68", "runner/jobs.py",
             'exclude = {"inputs"} | (set() if self.inputs else {"input_digests"})',
             'exclude = {"inputs", "input_digests"}',
             ("tests/runner/test_jobs.py", "tests/diagvib/test_jobs.py"),
             "the inputs' content digests left out of the job id: edited data reuses old results"),
    # M69 survived before test_faults.py's 'result of another job' corruption case
    Mutation("M69", "runner/jobs.py", 'owner = result.get("job_id", path.name)',
             "owner = path.name",
             ("tests/runner/test_faults.py::test_junk_and_copied_folders_are_reported_not_counted",
              "tests/runner/test_faults.py::"
              "test_a_corrupted_file_is_named_skipped_moved_aside_and_rerun"),
             "a result.json of another job (copied into the folder) read as this job's"),
    Mutation("M70", "runner/jobs.py",
             "return (path / DONE_FILE).is_file() and done_problem(path) is None",
             "return done_problem(path) is None",
             ("tests/runner/test_jobs.py",
              "tests/runner/test_faults.py::"
              "test_a_kill_before_or_after_any_file_is_written_loses_nothing"),
             "resume skips a job whose result.json exists without its done marker"),
    Mutation("M71", "runner/jobs.py", "        job.check_inputs()\n", "",
             ("tests/runner/test_jobs.py::"
              "test_an_input_edited_after_planning_fails_the_job_instead_of_running_it",),
             "a job runs on inputs edited since it was planned, under the old id"),
    # M72 survived before test_claim_owners.py::test_a_run_releases_only_its_own_claim
    Mutation("M72", "runner/claims.py", 'if claim is not None and claim.get("token") == token:',
             "if claim is not None:",
             ("tests/runner/test_claim_owners.py",),
             "a run releases another run's claim: two runs train the same job at once"),
    Mutation("M73", "runner/records.py", 'if key.startswith(("test_acc", "val_acc")):',
             'if key.startswith("test_acc"):',
             ("tests/runner/test_jobs.py",),
             "val_acc outside [0, 1] counted (only test accuracies checked)"),
    # M74 survived before test_config.py::test_the_step_schedule_drops_the_rate_at_each_
    # milestone_epoch
    Mutation("M74", "train/config.py",
             "drops = sum(1 for m in self.lr_milestones if epoch >= m)",
             "drops = sum(1 for m in self.lr_milestones if epoch > m)",
             ("tests/train/test_config.py",),
             "the step schedule drops the rate one epoch late (>= for >)"),
    # M75 survived before test_io_rng.py::test_rng_streams_are_the_same_in_another_process
    Mutation("M75", "utils/rng.py", 'return int.from_bytes(digest, "little")',
             "return hash(str(part)) & 0xFFFFFFFFFFFFFFFF",
             ("tests/utils/test_io_rng.py",),
             "string keys of random streams hashed with Python's salted hash (per process)"),
    # M76 survived before test_io_rng.py::test_rng_streams_depend_on_the_seed
    Mutation("M76", "utils/rng.py",
             "np.random.SeedSequence([_key_int(seed), *(_key_int(k) for k in key)])",
             "np.random.SeedSequence([*(_key_int(k) for k in key)])",
             ("tests/utils/test_io_rng.py",),
             "random streams ignore the seed (every seed the same stream)"),
    # M77 survived before test_head.py::test_factor_vae_jobs_record_their_classifier_too
    Mutation("M77", "diagvib/jobs.py",
             'if implied in ("vae", "factor_vae") and "classifier" not in config.hparams:',
             'if implied == "vae" and "classifier" not in config.hparams:',
             ("tests/diagvib/test_head.py",),
             "FactorVAE jobs do not record their classifier (id and table column lack it)"),
    # M78 survived before test_faults.py's 'result loss infinite' corruption case
    Mutation("M78", "runner/records.py",
             'return None if _number(value) and math.isfinite(value) else "a finite loss"',
             'return None if _number(value) else "a finite loss"',
             ("tests/runner/test_faults.py::"
              "test_a_corrupted_file_is_named_skipped_moved_aside_and_rerun",),
             "an infinite loss counted in a done result"),
    Mutation("M79", "imagenetx/predictions.py",
             "if len(file_names) == len(self.file_names) and np.array_equal(file_names, "
             "self.file_names):",
             "if len(file_names) == len(self.file_names):",
             ("tests/imagenetx/test_imagenetx_predictions.py",),
             "predictions aligned by position when the image counts agree (ids not matched)"),
    Mutation("M80", "imagenetx/predictions.py",
             "bad = ~np.isfinite(probs) | (probs < 0) | (probs > 1)",
             "bad = ~np.isfinite(probs) | (probs < 0)",
             ("tests/imagenetx/test_imagenetx_predictions.py",),
             "predicted probabilities in percent (above 1) accepted: calibration silently wrong"),
    Mutation("M81", "imagenetx/predictions.py", "    out[:, index < 0] = np.nan\n", "",
             ("tests/imagenetx/test_imagenetx_predictions.py",),
             "combined models: an image a model lacks gets its first image's probability, not NaN"),
    Mutation("M82", "factor_analysis/timm.py",
             'bare = inner.str.split(r"[\\s,\\]]+", regex=True).str[0]',
             'bare = inner.str.split(r"[\\s,\\]]+", regex=True).str[-2]',
             ("tests/factor_analysis/test_factors_timm.py",
              "tests/imagenetx/test_imagenetx_predictions.py"),
             "timm --topk lists: the last class of the list taken, not the top-1"),
    Mutation("M83", "biasbed/report.py", "({value - oracle:+.1f})", "({oracle - value:+.1f})",
             ("tests/biasbed/test_protocol.py",),
             "BiasBed Table 1's rule − oracle difference printed with its sign flipped",
             expect="caught"),  # survived before test_rule_gap_frame_cells_are_oracle_rule_...
    Mutation("M84", "vqa/store.py", "        marker.unlink()  # the folder",
             "        pass  # the folder",
             ("tests/vqa/test_io_eval.py", "tests/vqa/test_selection.py"),
             "a rebuild that fails midway leaves the old build.json: a half-written folder reads "
             "as complete",
             expect="caught"),  # survived before test_a_rebuild_that_fails_midway_is_not_read_...
    Mutation("M85", "vqa/report.py", 'return float("nan") if value is None else 100.0 * value',
             'return float("nan") if value is None else value',
             ("tests/vqa/test_report.py",),
             "VQA baseline table in fractions under a header that says percent",
             expect="caught"),  # survived before tests/vqa/test_report.py (no test read it)
    Mutation("M86", "vqa/report.py", "{s: _pct(v) for s, v in scores[m][part].items()}",
             '{s: _pct(v) for s, v in scores[m]["head"].items()}',
             ("tests/vqa/test_report.py",),
             "acc-head and acc-tail table: the tail columns show acc-head",
             expect="caught"),  # survived before test_head_and_tail_columns_each_show_their_...
    Mutation("M87", "diagvib/comparison.py", 'df = df[df["status"].astype(str) == "done"]',
             'df = df[df["status"].astype(str) != "failed"]',
             ("tests/diagvib/test_comparison.py",),
             "model comparison counts a pending job's old metric value (status not done)",
             expect="caught"),  # survived before test_only_done_jobs_are_compared_not_a_...
    Mutation("M88", "imagenetx/predict.py", "batch_size=batch_size, shuffle=False,",
             "batch_size=batch_size, shuffle=True,",
             ("tests/imagenetx/test_imagenetx_predict_inputs.py",),
             "imagenetx predict shuffles the images: predictions written against other file names",
             expect="caught"),  # survived before test_each_file_gets_the_prediction_of_its_own_...
    Mutation("M89", "vqa/loaders.py", 'how="left", indicator=True)',
             'how="inner", indicator=True)',
             ("tests/vqa/test_io_eval.py",),
             "questions without an annotation silently dropped (a partial annotation file)"),
    Mutation("M90", "factor_analysis/one_call.py", "if model_col is not None:",
             "if False:",
             ("tests/factor_analysis/test_factors_timm.py",),
             "model_col with a timm CSV silently ignored, not refused"),
    Mutation("M91", "diagvib/spec.py", "apportion_cells(w[a], int(rows[a]), tie_start + a)",
             "apportion_cells(w[a], int(rows[a]), tie_start)",
             ("tests/diagvib/test_spec.py",),
             "cell apportionment without its per-row tie rotation: the first column gets every "
             "leftover image",
             expect="caught"),  # survived before test_uniform_cells_spread_leftover_images_...
    Mutation("M92", "diagvib/spec.py",
             'key = "train" if split == "val" and "val" not in self.weights else split',
             'key = "train" if split == "val" else split',
             ("tests/diagvib/test_spec.py",),
             "a spec's own val weights silently ignored (val always follows train)",
             expect="caught"),  # survived before test_a_spec_with_its_own_val_weights_uses_them
    Mutation("M93", "diagvib/spec.py", "if not np.all(np.isfinite(arr)) or np.any(arr < 0):",
             "if not np.all(np.isfinite(arr)):",
             ("tests/diagvib/test_spec.py",),
             "negative cell weights summing to 1 accepted (refusal dropped)"),
    Mutation("M94", "diagvib/spec.py", "order = np.lexsort((gen.random(n), cells))",
             'order = np.argsort(gen.random(n), kind="stable")',
             ("tests/diagvib/test_spec.py",),
             "uncorrelated factors balanced over the split, not within every joint cell"),
    Mutation("M95", "diagvib/dataset.py", "self.render_seed = spec.render_seed(self.seed)",
             "self.render_seed = spec.render_seed(0)",
             ("tests/diagvib/test_dataset.py",),
             "the dataset's pixel seed silently ignored (every seed the same images)"),
    Mutation("M96", "diagvib/dataset.py",
             "self._labels = np.ascontiguousarray(self._assignment.classes[:, predicted])",
             "self._labels = np.ascontiguousarray(self._assignment.local[:, predicted])",
             ("tests/diagvib/test_dataset.py", "tests/diagvib/test_head.py"),
             'head="full" labels are the selected-class positions 0..2, not the class indices'),
    Mutation("M97", "train/models.py", "return names[-1]", "return names[0]",
             ("tests/train/test_models.py",),
             "the classifier head taken as the model's first nn.Linear, not its last"),
    Mutation("M98", "diagvib/gallery.py", '"scale": "large",', '"scale": "larger",',
             ("tests/diagvib/test_cli_render.py",),
             "Fig. 2 traversal drawn at the fourth scale class, not the fifth",
             expect="caught"),  # survived before test_traversal_fixes_the_classes_of_paper_...
    Mutation("M99", "train/normalization.py", "if bool((std <= 0).any()):", "if False:",
             ("tests/train/test_normalization.py::"
              "test_a_constant_channel_is_refused_not_divided_by_zero",),
             "a constant training channel z-scored with std 0 (inf/NaN inputs), not refused",
             expect="caught"),  # survived before test_a_constant_channel_is_refused_not_...
    Mutation("M100", "train/normalization.py", "mean = mean + delta * (n / total)",
             "mean = mean + delta * (count / total)",
             ("tests/train/test_normalization.py",),
             "streamed channel mean merges a batch with the running count's weight"),
    Mutation("M101", "train/precision.py",
             'return _grad_scaler(device) if precision == "fp16" else None',
             'return _grad_scaler(device) if precision == "bf16" else None',
             ("tests/train/test_mixed_precision.py",),
             "fp16 trains without its loss scaler (bf16 gets one)"),
    Mutation("M102", "diagvib/factors.py", "((2 / 11, 3 / 11), (6 / 11, 7 / 11)),",
             "((2 / 11, 3 / 11), (5 / 11, 6 / 11)),",
             ("tests/diagvib/test_factors.py", "tests/diagvib/test_render.py"),
             "lightness 'darker': bright value drawn from 5/11..6/11 (Table A1: 6/11..7/11)",
             expect="caught"),  # survived before test_every_lightness_class_matches_the_...
    Mutation("M103", "train/algorithms/sagnet.py",
             "new_var = a * var + (1 - a) * var[perm]",
             "new_var = (a * std + (1 - a) * std[perm]) ** 2",
             ("tests/train/test_algorithms_biasbed.py",),
             "SagNet's style randomisation interpolates standard deviations, not variances",
             expect="caught"),  # survived before test_sagnet_style_randomisation_interpolates_...
    Mutation("M104", "train/algorithms/padain.py", "mean = x.mean(dim=(2, 3), keepdim=True)",
             "mean = x.mean(dim=(1, 2, 3), keepdim=True)",
             ("tests/train/test_algorithms_biasbed.py",
              "tests/biasbed/test_reference_algorithms.py"),
             "AdaIN/pAdaIN/SagNet instance mean over channels too (layer norm's, not per channel)"),
    Mutation("M105", "biasbed/datasets.py", "size = round(self.image_size * 256 / 224)",
             "size = self.image_size",
             ("tests/biasbed/test_datasets.py", "tests/biasbed/test_imagenet_eval.py",
              "tests/biasbed/test_paper_recipe.py"),
             "ImageNet evaluation resizes to the crop size: the whole image, not its centre "
             "224/256",
             expect="caught"),  # survived before test_imagenet_evaluation_takes_the_centre_224_...
    Mutation("M106", "biasbed/datasets.py",
             "im = tvf.resize(im, [size], tvf.InterpolationMode.BILINEAR)",
             "im = tvf.resize(im, [size, size], tvf.InterpolationMode.BILINEAR)",
             ("tests/biasbed/test_datasets.py", "tests/biasbed/test_imagenet_eval.py",
              "tests/biasbed/test_paper_recipe.py"),
             "evaluation image squashed to a square before the centre crop (aspect ratio lost)",
             expect="caught"),  # survived before test_imagenet_evaluation_takes_the_centre_224_...
    Mutation("M107", "biasbed/samples.py", "size=min(per_set, len(data)), replace=False))",
             "size=min(per_set, len(data)), replace=True))",
             ("tests/biasbed/test_samples.py",),
             "sample figure draws images with replacement: a row can show one image twice",
             expect="caught"),  # survived before test_same_seed_same_files_... checked all 8 once
    Mutation("M108", "vqa/baselines.py", "rule[key] = (answers.count(top) / len(answers), top)",
             "rule[key] = (answers.count(top), top)",
             ("tests/vqa/test_baselines.py::test_priors_on_hand_table",
              "tests/vqa/test_baselines.py::"
              "test_keyword_prior_prefers_the_most_concentrated_word_not_the_most_frequent"),
             "keyword prior picks the word with the most majority answers, not the highest share",
             expect="caught"),  # survived before test_keyword_prior_prefers_the_most_...
    Mutation("M109", "vqa/baselines.py",
             "arr.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))",
             "arr.reshape(n, 2, h // 2, 2, w // 2, c).mean(axis=(1, 3))",
             ("tests/vqa/test_baselines.py::test_cnn_bow_images_are_averaged_over_2x2_blocks",),
             "cnn-bow's 2x2 average pooling averages far-apart pixels (wrong reshape)",
             expect="caught"),  # survived before test_cnn_bow_images_are_averaged_over_2x2_...
    Mutation("M110", "vqa/synthetic.py", "planted = sum(cell) % k  # Latin square",
             "planted = cell[0] % k  # Latin square",
             ("tests/vqa/test_planted.py",),
             "planted composite shortcuts: the first slot alone predicts the answer (no Latin "
             "square)"),
    Mutation("M111", "vqa/synthetic.py",
             "(planted + 1 + (j - n_major) % (k - 1)) % k",
             "(planted + (j - n_major) % (k - 1)) % k",
             ("tests/vqa/test_planted.py",),
             "planted shortcut's minority answers include the planted one (majority share off)"),
    Mutation("M112", "vqa/planted.py", ".value_counts(normalize=True)", ".value_counts()",
             ("tests/vqa/test_planted.py",),
             "planted study's population shares are counts, not fractions",
             expect="caught"),  # survived before test_population_shares_of_each_ood_set_are_...
    Mutation("M113", "vqa/loaders.py", "        _check_row_lengths(path, len(df.columns))\n", "",
             ("tests/vqa/test_io_eval.py",),
             "a CSV row with fewer fields than the header padded silently (check dropped)",
             expect="caught"),  # survived before test_a_csv_row_with_fewer_fields_than_the_...
    Mutation("M115", "stats/friedman.py",
             "chi2 = float(raw / (1.0 - ties / (n * (k**3 - k))))", "chi2 = float(raw)",
             ("tests/stats/test_stats_friedman.py",),
             "Friedman chi2 of two algorithms without its tie correction (scipy's k >= 3 has it)"),
    Mutation("M116", "stats/posthoc.py", 'axis=1, method="average")', 'axis=1, method="min")',
             ("tests/stats/test_stats_posthoc.py", "tests/stats/test_stats_compare.py"),
             "tied algorithms share the better rank (min), not the average: mean ranks too low"),
    Mutation("M117", "stats/posthoc.py", "if j > i and j > last_end:", "if j > i:",
             ("tests/stats/test_stats_posthoc.py", "tests/stats/test_stats_compare.py"),
             "CD diagram draws cliques nested in a larger one (not maximal groups)"),
    Mutation("M118", "stats/compare.py",
             "best = row.min() if self.lower_is_better else row.max()", "best = row.max()",
             ("tests/stats/test_stats_compare.py",),
             "LaTeX table bolds the highest mean even when lower is better (bolds the worst)",
             expect="caught"),  # survived before test_latex_bolds_the_best_mean_of_each_block_...
    Mutation("M119", "stats/selection.py",
             'gaps = size[size < grid["epoch"] * grid["test_set"]]',
             'gaps = size[size < grid["epoch"]]',
             ("tests/stats/test_stats_selection.py",),
             "an epoch without a score on one test set accepted (the run silently drops out)"),
    Mutation("M120", "stats/selection.py", 'return winners.drop_duplicates(keys, keep="first")',
             'return winners.drop_duplicates(keys, keep="last")',
             ("tests/stats/test_stats_selection.py",),
             "best-validation (and oracle) ties resolved to the latest epoch, not the earliest"),
    Mutation("M121", "diagvib/figures.py", 'yerr=100 * sel["std"].fillna(0.0)',
             'yerr=sel["std"].fillna(0.0)',
             ("tests/diagvib/test_chgo_marks.py",),
             "CHGO − ZGO bars in percentage points, error bars left as fractions",
             expect="caught"),  # survived before test_chgo_bars_and_error_bars_are_both_in_...
    Mutation("M122", "diagvib/figures.py", 'ax.scatter(1.0 - group["P_ji"], group["P_ij"]',
             'ax.scatter(group["P_ji"], group["P_ij"]',
             ("tests/diagvib/test_result_display.py",),
             "pair-symmetry plot draws P_ji, not 1 − P_ji, on its x axis",
             expect="caught"),  # survived before test_pair_symmetry_plots_p_ij_against_one_...
    Mutation("M123", "diagvib/report.py", 'not by_factor.at[factor, "n"] >= 2',
             'not by_factor.at[factor, "n"] >= 1',
             ("tests/diagvib/test_report.py", "tests/diagvib/test_chgo_marks.py"),
             "report prints ± 0.00 for a number over one dataset sample (no spread measured)"),
    Mutation("M124", "imagenetx/figures.py", "sems = table.groupby(group_of).sem()",
             "sems = table.groupby(group_of).std()",
             ("tests/imagenetx/test_imagenetx_figures.py",),
             "figure 1b's error bars the std of the group, under an axis saying s.e.m.",
             expect="caught"),  # survived before test_group_comparison_error_bars_are_the_...
    Mutation("M125", "imagenetx/report.py",
             "shares = counts / counts.sum(axis=0).where(counts.sum(axis=0) > 0)",
             "shares = counts / counts.to_numpy().sum()",
             ("tests/imagenetx/test_imagenetx_report_readable.py",),
             "χ² table's shares over both subsets' total, not each subset's"),
    Mutation("M126", "factor_analysis/report.py",
             'np.stack([long["error_ratio"] - long["error_ratio_lower"],',
             'np.stack([long["error_ratio_upper"] - long["error_ratio"],',
             ("tests/factor_analysis/test_factors_report_figures.py",),
             "factor report's bootstrap whiskers symmetric: the lower one is the upper's length",
             expect="caught"),  # survived before test_bar_whiskers_span_each_factors_own_...
    Mutation("M127", "cli/vqa.py", 'if on != "test" and splits is None:',
             'if on not in ("test", "val") and splits is None:',
             ("tests/vqa/test_release.py", "tests/vqa/test_cli_score_options.py"),
             "vqa score --on val with --release/--data not refused: test sets labelled IID val",
             expect="caught"),  # survived before test_on_val_without_built_splits_is_refused
    Mutation("M128", "cli/vqa.py", 'if train is not None and metric != "vqa-vs":',
             'if train is not None and metric not in METRICS:',
             ("tests/vqa/test_release.py", "tests/vqa/test_io_eval.py"),
             "vqa score --train with --metric official silently ignored, not refused"),
    Mutation("M129", "cli/vqa.py", 'is_train = samples["split"] == "train"',
             'is_train = samples["split"] != "test"',
             ("tests/vqa/test_release.py", "tests/vqa/test_cli_score_options.py"),
             "vqa score --splits --metric vqa-vs: vocabulary from train + val, not train",
             expect="caught"),  # survived before test_vqa_vs_vocabulary_of_built_splits_is_...
    Mutation("M130", "cli/vqa.py",
             'cells = [*result["ood"].values(), result["ood_mean"], result["iid"]]',
             'cells = [*result["ood"].values(), result["iid"], result["ood_mean"]]',
             ("tests/vqa/test_release.py", "tests/vqa/test_cli_score_options.py"),
             "vqa score's paper-row line: IID and OOD mean swapped under 'mean IID'",
             expect="caught"),  # survived before test_printed_paper_row_is_ood_sets_then_...
    Mutation("M131", "cli/vqa.py", 'if injection is not None and "cnn-bow" not in models:',
             'if injection is not None and "cnn-bow" not in choices:',
             ("tests/vqa/test_io_eval.py", "tests/cli/test_hostile_inputs.py"),
             "vqa baselines --inject without cnn-bow silently ignored, not refused"),
    Mutation("M132", "cli/stats.py", "if pairs and not strict:", "if pairs and strict is None:",
             ("tests/stats/test_stats_cli.py", "tests/stats/test_stats_conventions.py"),
             "stats compare --trained-on without --strict silently ignored, not refused"),
    Mutation("M133", "cli/stats.py",
             "excluded += [b for b in in_distribution if b not in excluded]",
             "excluded = [b for b in in_distribution if b not in excluded]",
             ("tests/stats/test_stats_cli.py", "tests/stats/test_stats_conventions.py"),
             "stats compare --strict drops the --exclude-block blocks from the exclusion",
             expect="caught"),  # survived before test_strict_adds_its_blocks_to_the_excluded_ones
    Mutation("M134", "cli/diagvib_metrics.py", "unique.setdefault(d.resolve(), d)",
             "unique.setdefault(d, d)",
             ("tests/cli/test_option_boundaries.py",),
             "diagvib metrics: one run folder given in two spellings read twice",
             expect="caught"),  # survived before test_metrics_of_one_folder_in_two_spellings_...
    Mutation("M135", "cli/options.py", "if not 0 <= sample < DEFAULT_SAMPLES:",
             "if not 0 <= sample <= DEFAULT_SAMPLES:",
             ("tests/cli/test_bad_inputs.py", "tests/cli/test_option_boundaries.py"),
             "--samples 5 accepted: a sixth dataset sample outside the benchmark's five",
             expect="caught"),  # survived before test_samples_are_the_benchmarks_five_ids_0_to_4
    Mutation("M136", "cli/imagenetx.py", "        if clash:\n", "        if len(clash) > 1:\n",
             ("tests/imagenetx/test_imagenetx_predict_inputs.py",
              "tests/cli/test_hostile_inputs.py"),
             "imagenetx predict: one preprocessing option with --data-config silently ignored"),
    Mutation("M137", "cli/imagenetx.py", 'interpolation or "bilinear")',
             'interpolation or "bicubic")',
             ("tests/imagenetx/test_imagenetx_predict_inputs.py",),
             "imagenetx predict's default resize interpolation bicubic, not the documented "
             "bilinear",
             expect="caught"),  # survived before test_preprocessing_options_and_their_...
    Mutation("M138", "cli/vqa.py", 'if select and "cnn-bow" not in models:',
             'if select and "cnn-bow" not in choices:',
             ("tests/vqa/test_io_eval.py", "tests/vqa/test_cli_score_options.py"),
             "vqa baselines --select without cnn-bow silently ignored, not refused",
             expect="caught"),  # survived before test_select_without_cnn_bow_is_refused_...
    Mutation("M139", "vqa/analysis.py",
             "len(ours[k] & ood_ids[k]) / len(ours[k] | ood_ids[k])",
             "len(ours[k] & ood_ids[k]) / len(ood_ids[k])",
             ("tests/vqa/test_analysis.py",),
             "release agreement's Jaccard over the released OOD set's size, not the union's",
             expect="caught"),  # survived before test_agreement_jaccard_is_over_the_union_...
    Mutation("M140", "vqa/analysis.py", "else 100.0 * row[\"ood\"][k] for k in SHORTCUTS]",
             "else row[\"ood\"][k] for k in SHORTCUTS]",
             ("tests/vqa/test_analysis.py",),
             "Fig. 6's released OOD accuracy in fractions, documented in percent"),
    Mutation("M141", "vqa/splits.py",
             "return float((flags.group_entropy * flags.group_size).sum() / total)",
             "return float(flags.group_entropy[flags.present].mean())",
             ("tests/vqa/test_concepts_splits.py", "tests/vqa/test_analysis.py"),
             "imbalance degree E an unweighted mean over groups (the |g|/N weights dropped)"),
    Mutation("M142", "vqa/splits.py", "imb = (ent < entropy_threshold) & (m > 1)",
             "imb = (ent <= entropy_threshold) & (m > 1)",
             ("tests/vqa/test_concepts_splits.py",),
             "a group of normalised entropy exactly the threshold counted as imbalanced (< for <=)",
             expect="caught"),  # survived before test_a_perfectly_balanced_group_is_not_...
    Mutation("M143", "vqa/splits.py", "ranked = order[perm]", "ranked = perm",
             ("tests/vqa/test_concepts_splits.py",),
             "70/5/25 split depends on row order (the sorted-id permutation skipped)"),
    Mutation("M144", "imagenetx/spillover.py",
             "stats.ttest_ind(high, low, equal_var=False)",
             "stats.ttest_ind(high, low, equal_var=True)",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "spill-over test is Student's pooled t, not Welch's"),
    Mutation("M145", "imagenetx/spillover.py",
             'return 100.0 - strength if group == "crop" else strength', "return strength",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "crop strength is the crop parameter itself: weak and strong crops swapped"),
    Mutation("M146", "imagenetx/spillover.py",
             "ends = sorted((present[int(np.argmin(fitted))], present[int(np.argmax(fitted))]))",
             "ends = (present[int(np.argmin(fitted))], present[int(np.argmax(fitted))])",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "cubic spill-over compares fit-min against fit-max, not weaker against stronger"),
    Mutation("M147", "factor_analysis/analysis.py", 'long = long[(long["count"] >= min_count)',
             'long = long[(long["count"] > min_count)',
             ("tests/factor_analysis/test_engine.py",),
             "worst factors drop a factor with exactly min_count items (>= for >)",
             expect="caught"),  # survived before test_worst_factors_keep_a_factor_with_...
    Mutation("M148", "factor_analysis/analysis.py", 'frame["average"] = ece[:, 0]',
             'frame["average"] = ece[:, 1:].mean(axis=1)',
             ("tests/factor_analysis/test_engine.py",),
             "calibration 'average' the mean of the per-factor ECEs, not the ECE on all items",
             expect="caught"),  # survived before test_calibration_average_is_the_ece_over_...
    Mutation("M149", "factor_analysis/table.py", "    if frame[pred_col].isna().any():\n",
             "    if False:\n",
             ("tests/factor_analysis/test_engine.py", "tests/factor_analysis/test_factors_cli.py"),
             "an empty prediction cell silently scored as the last label (refusal dropped)",
             expect="caught"),  # survived before test_bad_predictions_are_one_line_errors[...]
    Mutation("M150", "factor_analysis/analysis.py", "missing |= col_codes < 0",
             "missing |= col_codes < -1",
             ("tests/factor_analysis/test_engine.py",),
             "worst-group accuracy: a missing factor value grouped with the first value"),
    Mutation("M151", "train/trainer.py",
             "test_acc={name: best_evals[name].acc for name in test_sets}",
             "test_acc={name: tests[name].acc for name in test_sets}",
             ("tests/train/test_trainer.py",),
             "reported test accuracy that of the last epoch, not the lowest-validation-loss one",
             expect="caught"),  # survived before test_reported_test_accuracy_is_that_of_the_best...
    Mutation("M152", "train/trainer.py", "    algorithm.eval()\n    loader = loader or",
             "    loader = loader or",
             ("tests/train/test_trainer.py",),
             "evaluation in training mode: dropout on, BatchNorm statistics updated by test sets"),
    Mutation("M153", "train/trainer.py", "stopped_early = epoch + 1 < config.epochs",
             "stopped_early = epoch + 1 <= config.epochs",
             ("tests/train/test_trainer.py",),
             "patience running out at the last epoch recorded as an early stop",
             expect="caught"),  # survived before test_patience_running_out_at_the_last_epoch_...
    Mutation("M154", "train/trainer.py", "indices.append(torch.arange(position, position + n))",
             "indices.append(torch.arange(n))",
             ("tests/train/test_trainer.py",),
             "per-tag accuracy of a dataset without 'index': every batch read the first tags",
             expect="caught"),  # survived before test_per_tag_accuracy_without_item_indices_...
    Mutation("M155", "train/trainer.py", "with autocast_for(device, precision):",
             'with autocast_for(device, "fp32"):',
             ("tests/train/test_mixed_precision.py", "tests/train/test_trainer.py"),
             "bf16/fp16 runs evaluated in float32 (autocast scope only around training steps)",
             expect="caught"),  # survived before test_evaluation_runs_under_the_configs_autocast...
    Mutation("M156", "train/step_modes.py",
             "sampler = EpochBatches(n_train, config.batch_size, config.seed, config.drop_last)",
             "sampler = EpochBatches(n_train, config.batch_size, config.seed)",
             ("tests/train/test_step_modes.py",),
             "CUDA-graph plan ignores drop_last: static batches of an uneven set called ragged",
             expect="caught"),  # survived before test_drop_last_makes_an_uneven_training_set_...
    Mutation("M157", "train/step_modes.py", 'if kinds != ["Adam"]:', 'if "Adam" not in kinds:',
             ("tests/train/test_step_modes.py",),
             "CUDA-graph plan accepts Adam beside another optimiser (SGD's step captured)",
             expect="caught"),  # survived before test_adam_beside_another_optimiser_is_not_graphed
    Mutation("M158", "train/metrics.py", ".sum().div(seen.sum())", ".mean()",
             ("tests/train/test_trainer.py", "tests/diagvib/test_evaluation.py"),
             "mean per-class accuracy of tensors counts classes absent from the targets as 0"),
    Mutation("M159", "diagvib/evaluation.py", "(preds >= num_classes)", "(preds > num_classes)",
             ("tests/diagvib/test_evaluation.py",),
             "a predicted class id equal to num_classes accepted (scored as a miss, not refused)"),
    Mutation("M160", "runner/collect.py", "if (path / DONE_FILE).exists():",
             "if (path / RESULT_FILE).exists():",
             ("tests/runner/test_jobs.py",
              "tests/runner/test_faults.py::test_junk_and_copied_folders_are_reported_not_counted"),
             "job table reads a result.json without its done marker (a pending job skipped)",
             expect="caught"),  # survived before test_a_result_without_its_done_marker_is_a_...
    Mutation("M161", "runner/records.py", "and not isinstance(value, bool) and value >= 0",
             "and not isinstance(value, bool)",
             ("tests/runner/test_jobs.py",),
             "a result with best_epoch or epochs_run -1 counted done",
             expect="caught"),  # survived before test_a_negative_epoch_count_is_no_valid_result
    Mutation("M162", "diagvib/checkpoints.py", 'first = epochs.drop_duplicates("job_id")',
             'first = epochs.drop_duplicates("job_id", keep="last")',
             ("tests/diagvib/test_checkpoints.py",),
             "checkpoint rules fill test_acc from a job's last test set, not its first",
             expect="caught"),  # survived before test_checkpoint_rules_fill_test_acc_from_each_...
    Mutation("M163", "diagvib/jobs.py", "train=base.replace(seed=int(seed)), spec=spec,",
             "train=base, spec=spec,",
             ("tests/diagvib/test_jobs.py",),
             "every training seed plans the same job (the seed left out of the job)"),
    Mutation("M164", "diagvib/jobs.py",
             "found = ExperimentSpec.from_yaml(text).content_hash()", "found = digest",
             ("tests/diagvib/test_jobs.py",),
             "a generated spec file edited after `diagvib studies` wrote it is used",
             expect="caught"),  # survived before test_a_spec_file_edited_after_generation_...
    Mutation("M165", "diagvib/jobs.py",
             '    if config.algorithm != "erm":\n        raise RunnerError(f"model',
             '    if False:\n        raise RunnerError(f"model',
             ("tests/diagvib/test_baselines.py", "tests/diagvib/test_jobs.py"),
             "an explicit other algorithm on a model with its own silently replaced"),
    Mutation("M166", "diagvib/jobs.py", 'predicted, _, correlated = middle.partition("-")',
             'correlated, _, predicted = middle.partition("-")',
             ("tests/diagvib/test_jobs.py",),
             "job table swaps the predicted and the correlated factor"),
    Mutation("M167", "runner/runs.py", "            todo += later\n",
             "            todo = todo\n",
             ("tests/runner/test_budget.py",),
             "under a budget, jobs after the first round neither run nor listed remaining"),
    Mutation("M168", "runner/runs.py", "if collect_table and unique:",
             "if collect_table and todo:",
             ("tests/runner/test_jobs.py", "tests/runner/test_budget.py"),
             "a run whose jobs were all done already leaves a stale or missing job table",
             expect="caught"),  # survived before test_a_rerun_with_every_job_done_still_...
    Mutation("M169", "runner/runs.py",
             "summary = RunSummary(outcomes, time.perf_counter() - start, remaining)",
             "summary = RunSummary(outcomes, time.perf_counter() - start)",
             ("tests/runner/test_budget.py",),
             "the run summary lists no remaining jobs when the budget ran out"),
    Mutation("M170", "runner/collect.py", "if job.job_id != path.name:",
             "if not job.job_id:",
             ("tests/runner/test_faults.py::test_junk_and_copied_folders_are_reported_not_counted",
              "tests/diagvib/test_jobs.py"),
             "job table counts a copied job folder (its job.json names another id) as a job"),
    Mutation("M171", "cli/diagvib_render.py", "if not 0 < n <= MAX_RENDER_IMAGES:",
             "if not 0 < n:",
             ("tests/diagvib/test_cli_render.py", "tests/cli/test_bad_inputs.py"),
             "diagvib render's cap on --n dropped (10 million images planned, not refused)",
             expect="caught"),  # survived before test_render_refuses_more_images_than_its_cap
    Mutation("M172", "cli/diagvib_render.py", "for target in (out, png):", "for target in (out,):",
             ("tests/diagvib/test_cli_render.py", "tests/cli/test_bad_inputs.py"),
             "diagvib render's --png not checked before rendering"),
    Mutation("M173", "cli/diagvib_studies.py", "seed=image_seed, generator=generator)",
             "seed=seed, generator=generator)",
             ("tests/diagvib/test_dataset.py", "tests/diagvib/test_cli_json.py"),
             "diagvib export --image-seed ignored: the pixels drawn from the benchmark --seed",
             expect="caught"),  # survived before test_export_image_seed_reaches_the_pixels
    Mutation("M174", "cli/biasbed.py", "if value is not None and not value > 0:",
             "if value is not None and not value >= 0:",
             ("tests/cli/test_hostile_inputs.py", "tests/biasbed/test_cli_options.py"),
             "biasbed run --lr 0 / --scale 0 accepted (x>0 loosened to x>=0)"),
    Mutation("M175", "cli/diagvib_run.py", "        patience=patience,\n", "\n",
             ("tests/diagvib/test_jobs.py", "tests/cli/test_shared_options.py"),
             "diagvib run --patience never reaches the training config (silently the preset's)",
             expect="caught"),  # survived before test_diagvib_run_training_options_reach_...
    Mutation("M176", "cli/options.py", "return preset if preset is not None else protocol",
             "return preset",
             ("tests/biasbed/test_cli_options.py", "tests/cli/test_shared_options.py"),
             "the former --protocol name of --preset silently ignored"),
    Mutation("M177", "cli/options.py", "account=self.slurm_account, qos=self.slurm_qos,",
             "account=self.slurm_account, qos=self.slurm_account,",
             ("tests/cli/test_shared_options.py", "tests/runner/test_backends.py"),
             "--slurm-qos replaced by the --slurm-account value on its way to sbatch"),
    Mutation("M178", "cli/biasbed.py", "nemenyi_clip=nemenyi_clip,", "nemenyi_clip=False,",
             ("tests/biasbed/test_table2_protocol.py", "tests/biasbed/test_cli_options.py"),
             "biasbed report --nemenyi-clip silently ignored"),
    Mutation("M179", "imagenetx/analyses.py", "z = stats.norm.ppf((1 + level) / 2)",
             "z = stats.norm.ppf(level)",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "Table 3's Wilson interval with the one-sided z (1.645 for a 95 % interval)"),
    Mutation("M180", "imagenetx/analyses.py", "if values[f] > 1][-k:][::-1]",
             "if values[f] > 1][:k][::-1]",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "Table 3 lists the k least susceptible factors above 1, not the k most",
             expect="caught"),  # survived before test_table3_lists_the_most_susceptible_...
    Mutation("M181", "imagenetx/analyses.py", "ratio_bounds = (1.0 - bounds[..., ::-1]) / base",
             "ratio_bounds = (1.0 - bounds) / base",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "Table 3's error-ratio interval not flipped: lower above upper"),
    Mutation("M182", "imagenetx/analyses.py", "sizes.index[sizes >= MIN_MODELS].max()]",
             "sizes.index[sizes >= MIN_MODELS].min()]",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "figure 17 takes the weakest crop / colour-jitter strength, not the strongest",
             expect="caught"),  # survived before test_figure17_takes_the_strongest_...
    Mutation("M183", "imagenetx/analyses.py", "MAIN_FAMILIES: tuple[str, ...] = FAMILIES[:4]",
             "MAIN_FAMILIES: tuple[str, ...] = FAMILIES[:3]",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "figures 1b/4 drop the robustness-intervention family (three groups, not four)",
             expect="caught"),  # survived before test_figure4_keeps_the_four_model_groups_...
    Mutation("M184", "imagenetx/analyses.py", "group_counts(chunk >= 0, design)",
             "group_counts(np.ones_like(chunk, dtype=bool), design)",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "figure 7: images a model has no prediction for counted as its errors",
             expect="caught"),  # survived before test_accuracy_by_active_factors_leaves_out_...
    Mutation("M185", "imagenetx/analyses.py", "return frame.iloc[: last + 1]",
             "return frame.iloc[:last]",
             ("tests/imagenetx/test_imagenetx_analyses.py",),
             "figure 7's image counts lose the row of the most active factors (off by one)"),
    Mutation("M186", "imagenetx/statistics.py", "result = welch_by_factor(base, other, alpha)",
             "result = welch_by_factor(other, base, alpha)",
             ("tests/imagenetx/test_imagenetx_annotations_stats.py",),
             "figure 6 strength effects: baseline − strength, not strength − baseline",
             expect="caught"),  # survived before the difference check of test_welch_and_...
    Mutation("M187", "imagenetx/statistics.py",
             "groups: Mapping[str, str] | pd.Series, alpha: float = 0.05",
             "groups: Mapping[str, str] | pd.Series, alpha: float = 0.1",
             ("tests/imagenetx/test_imagenetx_annotations_stats.py",),
             "Alexander-Govern test significant at 0.10 by default (figure 1b: 0.05)",
             expect="caught"),  # survived before test_alexander_govern_is_significant_at_...
    Mutation("M188", "imagenetx/statistics.py",
             'if match and not match.group(1).lower().startswith("id"):', "if match:",
             ("tests/imagenetx/test_imagenetx_annotations_stats.py",),
             "a model name's run id (id166) read as a hyperparameter"),
    Mutation("M189", "imagenetx/annotations.py", "        valid &= (digits <= 9).all(axis=1)\n",
             "",
             ("tests/imagenetx/test_imagenetx_annotations_stats.py",),
             "a validation file name with a letter among its digits read as an image number",
             expect="caught"),  # survived before test_validation_index_needs_eight_...
    Mutation("M190", "imagenetx/annotations.py", '.str.slice(15, 23)', '.str.slice(15, 22)',
             ("tests/imagenetx/test_imagenetx_annotations_stats.py",),
             "non-ASCII batch: image numbers read from 7 of their 8 digits (off by one)",
             expect="caught"),  # survived before test_validation_index_is_the_same_in_a_...
    Mutation("M191", "imagenetx/annotations.py",
             "matrix = np.full((len(sets), width), -1, dtype=np.int16)",
             "matrix = np.full((len(sets), width), 0, dtype=np.int16)",
             ("tests/imagenetx/test_imagenetx_annotations_stats.py",),
             "ReaL label sets padded with class 0: tench counts as a label of every image"),
    Mutation("M192", "imagenetx/annotations.py", "(out >= NUM_VAL_IMAGES)] = -1",
             "(out > NUM_VAL_IMAGES)] = -1",
             ("tests/imagenetx/test_imagenetx_annotations_stats.py",),
             "validation image 50,001 accepted (index 50,000, past the end; >= for >)"),
    Mutation("M193", "diagvib/study_figures.py", "rows = w.reshape(N_SELECTED, -1).sum(axis=1)",
             "rows = w.reshape(-1, N_SELECTED).sum(axis=0)",
             ("tests/diagvib/test_study_figures.py",),
             "study figure: a non-joint column factor's rows get the correlated factor's "
             "class shares (wrong reshape axis)"),
    Mutation("M194", "diagvib/study_figures.py",
             "key = (local[:, FACTORS.index(spec.predicted)] * N_SELECTED\n"
             "           + local[:, FACTORS.index(column_factor)])",
             "key = (local[:, FACTORS.index(column_factor)] * N_SELECTED\n"
             "           + local[:, FACTORS.index(spec.predicted)])",
             ("tests/diagvib/test_study_figures.py",),
             "cell_shares.csv image counts transposed (rows and columns swapped)"),
    Mutation("M195", "diagvib/study_figures.py",
             "ref = float(shares.train.max()) if reference is None else float(reference)",
             "ref = float(shares.train.max())",
             ("tests/diagvib/test_study_figures.py",),
             "Fig. 3 marker sizes per panel, not on the figure's common scale"),
    Mutation("M196", "diagvib/study_figures.py", "TRAIN_MARKER * math.sqrt(share / reference)",
             "TRAIN_MARKER * share / reference",
             ("tests/diagvib/test_study_figures.py",),
             "Fig. 3 marker radius (not area) proportional to the cell's share"),
    Mutation("M197", "diagvib/inspect.py", "logvar.exp() - 1.0 - logvar).mean(0)",
             "logvar.exp() - 1.0).mean(0)",
             ("tests/diagvib/test_inspect.py",),
             "traversal order by a KL without its -log(sigma^2) term"),
    Mutation("M198", "diagvib/inspect.py", "torch.argsort(kl, descending=True)",
             "torch.argsort(kl, descending=False)",
             ("tests/diagvib/test_inspect.py",),
             "traversal rows least informative latent first"),
    Mutation("M199", "diagvib/inspect.py", "encode(x[index : index + 1])[0][0]",
             "encode(x[index : index + 1])[1][0]",
             ("tests/diagvib/test_inspect.py",),
             "latent traversal around the log-variance instead of the mean code"),
    Mutation("M200", "diagvib/inspect.py", "diff = ((out - pixels).abs() * gain)",
             "diff = ((out - pixels) * gain)",
             ("tests/diagvib/test_inspect.py",),
             "ASR lens figure's difference without abs (darkening clamped to 0)"),
    Mutation("M201", "diagvib/inspect.py", "np.linspace(0, len(test_ds) - 1, max(1, n))",
             "np.linspace(0, len(test_ds), max(1, n))",
             ("tests/diagvib/test_inspect.py",),
             "inspected test images spaced up to len (off by one past the last image)"),
    Mutation("M202", "diagvib/inspect.py", "for i in range(min(traversals, len(x))):",
             "for i in range(traversals):",
             ("tests/diagvib/test_inspect.py",),
             "more traversals asked than images: no cap at the number of images"),
    Mutation("M203", "diagvib/factor_errors.py", "min_coverage: float = 1.0,",
             "min_coverage: float = 0.0,",
             ("tests/factor_analysis/test_diagvib_factors.py",),
             "DiagViB-6 factor report silently accepts predictions for part of the split"),
    Mutation("M204", "diagvib/restyle.py", "size=out.shape[0])", "size=1)",
             ("tests/diagvib/test_restyle.py",
              "tests/train/test_algorithms_biasbed.py::"
              "test_stylized_changes_texture_only_and_keeps_labels"),
             "restyling draws one style class for the whole batch"),
    Mutation("M205", "diagvib/restyle.py", 'if out.get("style", "") not in ("", "texture+hue"):',
             'if out.get("style", "") not in ("", "texture", "texture+hue"):',
             ("tests/diagvib/test_restyle.py",
              "tests/train/test_algorithms_biasbed.py::"
              "test_former_hue_and_texture_pool_hparams_map_to_style"),
             "legacy hue=true with style=texture silently becomes texture+hue (refusal narrowed)"),
    Mutation("M207", "runner/local_processes.py", "slots.value += 1", "slots.value += 0",
             ("tests/runner/test_backends.py::test_each_new_worker_takes_the_next_device_slot",
              "tests/runner/test_backends.py::"
              "test_process_workers_are_pinned_to_one_fake_gpu_each"),
             "every processes worker takes the first device slot (all jobs on GPU 0)"),
    Mutation("M208", "runner/local_processes.py",
             "int(index) < len(visible) and visible[int(index)]:",
             "int(index) < len(visible):",
             ("tests/runner/test_backends.py::test_device_slots_share_and_pin_gpus",
              "tests/runner/test_device_record.py"),
             "without CUDA_VISIBLE_DEVICES, GPU 0's workers get an empty one (no GPU at all)"),
    Mutation("M209", "runner/local_processes.py", "not in (None, 0, -signal.SIGTERM)}",
             "not in (None, 0)}",
             ("tests/runner/test_dead_workers.py",),
             "workers the broken pool stopped count as dead: their jobs failed, not rerun",
             expect="caught"),  # survived before test_a_job_whose_worker_the_broken_pool_...
    Mutation("M210", "runner/mps.py", "if largest <= SMALL_MODEL_MAX_MPARAMS else",
             "if largest < SMALL_MODEL_MAX_MPARAMS else",
             ("tests/runner/test_mps.py",),
             "--jobs-per-gpu auto: a model of exactly 15 M parameters sized as a large one",
             expect="caught"),  # survived before test_jobs_per_gpu_auto_sizes_a_15m_...
    Mutation("M211", "runner/mps.py", "if not (on_cuda and local and jobs_per_gpu > 1):",
             "if not (on_cuda and local and jobs_per_gpu >= 1):",
             ("tests/runner/test_mps.py",),
             "an MPS daemon started for one job per GPU (> 1 for >= 1)"),
    Mutation("M212", "runner/mps.py",
             "pipe = Path(os.environ.get(PIPE_ENV) or DEFAULT_PIPE_DIRECTORY)",
             "pipe = Path(DEFAULT_PIPE_DIRECTORY)",
             ("tests/runner/test_mps.py", "tests/runner/test_device_record.py"),
             "an MPS daemon on CUDA_MPS_PIPE_DIRECTORY unseen: another started, slots renumbered"),
    Mutation("M213", "runner/cluster_backends.py", 'get("GPU", 0) >= 1)', 'get("GPU", 0) > 1)',
             ("tests/runner/test_ray_devices.py",),
             "a Ray cluster with exactly one GPU runs every task on the CPU",
             expect="caught"),  # survived before test_a_cluster_with_one_gpu_...
    Mutation("M214", "runner/cluster_backends.py", 'kwargs["num_cpus"] = workers',
             'kwargs["num_cpus"] = os.cpu_count()',
             ("tests/runner/test_ray_devices.py",),
             "a local Ray instance ignores --workers (every CPU of the machine)",
             expect="caught"),  # survived before test_a_local_ray_instance_gets_...
    Mutation("M215", "runner/cluster_backends.py",
             '    if opts.partition:\n        params["slurm_partition"] = opts.partition\n', "",
             ("tests/runner/test_backends.py::test_slurm_via_submitit_debug_executor",),
             "--slurm-partition not passed to sbatch (the cluster's default partition)",
             expect="caught"),  # survived before the debug executor test read the parameters
    Mutation("M216", "runner/reaper.py", ".split()[19]", ".split()[20]",
             ("tests/runner/test_reaper.py",
              "tests/runner/test_faults.py::"
              "test_a_local_ray_instance_dies_with_a_killed_main_process"),
             "reaper's start time read from /proc/<pid>/stat field 23 (vsize), not 22"),
    Mutation("M217", "runner/reaper.py", "if start_time(pid) == start:",
             "if start_time(pid) is not None:",
             ("tests/runner/test_reaper.py",),
             "reaper kills a reused pid (its start time not compared)",
             expect="caught"),  # survived before tests/runner/test_reaper.py
    Mutation("M218", "runner/backend_api.py", "and settings[key] < 1:", "and settings[key] < 0:",
             ("tests/runner/test_backends.py::test_slurm_settings_below_one_are_refused",
              "tests/cli/test_shared_options.py"),
             "--slurm-mem-gb 0 (and a 0-minute time limit, 0 CPUs) accepted",
             expect="caught"),  # survived before test_slurm_settings_below_one_are_refused
    Mutation("M219", "runner/runs.py", "for job in unique.values():\n        try:",
             "for job in jobs:\n        try:",
             ("tests/runner/test_jobs.py",),
             "a job id handed twice to run_jobs runs and counts twice (a generator: none run)",
             expect="caught"),  # survived before test_a_job_handed_twice_runs_...
    Mutation("M220", "runner/runs.py", "left = len(unique) - done - before - failed",
             "left = len(unique) - done - before",
             ("tests/runner/test_lost_tasks.py",),
             "an interrupted run's 'not done' count includes its failed jobs",
             expect="caught"),  # survived before test_an_interrupted_runs_line_counts_...
    Mutation("M235", "train/algorithms/base.py",
             "betas=cfg.adam_betas, weight_decay=cfg.weight_decay", "betas=cfg.adam_betas",
             ("tests/train/test_algorithm_base.py", "tests/train/test_config.py"),
             "Adam built without the configured weight decay (always 0)",
             expect="caught"),  # survived before tests/train/test_algorithm_base.py
    Mutation("M236", "train/algorithms/base.py",
             "lr=lr or cfg.lr, momentum=cfg.momentum, weight_decay",
             "lr=lr or cfg.lr, weight_decay",
             ("tests/train/test_algorithm_base.py", "tests/train/test_algorithms_biasbed.py"),
             "BiasBed's SGD built without momentum (torch's default 0, not the recipe's 0.9)",
             expect="caught"),  # survived before tests/train/test_algorithm_base.py
    Mutation("M237", "train/algorithms/base.py", 'base = group.setdefault("base_lr", group["lr"])',
             'base = group["lr"]',
             ("tests/train/test_algorithms_biasbed.py",),
             "step schedule applied to the current rate, not the base one (decays compound)"),
    Mutation("M238", "train/algorithms/base.py",
             "if params and not any(p.requires_grad for p in params):",
             "if not any(p.requires_grad for p in params):",
             ("tests/train/test_algorithm_base.py", "tests/train/test_models.py"),
             "frozen_batchnorm='eval' also freezes BatchNorm without affine parameters",
             expect="caught"),  # survived before test_a_frozen_backbone_freezes_only_...
    Mutation("M239", "train/algorithms/base.py",
             "nn.utils.clip_grad_norm_(list(params), max_norm * scale)",
             "nn.utils.clip_grad_norm_(list(params), max_norm)",
             ("tests/train/test_mixed_precision.py",),
             "fp16: SagNet's adversarial clip bound not scaled with the still-scaled gradients"),
    Mutation("M240", "train/algorithms/base.py",
             "scaler.unscale_(together)  # type: ignore[arg-type]\n            ", "",
             ("tests/train/test_mixed_precision.py",),
             "fp16: gradients clipped before they are unscaled (bound divided by the scale)"),
    Mutation("M241", "train/algorithms/base.py", "zero_grad: bool = True,",
             "zero_grad: bool = False,",
             ("tests/train/test_trainer.py", "tests/train/test_mixed_precision.py"),
             "gradients never zeroed between steps: each step uses the sum of all past gradients"),
    Mutation("M242", "train/algorithms/base.py",
             "return isinstance(value, (int, float)) and not isinstance(value, bool)",
             "return isinstance(value, (int, float))",
             ("tests/train/test_algorithm_base.py", "tests/train/test_config.py"),
             "a bool accepted for a float hyper-parameter (w_adv: true trains with weight 1.0)",
             expect="caught"),  # survived before test_a_hyperparameter_of_another_type_...
    Mutation("M243", "train/algorithms/erm.py",
             'F.cross_entropy(self.network(batch["x"]), batch["y"])',
             'F.cross_entropy(self.network(batch["x"]), batch["y"], reduction="sum")',
             ("tests/train/test_algorithm_base.py", "tests/train/test_trainer.py"),
             "ERM minimises (and reports) the summed, not the mean, cross entropy",
             expect="caught"),  # survived before tests/train/test_algorithm_base.py
    Mutation("M244", "train/presets.py", '"adam_betas": (0.9, 0.999),',
             '"adam_betas": (0.9, 0.99),',
             ("tests/train/test_config.py",),
             "default preset's Adam beta2 0.99, not PyTorch's 0.999"),
    Mutation("M245", "train/presets.py", '"lr_gamma": 0.1,', '"lr_gamma": 0.5,',
             ("tests/train/test_config.py",),
             "default preset halves the rate at a milestone instead of dividing it by 10"),
    Mutation("M246", "train/algorithms/base.py", "if id(p) not in seen:", "if True:",
             ("tests/train/test_mixed_precision.py",),
             "fp16: a parameter shared by two optimisers unscaled twice (SagNet)"),
    Mutation("M247", "train/runtime.py", 'if value not in ("0", "1"):', "if False:",
             ("tests/train/test_runtime.py", "tests/cli/test_runtime_options.py"),
             "SHORTCUTLAB_COMPILE=yes silently means no torch.compile",
             expect="caught"),  # survived before tests/train/test_runtime.py
    Mutation("M248", "train/model_paths.py", "if not isinstance(built, torch.nn.Module):",
             "if False:",
             ("tests/train/test_model_paths.py", "tests/train/test_model_zoo.py"),
             "a factory returning no nn.Module accepted (fails later, inside a written job)",
             expect="caught"),  # survived before test_a_factory_that_returns_no_module_...
)


def _apply(src: Path, m: Mutation) -> None:
    path = src / "shortcutlab" / m.file
    text = path.read_text()
    count = text.count(m.old)
    if count != 1:
        raise SystemExit(f"{m.id}: old text found {count} times in src/shortcutlab/{m.file} "
                         "(expected exactly once): the mutation table is stale")
    path.write_text(text.replace(m.old, m.new))


def _pytest(tests: tuple[str, ...], pythonpath: Path) -> tuple[bool, float, str]:
    """(passed, seconds, last output line) of ``pytest -q -x`` on ``tests``, importing
    ``shortcutlab`` from ``pythonpath``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         *tests],
        cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return proc.returncode == 0, seconds, (lines[-1] if lines else proc.stderr[-200:])


def _loaded_from(pythonpath: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    out = subprocess.run([sys.executable, "-c", "import shortcutlab; print(shortcutlab.__file__)"],
                         env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutation ids (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--no-clean-run", action="store_true",
                        help="skip the run of the target tests on the unmutated code")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.ids or m.id in args.ids]
    unknown = set(args.ids) - {m.id for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutation id(s) {sorted(unknown)}; valid: "
                     f"{', '.join(m.id for m in MUTATIONS)}")
    if args.list:
        for m in MUTATIONS:
            print(f"{m.id}  {m.file:26} {m.what}  [{' '.join(m.tests)}] expect {m.expect}")
        return 0
    failures: list[str] = []
    if not args.no_clean_run:
        targets = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        ok, secs, last = _pytest(targets, ROOT / "src")
        print(f"clean run of the {len(targets)} target files: "
              f"{'passed' if ok else 'FAILED'} in {secs:.0f} s ({last})\n", flush=True)
        if not ok:
            failures.append("the target tests fail on the unmutated code")
    print("| id | file | mutation | tests | expect | result | s |")
    print("|---|---|---|---|---|---|---|")
    total, caught = time.perf_counter(), 0
    with tempfile.TemporaryDirectory(prefix="shortcutlab-mutant-") as tmp:
        for m in chosen:
            src = Path(tmp) / m.id
            shutil.copytree(PKG, src / "shortcutlab",
                            ignore=shutil.ignore_patterns("__pycache__"))
            _apply(src, m)
            if not _loaded_from(src).startswith(str(src)):
                raise SystemExit(f"{m.id}: the mutated copy is not the one imported")
            passed, secs, _ = _pytest(m.tests, src)
            result = "survived" if passed else "caught"
            caught += not passed
            if result == "survived" and m.expect == "caught":
                failures.append(f"{m.id} survived ({m.what})")
            tests = ", ".join(t.removeprefix("tests/").split("::")[0] for t in m.tests)
            flag = "" if result == m.expect else " (!)"
            print(f"| {m.id} | {m.file} | {m.what} | {tests} | {m.expect} | "
                  f"**{result}**{flag} | {secs:.0f} |", flush=True)
            shutil.rmtree(src)
    print(f"\n{caught} of {len(chosen)} mutations caught, in {time.perf_counter() - total:.0f} s")
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
