"""On-the-fly dataset: items, batching, determinism across workers/batch sizes, stats, export."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from typer.testing import CliRunner

from shortcutlab.diagvib import dataset as dataset_module
from shortcutlab.diagvib.dataset import DiagvibDataset, export_split, histogram_channel_stats
from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.studies import make_experiment
from shortcutlab.errors import DiagvibError, SpecError
from shortcutlab.train.normalization import channel_stats
from shortcutlab.utils.rng import rng


class FakeGenerator:
    """A stand-in with the generator's contract: pixels are a pure function of
    (seed, split, index, classes); small random content so statistics are non-trivial."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def render(self, classes, *, seed, split, indices, backend="numpy", device="cpu"):
        self.calls.append(len(indices))
        out = np.empty((len(indices), 3, 128, 128), dtype=np.uint8)
        for j, (i, cls) in enumerate(zip(indices, classes, strict=True)):
            tile = rng(seed, split, int(i), *map(int, cls)).integers(0, 256, (3, 8, 8))
            out[j] = np.kron(tile, np.ones((16, 16))).astype(np.uint8)
        return out


SPEC = make_experiment("CGO-2/hue-shape/1", scale=0.002)  # 87 train, 17 val, 20 test


@pytest.fixture
def fake(monkeypatch) -> FakeGenerator:
    gen = FakeGenerator()
    monkeypatch.setattr(dataset_module, "_default_generator", lambda: gen)
    return gen


def test_items_and_tables(fake: FakeGenerator) -> None:
    ds = DiagvibDataset(SPEC, "train")
    assert len(ds) == 87 and ds.num_classes == 3
    item = ds[5]
    assert item["x"].shape == (3, 128, 128) and item["x"].dtype == torch.float32
    assert 0.0 <= float(item["x"].min()) and float(item["x"].max()) <= 1.0
    assert item["y"].dtype == torch.int64 and item["classes"].shape == (6,)
    assert item["index"] == 5
    hue = FACTORS.index("hue")
    selected = [FACTOR_TABLE["hue"].index(c) for c in SPEC.selected["hue"]]
    assert int(item["classes"][hue]) == selected[int(item["y"])]
    assert ds[-1]["index"] == 86
    # every image carries its cell and cell tag: (Fi, Fj) cell, in or out of training
    assert item["tag"] == ds.tags[5] and int(item["cell"]) == ds.cells[5]
    shape = FACTORS.index("shape")
    b = SPEC.selected["shape"].index(FACTOR_TABLE["shape"].classes[int(item["classes"][shape])])
    assert int(item["cell"]) == 3 * int(item["y"]) + b
    assert item["tag"] == f"{int(item['y'])}{b}-id"  # training images lie in training cells
    test_item = DiagvibDataset(SPEC, "test")[0]
    assert test_item["tag"].endswith("-ood")
    with pytest.raises(IndexError, match="index 87 out of range for a split of 87 images"):
        ds[87]
    meta = ds.metadata()
    assert list(meta.columns) == ["index", "label", *FACTORS, "tag"]
    assert (meta["label"].to_numpy() == ds.labels).all()
    assert meta.loc[5, "hue"] == SPEC.selected["hue"][int(item["y"])]
    assert set(DiagvibDataset(SPEC, "test").tags) <= {f"{a}{b}-ood" for a in "012" for b in "012"}


def test_getitems_renders_batch_in_one_call(fake: FakeGenerator) -> None:
    ds = DiagvibDataset(SPEC, "train")
    loader = DataLoader(ds, batch_size=16, shuffle=False)
    batch = next(iter(loader))
    assert fake.calls == [16]
    assert batch["x"].shape == (16, 3, 128, 128) and batch["index"].tolist() == list(range(16))
    assert batch["tag"] == ds.tags[:16].tolist()
    assert batch["cell"].tolist() == ds.cells[:16].tolist()


