"""How closely the BiasBed algorithms and statistics follow the paper's reference (issue 17).

Prints, on CPU with one thread (about a minute):

- pAdaIN on a ResNet-50: the number of places and the mean number of statistic swaps per
  training step at p = 0.01, for the reference placement (every conv before its batch norm) and
  the earlier one (after layer1-3);
- InfoDrop on a ResNet-18 stem: at the positions it drops, the mean |activation| after the stem
  block and the share of exact zeros there, for the reference placement (mask after conv -> BN ->
  ReLU -> max-pool) and the earlier one (zeroing the conv output before batch norm);
- the Iman-Davenport p-values of the printed Table 2 with textbook and pingouin degrees of
  freedom, all ten test sets and the strict setting.

    .venv/bin/python benchmarks/bench_biasbed_fidelity.py
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402
import torch  # noqa: E402

from shortcutlab.stats import compare  # noqa: E402
from shortcutlab.train.algorithms import create_algorithm  # noqa: E402
from shortcutlab.train.config import TrainConfig  # noqa: E402

torch.set_num_threads(1)

TABLE2 = {  # BiasBed Table 2 (best validation), one row per test set
    "ImageNet1k": [73.8, 73.2, 74.2, 73.3, 55.9, 74.4, 73.7, 72.8],
    "Silhouette": [47.3, 43.8, 43.3, 47.8, 46.9, 48.7, 51.3, 51.6],
    "Edge": [22.6, 22.3, 25.3, 19.0, 58.4, 30.8, 34.7, 31.7],
    "Sketch": [56.0, 56.6, 59.2, 56.7, 70.2, 60.5, 63.5, 61.1],
    "Cue-Conflict": [22.2, 21.5, 20.0, 22.8, 53.7, 28.9, 29.9, 32.4],
    "Stylized ImageNet": [7.9, 8.1, 6.2, 7.9, 53.2, 16.1, 12.7, 11.0],
    "ImageNet-A": [2.0, 1.4, 1.5, 2.2, 0.8, 2.7, 2.6, 2.0],
    "ImageNet-R": [22.8, 21.4, 21.8, 22.7, 25.0, 27.4, 27.8, 26.5],
    "DeepAug (CAE)": [44.4, 42.8, 43.8, 44.4, 39.1, 49.6, 61.4, 52.3],
    "DeepAug (EDSR)": [48.3, 48.8, 47.7, 48.6, 40.4, 51.3, 55.8, 65.1],
}
COLUMNS = ["ERM", "pAdaIN", "SagNet", "InfoDrop", "Stylized", "Debiased", "CAE", "EDSR"]
STRICT = ["Stylized ImageNet", "DeepAug (CAE)", "DeepAug (EDSR)"]


def padain_swaps(placement: str, steps: int = 400) -> tuple[int, float]:
    cfg = TrainConfig(algorithm="padain", model="resnet50",
                      hparams={"p": 0.01, "placement": placement})
    algo = create_algorithm("padain", 10, cfg).train()
    x = torch.rand(2, 3, 64, 64)  # layer4 maps 2x2: every place has statistics to swap
    from shortcutlab.train.algorithms.padain import reseed_all

    with torch.no_grad():
        for step in range(steps):
            reseed_all(algo.swap_layers, 0, step)
            algo.network(x)
    return len(algo.swap_layers), sum(layer.swaps for layer in algo.swap_layers) / steps


def infodrop_zeros(placement: str) -> tuple[float, float]:
    """Mean |x| and share of exact zeros at the dropped positions, in training mode: after the
    stem block (``block``) or after the batch norm that follows the zeroed conv (``conv``)."""
    torch.manual_seed(0)
    cfg = TrainConfig(algorithm="infodrop", model="resnet18",
                      hparams={"placement": placement, "layers": 1})
    algo = create_algorithm("infodrop", 10, cfg).train()
    net = algo.network
    seen: dict[str, list[torch.Tensor]] = {"conv": [], "bn": [], "pool": []}
    net.conv1.register_forward_hook(lambda _m, _i, o: seen["conv"].append(o.detach()))
    net.bn1.register_forward_hook(lambda _m, _i, o: seen["bn"].append(o.detach()))
    net.maxpool.register_forward_hook(lambda _m, _i, o: seen["pool"].append(o.detach()))
    img = torch.full((4, 3, 64, 64), 0.5)
    img[..., 32:] = torch.rand(4, 3, 64, 32, generator=torch.Generator().manual_seed(0))
    layer = algo.drop_layers[0]
    with torch.no_grad():
        layer.reseed(0, 0)
        net(img)
        rate, layer.drop_rate = layer.drop_rate, 0.0
        net(img)  # the same forward without dropping (batch-norm statistics before the mask)
        layer.drop_rate = rate
    if placement == "conv":
        dropped = seen["conv"][0] == 0
        values = seen["bn"][0][dropped]
    else:
        values = seen["pool"][0][seen["pool"][0] != seen["pool"][1]]
    return float(values.abs().mean()), float((values == 0).float().mean())


def main() -> None:
    print("pAdaIN, ResNet-50, p = 0.01 (paper: 0.49 swaps per step with 49 places)")
    for placement in ("before_bn", "stages"):
        places, swaps = padain_swaps(placement)
        print(f"  {placement:9s}: {places:2d} places, {swaps:.3f} swaps per step")
    print("InfoDrop, ResNet-18 stem, training mode: at the dropped positions, after the block "
          "(block) / after the batch norm (conv)")
    for placement in ("block", "conv"):
        mean_abs, zeros = infodrop_zeros(placement)
        print(f"  {placement:5s}: mean |x| = {mean_abs:.3f}, zeros = {100 * zeros:.0f} %")
    table = pd.DataFrame.from_dict(TABLE2, orient="index", columns=COLUMNS)
    table.index.name = "test_set"
    print("Table 2, Iman-Davenport p (paper: all ten 0.000002, strict 0.00045)")
    for df in ("textbook", "pingouin"):
        for name, excluded in (("all ten", []), ("strict", STRICT)):
            res = compare(table.reset_index(), df=df, exclude_blocks=excluded)
            print(f"  {df:8s} {name:7s}: F({res.df_num:.4g}, {res.df_den:.4g}) = {res.F:.3f}, "
                  f"p = {res.p_value:.4g}")


if __name__ == "__main__":
    main()
