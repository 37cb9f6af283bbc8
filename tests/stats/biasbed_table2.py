"""BiasBed (Kalischek et al.) Table 2 means: best-validation model selection, 10 runs each.

Rows = the ten test sets (blocks), columns = the eight algorithms; accuracy in %, higher is better.
Transcribed from the paper's Table 2 (the ± std values are not needed for the test statistics).
"""

ALGORITHMS = [
    "ERM",
    "pAdaIN",
    "SagNet",
    "InfoDrop",
    "Stylized ERM",
    "Debiased",
    "DAug. ERM (CAE)",
    "DAug. ERM (EDSR)",
]
TEST_SETS = [
    "ImageNet1k",
    "Silhouette",
    "Edge",
    "Sketch",
    "Cue-Conflict",
    "Stylized ImageNet",
    "ImageNet-A",
    "ImageNet-R",
    "DeepAug (CAE)",
    "DeepAug (EDSR)",
]
# One row per algorithm, in TEST_SETS order (as printed in the paper).
ROWS = [
    [73.8, 47.3, 22.6, 56.0, 22.2, 7.9, 2.0, 22.8, 44.4, 48.3],
    [73.2, 43.8, 22.3, 56.6, 21.5, 8.1, 1.4, 21.4, 42.8, 48.8],
    [74.2, 43.3, 25.3, 59.2, 20.0, 6.2, 1.5, 21.8, 43.8, 47.7],
    [73.3, 47.8, 19.0, 56.7, 22.8, 7.9, 2.2, 22.7, 44.4, 48.6],
    [55.9, 46.9, 58.4, 70.2, 53.7, 53.2, 0.8, 25.0, 39.1, 40.4],
    [74.4, 48.7, 30.8, 60.5, 28.9, 16.1, 2.7, 27.4, 49.6, 51.3],
    [73.7, 51.3, 34.7, 63.5, 29.9, 12.7, 2.6, 27.8, 61.4, 55.8],
    [72.8, 51.6, 31.7, 61.1, 32.4, 11.0, 2.0, 26.5, 52.3, 65.1],
]


def corrected_rows() -> list[list[float]]:
    """Table 2 with the two rank orders that reproduce every printed statistic (F 7.46, strict
    F 4.98 / p 0.00045, Tables 4 and 5): on ImageNet-A ERM above DAug. EDSR (both printed 2.0),
    on Silhouette DAug. CAE above DAug. EDSR (the appendix's 9-run CAE mean, 51.9)."""
    rows = [list(r) for r in ROWS]
    rows[0][TEST_SETS.index("ImageNet-A")] = 2.01
    rows[ALGORITHMS.index("DAug. ERM (CAE)")][TEST_SETS.index("Silhouette")] = 51.9
    return rows