def _collect(ds: DiagvibDataset, **loader_kw) -> dict[str, torch.Tensor]:
    parts: dict[str, list[torch.Tensor]] = {"x": [], "y": [], "index": [], "classes": [],
                                             "cell": []}
    for batch in DataLoader(ds, shuffle=False, **loader_kw):
        for key in parts:
            parts[key].append(torch.as_tensor(batch[key]))
    return {k: torch.cat(v) for k, v in parts.items()}


def test_deterministic_across_workers_and_batch_sizes() -> None:
    ds = DiagvibDataset(SPEC, "train", generator=FakeGenerator())
    ref = _collect(ds, batch_size=1, num_workers=0)
    for kw in ({"batch_size": 7, "num_workers": 0}, {"batch_size": 32, "num_workers": 2}):
        got = _collect(ds, **kw)
        for key in ref:
            assert torch.equal(ref[key], got[key]), (key, kw)
    again = DiagvibDataset(make_experiment("CGO-2/hue-shape/1", scale=0.002), "train",
                           generator=FakeGenerator())
    assert torch.equal(again[3]["x"], ds[3]["x"])
    other = DiagvibDataset(SPEC, "train", generator=FakeGenerator(), seed=1)
    assert np.array_equal(other.classes, ds.classes)  # seed changes pixels, not the class table
    assert not torch.equal(other[3]["x"], ds[3]["x"])


def test_bad_arguments() -> None:
    with pytest.raises(SpecError, match="tset"):
        DiagvibDataset(SPEC, "tset")
    with pytest.raises(DiagvibError, match="jax.*numpy, torch"):
        DiagvibDataset(SPEC, "train", backend="jax")
    with pytest.raises(DiagvibError, match="float16.*float32, uint8"):
        DiagvibDataset(SPEC, "train", dtype="float16", generator=FakeGenerator())


def test_uint8_items_match_float_items() -> None:
    gen = FakeGenerator()
    f = DiagvibDataset(SPEC, "val", generator=gen)[4]["x"]
    u = DiagvibDataset(SPEC, "val", generator=gen, dtype="uint8")[4]["x"]
    assert u.dtype == torch.uint8 and torch.equal(u.to(torch.float32) / 255.0, f)


def test_channel_stats_streaming_exact(fake: FakeGenerator) -> None:
    ds = DiagvibDataset(SPEC, "train")
    mean, std = histogram_channel_stats(ds, n=40, batch_size=7)
    imgs = ds.render(np.arange(40)).numpy().astype(np.float64) / 255.0
    # rtol=0: np.allclose's default rtol (1e-5) would hide a wrong ddof (a relative 1/(2N))
    assert np.allclose(mean, imgs.mean(axis=(0, 2, 3)), rtol=0, atol=1e-12)
    assert np.allclose(std, imgs.std(axis=(0, 2, 3)), rtol=0, atol=1e-12)
    m2, s2 = histogram_channel_stats(ds, n=40, batch_size=40)
    assert np.array_equal(mean, m2) and np.array_equal(std, s2)
    assert max(fake.calls) <= 40
    with pytest.raises(DiagvibError, match="1..87"):
        histogram_channel_stats(ds, n=0)


def test_the_two_channel_statistics_agree(fake: FakeGenerator) -> None:
    """The exact histogram statistics (``diagvib.dataset.histogram_channel_stats``, for reports)
    and the streamed moments the trainer normalises with (``train.normalization.channel_stats``)
    are two methods for one quantity. They agree to float32 rounding (items hold x / 255 in
    float32, the histogram uses k / 255 in float64), below the precision inputs are normalised
    with."""
    ds = DiagvibDataset(SPEC, "train")
    mean, std = histogram_channel_stats(ds)
    streamed = channel_stats(ds, batch_size=13)
    assert np.allclose(mean, streamed.mean, rtol=0, atol=1e-7)
    assert np.allclose(std, streamed.std, rtol=0, atol=1e-7)
    assert not np.allclose(mean, np.roll(streamed.mean, 1), rtol=0, atol=1e-3)  # per channel


def test_export_npz(tmp_path, fake: FakeGenerator) -> None:
    out = export_split(SPEC, "test", tmp_path / "test.npz", limit=9, batch_size=4)
    with np.load(out, allow_pickle=False) as z:
        assert z["images"].shape == (9, 3, 128, 128) and z["images"].dtype == np.uint8
        ds = DiagvibDataset(SPEC, "test")
        assert np.array_equal(z["images"], ds.render(np.arange(9)).numpy())
        assert z["label"].tolist() == ds.labels[:9].tolist()
        assert z["tag"].tolist() == ds.tags[:9].tolist()
        assert z["shape"].tolist() == ds.metadata()["shape"][:9].tolist()
        assert set(FACTORS) <= set(z.files)
    full = export_split(SPEC, "val", tmp_path / "val.npz")
    with np.load(full) as z:
        assert len(z["label"]) == 17
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test.npz", "val.npz"]


def test_export_png_and_errors(tmp_path, fake: FakeGenerator) -> None:
    from PIL import Image

    out = export_split(SPEC, "train", tmp_path / "pngs", fmt="png", limit=5)
    with open(out / "metadata.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 5 and list(rows[0]) == ["file", "index", "label", *FACTORS, "tag"]
    ds = DiagvibDataset(SPEC, "train")
    img = np.asarray(Image.open(out / rows[2]["file"])).transpose(2, 0, 1)
    assert np.array_equal(img, ds.render([2]).numpy()[0])
    with pytest.raises(DiagvibError, match="not empty"):
        export_split(SPEC, "train", out, fmt="png", limit=5)
    with pytest.raises(DiagvibError, match="tiff.*npz, png"):
        export_split(SPEC, "train", tmp_path / "x", fmt="tiff")
    with pytest.raises(DiagvibError, match="limit"):
        export_split(SPEC, "train", tmp_path / "x.npz", limit=0)

    class Broken(FakeGenerator):
        def render(self, *args, **kwargs):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="^boom$"):
        export_split(SPEC, "train", tmp_path / "broken", fmt="png", generator=Broken())
    with pytest.raises(RuntimeError, match="^boom$"):
        export_split(SPEC, "train", tmp_path / "broken.npz", generator=Broken())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pngs"]  # nothing half-written


def test_export_refuses_a_bad_npz_target_before_rendering(tmp_path, fake: FakeGenerator) -> None:
    # an .npz target that is a folder, or under a file, failed only after the whole split
    # had been rendered (minutes at full size)
    (tmp_path / "folder.npz").mkdir()
    (tmp_path / "file").write_text("x")
    for target in (tmp_path / "folder.npz", tmp_path / "file" / "test.npz"):
        with pytest.raises(OSError):
            export_split(SPEC, "test", target)
        assert fake.calls == [], target
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "folder.npz"]


def _cli_error(res) -> str:
    """Message of a failed CLI call: printed as ``Error: ...``, no traceback, exit code 2."""
    assert res.exit_code == 2, (res.output, res.exception)
    assert "Error: " in res.output and "Traceback" not in res.output, res.output
    return res.output


def test_cli_studies_and_export(tmp_path, fake: FakeGenerator) -> None:
    from shortcutlab.cli.main import app

    runner = CliRunner()
    res = runner.invoke(app, ["diagvib", "studies", "--out", str(tmp_path / "b"), "--scale",
                              "0.01", "--study", "ZGO", "--pairs", "hue-shape", "--samples", "0",
                              "--samples", "1"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "b" / "ZGO" / "hue-shape" / "1.yaml").is_file()
    res = runner.invoke(app, ["diagvib", "export", "ZGO/hue-shape/0", "--split", "test",
                              "--out", str(tmp_path / "e.npz"), "--limit", "3", "--scale", "0.01"])
    assert res.exit_code == 0, res.output
    with np.load(tmp_path / "e.npz") as z:
        assert z["images"].shape[0] == 3
    spec_file = tmp_path / "b" / "ZGO" / "hue-shape" / "1.yaml"
    res = runner.invoke(app, ["diagvib", "export", str(spec_file), "--out",
                              str(tmp_path / "p"), "--format", "png", "--limit", "2"])
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "p" / "images").iterdir())) == 2
    res = runner.invoke(app, ["diagvib", "studies", "--out", str(tmp_path / "c"),
                              "--study", "CGO-4"])
    assert "CGO-4" in _cli_error(res) and "CGO-3" in _cli_error(res)
    res = runner.invoke(app, ["diagvib", "export", "ZGO/hue-hue/0", "--out", str(tmp_path / "q")])
    assert "twice" in _cli_error(res)
    before = sorted(p.name for p in tmp_path.iterdir())
    for args, needles in [
        (["--split", "dev"], ["dev", "train, val, test"]),
        (["--format", "tiff"], ["tiff", "npz, png"]),
        (["--limit", "0"], ["limit", "0"]),
        (["--scale", "0"], ["scale", "0"]),
    ]:
        res = runner.invoke(app, ["diagvib", "export", "ZGO/hue-shape/0", "--out",
                                  str(tmp_path / "bad.npz"), *args])
        msg = _cli_error(res)
        assert all(n in msg for n in needles), (args, msg)
    res = runner.invoke(app, ["diagvib", "export", str(tmp_path / "none.yaml"), "--out",
                              str(tmp_path / "bad.npz")])
    assert "none.yaml" in _cli_error(res)
    for args in (["--scale", "1"], ["--seed", "0"], ["--selection", "paper"]):
        # a spec file fixes its sizes and classes: the option was silently ignored
        res = runner.invoke(app, ["diagvib", "export", str(spec_file), "--out",
                                  str(tmp_path / "bad.npz"), *args])
        assert f"{args[0]} shapes a named experiment only" in _cli_error(res), args
    res = runner.invoke(app, ["diagvib", "studies", "--out", str(tmp_path / "d"), "--samples", "7"])
    assert res.exit_code == 2 and "unknown dataset sample 7" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_real_generator_deterministic_across_workers() -> None:
    ds = DiagvibDataset(make_experiment("CHGO/shape-hue/0", scale=0.001), "test")
    sub = torch.utils.data.Subset(ds, range(10))
    ref = _collect(sub, batch_size=10, num_workers=0)
    got = _collect(sub, batch_size=3, num_workers=2)
    for key in ref:
        assert torch.equal(ref[key], got[key]), key
    assert ref["x"].shape == (10, 3, 128, 128) and float(ref["x"].std()) > 0
    hue = FACTORS.index("hue")
    assert ref["classes"][:, hue].tolist() == ds.classes[:10, hue].tolist()


def test_zgo_twins_render_identical_images_with_their_own_labels() -> None:
    gen = FakeGenerator()
    for split in ("train", "test"):
        a = DiagvibDataset(make_experiment("ZGO/hue-shape/2", scale=0.002), split, generator=gen)
        b = DiagvibDataset(make_experiment("ZGO/shape-hue/2", scale=0.002), split, generator=gen)
        assert a.render_seed == b.render_seed and a.spec_hash != b.spec_hash
        assert torch.equal(a.render(np.arange(len(a))), b.render(np.arange(len(b))))
        hue, shape = FACTORS.index("hue"), FACTORS.index("shape")
        ya = [a.spec.selected["hue"].index(FACTOR_TABLE["hue"].classes[c]) for c in
              a.classes[:, hue]]
        yb = [b.spec.selected["shape"].index(FACTOR_TABLE["shape"].classes[c]) for c in
              b.classes[:, shape]]
        assert a.labels.tolist() == ya and b.labels.tolist() == yb
        if split == "train":  # the diagonal: class a of hue always with class a of shape
            assert np.array_equal(a.labels, b.labels)
        else:  # off-diagonal test cells: the labellings never agree
            assert not np.any(a.labels == b.labels)
    # Not paired: CGO twins have different cells, hence images of their own.
    c1 = DiagvibDataset(make_experiment("CGO-1/hue-shape/2", scale=0.002), "train", generator=gen)
    c2 = DiagvibDataset(make_experiment("CGO-1/shape-hue/2", scale=0.002), "train", generator=gen)
    assert c1.render_seed != c2.render_seed


def test_streamed_npz_writer_is_atomic_and_matches_savez(tmp_path) -> None:
    from shortcutlab.utils.io import write_npz_streaming

    data = np.arange(5 * 3 * 4 * 4, dtype=np.uint8).reshape(5, 3, 4, 4)
    out = write_npz_streaming(tmp_path / "s.npz", "images", data.shape, [data[:2], data[2:]],
                              {"hue": np.array(["red"] * 5), "label": np.arange(5)})
    np.savez(tmp_path / "ref.npz", images=data, hue=np.array(["red"] * 5), label=np.arange(5))
    with np.load(out) as z, np.load(tmp_path / "ref.npz") as ref:
        assert sorted(z.files) == sorted(ref.files)
        for key in ref.files:
            assert np.array_equal(z[key], ref[key]) and z[key].dtype == ref[key].dtype
    bad = {"rows": [data[:4]], "dtype": [data.astype(np.int16)], "shape": [data[:, :2]]}
    for kind, chunks in bad.items():
        with pytest.raises(ValueError, match="rows written" if kind == "rows" else "chunk of"):
            write_npz_streaming(tmp_path / f"{kind}.npz", "images", data.shape, chunks)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.npz", "s.npz"]  # no leftovers


def test_batches_made_on_the_device_match_the_host_items() -> None:
    import pickle

    ds = DiagvibDataset(SPEC, "val")
    idx = torch.tensor([16, 0, 3, 3, 9])
    batch = ds.device_batch(idx, "cpu")  # the trainer's path on CUDA, checked here on CPU
    host = ds.render(idx.numpy())
    assert batch["x"].dtype == torch.uint8 and batch["x"].shape == host.shape
    assert (batch["x"].to(torch.int16) - host.to(torch.int16)).abs().max() <= 1
    assert torch.equal(batch["y"], torch.from_numpy(ds.labels[idx.numpy()]))
    assert torch.equal(batch["classes"], torch.from_numpy(ds.classes[idx.numpy()]))
    assert torch.equal(batch["cell"], torch.from_numpy(ds.cells[idx.numpy()]))
    assert torch.equal(batch["index"], idx)
    assert torch.equal(batch["x"][2], batch["x"][3])  # a pure function of the index
    # device copies of the class table are not shipped to DataLoader workers
    assert ds._device_tables and not pickle.loads(pickle.dumps(ds))._device_tables
    # a host-side transform cannot run on device batches: the trainer then uses the DataLoader
    assert DiagvibDataset(SPEC, "val", transform=lambda x: x).device_batch is None


def test_device_batches_without_a_torch_path(fake: FakeGenerator) -> None:
    ds = DiagvibDataset(SPEC, "val")
    batch = ds.device_batch(torch.tensor([4, 1]), "cpu")
    assert torch.equal(batch["x"], ds.render([4, 1]))  # rendered on the host, copied once


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_batches_made_on_the_gpu() -> None:
    ds = DiagvibDataset(SPEC, "train")
    idx = torch.arange(40, device="cuda")
    batch = ds.device_batch(idx, "cuda")
    assert all(v.device.type == "cuda" for v in batch.values())
    host = ds.render(np.arange(40))
    assert (batch["x"].cpu().to(torch.int16) - host.to(torch.int16)).abs().max() <= 1
