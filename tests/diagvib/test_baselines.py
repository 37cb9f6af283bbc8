"""The paper's ASR, VAE and Factor-VAE baselines (diagvib/baselines/): they train on CPU, their
pieces behave as the paper and the original methods say, ``diagvib run --model NAME`` picks the
algorithm the model needs, and the public registries find them through their entry points."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from shortcutlab.diagvib.baselines.networks import UNetLens, permute_dims
from shortcutlab.diagvib.jobs import build_jobs, with_implied_algorithm
from shortcutlab.errors import RunnerError, TrainError
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import implied_algorithm
from shortcutlab.train.normalization import InputNormalization, channel_stats
from shortcutlab.train.trainer import train
from tests.train.fake_data import FakeDiagvib

SIZE = 32
SMALL = {
    "asr": TrainConfig(model="asr_rn18", algorithm="asr", lr=1e-3,
                       model_kwargs={"lens_width": 8}),
    "vae": TrainConfig(model="vae", algorithm="vae", hparams={"lr": 1e-3},
                       model_kwargs={"image_size": SIZE}),
    "factor_vae": TrainConfig(model="factor_vae", algorithm="factor_vae",
                              hparams={"lr": 1e-3}, model_kwargs={"image_size": SIZE}),
}


def _batch(n: int = 24) -> dict[str, torch.Tensor]:
    """A batch as the trainer gives it: images z-scored with the training statistics."""
    ds = FakeDiagvib(n=n, size=SIZE)
    items = [ds[i] for i in range(n)]
    norm = InputNormalization()
    norm.set_stats(channel_stats(ds))
    return {"x": norm(torch.stack([it["x"] for it in items])),
            "y": torch.stack([it["y"] for it in items])}


def _algorithm(name: str):
    torch.manual_seed(0)
    algo = create_algorithm(SMALL[name].algorithm, 3, SMALL[name])
    algo.input_norm.set_stats(channel_stats(FakeDiagvib(n=24, size=SIZE)))
    return algo, _batch()


def _objective(name: str, algo, batch) -> float:
    """ASR: the features' cross entropy; VAEs: the negative ELBO above its floor (the pixels' own
    Bernoulli entropy, which no reconstruction goes below)."""
    torch.manual_seed(1)  # the same latent noise before and after
    with torch.no_grad():
        terms = algo.losses(batch)
        if name == "asr":
            return float(terms["ce"])
        x01 = algo.pixels(batch["x"])
        floor = F.binary_cross_entropy(x01, x01, reduction="sum") / len(x01)
        return float(terms["recon"] + terms["kl"] - floor)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_each_baseline_trains_a_few_steps_and_its_loss_falls(name: str) -> None:
    algo, batch = _algorithm(name)
    algo.train()
    before = _objective(name, algo, batch)
    for step in range(8):
        algo.step = step
        out = algo.update(batch)
        assert set(out) >= {"loss", "ce"} and all(torch.isfinite(torch.tensor(v))
                                                   for v in out.values())
    algo.eval()
    after = _objective(name, algo, batch)
    assert after < 0.9 * before, (name, before, after)
    assert algo.predict(batch["x"]).shape == (len(batch["y"]), 3)


def test_lens_output_has_the_input_shape_and_range_and_starts_as_identity() -> None:
    torch.manual_seed(0)
    lens = UNetLens(width=8)
    x = torch.rand(4, 3, 36, 28)  # sides not divisible by 8 work too
    out = lens(x)
    assert out.shape == x.shape and torch.equal(out, x)  # zero-initialised residual
    with torch.no_grad():
        lens.out.bias.fill_(0.7)  # a strong edit is still clamped to [0, 1]
        edited = lens(x)
    assert edited.shape == x.shape and not torch.equal(edited, x)
    assert float(edited.min()) >= 0.0 and float(edited.max()) <= 1.0


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_asr_lens_learns_to_edit_and_features_see_the_lens_output() -> None:
    algo, batch = _algorithm("asr")
    algo.train()
    for step in range(4):
        algo.step = step
        out = algo.update(batch)
    assert out["adv"] > 0 and out["recon"] > 0  # the lens moved away from the identity
    algo.eval()
    with torch.no_grad():
        pixels = algo.lens_output(batch["x"])
    assert pixels.shape == batch["x"].shape and 0 <= float(pixels.min()) <= float(pixels.max()) <= 1
    with torch.no_grad():  # prediction goes through the lens: zeroing it changes the logits
        before = algo.predict(batch["x"])
        algo.network.lens.out.bias.fill_(-5.0)
        after = algo.predict(batch["x"])
    assert not torch.allclose(before, after)


def test_factor_vae_permutation_is_per_dimension_across_the_batch() -> None:
    b, d = 64, 6
    z = torch.arange(b * d, dtype=torch.float32).view(b, d)  # every value unique, column = j
    perm = permute_dims(z, torch.Generator().manual_seed(0))
    assert perm.shape == z.shape
    for j in range(d):  # each column holds exactly its own values (from the batch) ...
        assert torch.equal(perm[:, j].sort().values, z[:, j])
    rows_from = (perm // d).long()  # ... but dimensions are shuffled independently:
    assert (rows_from != torch.arange(b)[:, None]).any()
    assert not all(torch.equal(rows_from[:, 0], rows_from[:, j]) for j in range(1, d))


def test_vae_probe_keeps_labels_out_of_the_encoder_and_joint_lets_them_in() -> None:
    def encoder_grad(classifier: str) -> float:
        config = SMALL["vae"].replace(hparams={"classifier": classifier})
        algo = create_algorithm("vae", 3, config)
        terms = algo.losses(_batch())
        terms["ce"].backward()
        grads = [p.grad for p in algo.network.encoder.parameters()]
        return sum(float(g.abs().sum()) for g in grads if g is not None)

    assert encoder_grad("probe") == 0.0
    assert encoder_grad("joint") > 0.0


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_factor_vae_discriminator_learns_to_tell_codes_from_permutations() -> None:
    algo, batch = _algorithm("factor_vae")
    torch.manual_seed(1)
    z = torch.randn(64, 1) @ torch.ones(1, 12) + 0.1 * torch.randn(64, 12)  # correlated codes
    first = float(algo.discriminator_loss(z).detach())
    opt = torch.optim.Adam(algo.discriminator.parameters(), lr=1e-3)
    for step in range(8):  # 0.05 x the first loss after 8 steps (a 5M-weight MLP: 0.1 s a step)
        algo.step = step
        loss = algo.discriminator_loss(z)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(algo.discriminator_loss(z).detach()) < 0.5 * first


def test_bad_input_is_named() -> None:
    with pytest.raises(TrainError, match="valid choices: vae, factor_vae"):
        create_algorithm("vae", 3, TrainConfig(model="small_cnn", algorithm="vae"))
    bad = SMALL["vae"].replace(hparams={"classifier": "linear"})
    with pytest.raises(TrainError, match="probe, joint"):
        create_algorithm("vae", 3, bad)
    other = create_algorithm("vae", 3, SMALL["vae"])  # other sides are resized to 32x32
    assert other.predict(torch.rand(2, 3, 16, 16)).shape == (2, 3)
    small = {"x": torch.rand(2, 3, 16, 16), "y": torch.tensor([0, 1])}
    assert torch.isfinite(other.losses(small)["recon"])
    with pytest.raises(TrainError, match="power of two"):
        create_algorithm("vae", 3, TrainConfig(model="vae", algorithm="vae",
                                               model_kwargs={"image_size": 100}))


def test_asr_wraps_any_classifier_with_a_lens() -> None:
    config = TrainConfig(model="small_cnn", algorithm="asr", hparams={"lens_width": 4})
    algo = create_algorithm("asr", 3, config)
    assert isinstance(algo.network.lens, UNetLens) and algo.network.lens.inc[0].out_channels == 4


def test_model_names_imply_their_algorithm_in_diagvib_jobs() -> None:
    assert [implied_algorithm(m) for m in ("asr_rn18", "vae", "factor_vae", "resnet18")] == [
        "asr", "vae", "factor_vae", None]
    jobs = build_jobs("factor_vae", ["ZSO"], ["texture-hue"], [0], scale=0.001)
    assert [j.train.algorithm for j in jobs] == ["factor_vae"]
    assert with_implied_algorithm(TrainConfig(model="resnet18")).algorithm == "erm"
    with pytest.raises(RunnerError, match="trained by algorithm 'asr', not 'padain'"):
        build_jobs("asr_rn18", ["ZSO"], ["texture-hue"], [0], scale=0.001,
                   train_config=TrainConfig(algorithm="padain"))


def test_the_trainer_runs_each_baseline_with_checkpoint_selection() -> None:
    train_ds, val_ds = FakeDiagvib(n=24, size=SIZE), FakeDiagvib(n=12, size=SIZE, split="val")
    for name in ("vae", "asr"):
        config = SMALL[name].replace(epochs=2, batch_size=12)
        res = train(config, train_ds, val_ds, {"test": FakeDiagvib(12, SIZE, "test")},
                    keep_best_state=True)
        assert res.epochs_run == 2 and res.best_state is not None
        assert res.val_loss == res.epochs["val_loss"].min()


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_a_fresh_process_finds_the_baselines_through_the_entry_points() -> None:
    """Nothing imports shortcutlab.diagvib: the engine's registries load the entry points
    declared in pyproject.toml on their first lookup, and the engine itself names no baseline."""
    code = (
        "import sys\n"
        "from shortcutlab.train.config import TrainConfig\n"
        "from shortcutlab.train.models import implied_algorithm, list_models\n"
        "from shortcutlab.train.algorithms import create_algorithm, list_algorithms\n"
        "before = sorted(m for m in sys.modules if m.startswith('shortcutlab.diagvib'))\n"
        "cfg = TrainConfig(model='vae', algorithm='vae', model_kwargs={'image_size': 8})\n"
        "algo = create_algorithm('asr', 3, TrainConfig(model='small_cnn', algorithm='asr'))\n"
        "print(before)\n"
        "print(type(algo).__module__)\n"
        "print(sorted(set(list_models()) & {'asr_rn18', 'vae', 'factor_vae'}))\n"
        "print(sorted(set(list_algorithms()) & {'asr', 'vae', 'factor_vae'}))\n"
        "print([implied_algorithm(m) for m in ('asr_rn18', 'vae', 'factor_vae', 'small_cnn')])\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    assert run.stdout.splitlines() == [
        "[]",
        "shortcutlab.diagvib.baselines.asr",
        "['asr_rn18', 'factor_vae', 'vae']",
        "['asr', 'factor_vae', 'vae']",
        "['asr', 'vae', 'factor_vae', None]",
    ]


@pytest.mark.parametrize(("name", "hparams", "named"), [
    ("vae", {"lr": -1.0}, "lr"),  # Adam with a per-group learning rate does not check it
    ("vae", {"lr": 0.0}, "lr"),
    ("vae", {"beta": -1.0}, "beta"),
    ("vae", {"beta": float("nan")}, "beta"),
    ("vae", {"ce_weight": -1.0}, "ce_weight"),
    ("factor_vae", {"gamma": -20.0}, "gamma"),  # flips the sign of the TC penalty
    ("factor_vae", {"disc_lr": -1e-5}, "disc_lr"),
    ("asr", {"adv_weight": -1.0}, "adv_weight"),
    ("asr", {"recon_weight": float("inf")}, "recon_weight"),
])
def test_out_of_range_hyper_parameters_are_refused_in_one_line(name, hparams, named) -> None:
    config = SMALL[name].replace(hparams={**SMALL[name].hparams, **hparams})
    with pytest.raises(TrainError, match=f"^hyper-parameter {named} of algorithm {name} must be "
                       r"a number [>]") as err:
        create_algorithm(name, 3, config)
    assert "\n" not in str(err.value)


def test_asr_lens_width_hyper_parameter_is_not_silently_ignored_by_a_model_with_a_lens() -> None:
    config = SMALL["asr"].replace(hparams={"lens_width": 4})  # asr_rn18's lens is 8 wide here
    with pytest.raises(TrainError, match="lens_width.*model_kwargs"):
        create_algorithm("asr", 3, config)
    same = SMALL["asr"].replace(hparams={"lens_width": 8})  # what the model has: nothing ignored
    assert create_algorithm("asr", 3, same).network.lens.inc[0].out_channels == 8


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"latent": 0}, "latent"), ({"head_hidden": -1}, "head_hidden"),
])
def test_bad_vae_model_keywords_are_refused_in_one_line(kwargs, named) -> None:
    config = TrainConfig(model="vae", algorithm="vae", model_kwargs={"image_size": 8, **kwargs})
    with pytest.raises(TrainError, match=named):
        create_algorithm("vae", 3, config)


def test_ce_weight_with_a_probe_head_is_refused_not_ignored() -> None:
    config = SMALL["vae"].replace(hparams={"classifier": "probe", "ce_weight": 5.0})
    with pytest.raises(TrainError, match="ce_weight.*joint"):
        create_algorithm("vae", 3, config)
    create_algorithm("vae", 3, SMALL["vae"].replace(hparams={"classifier": "joint",
                                                             "ce_weight": 5.0}))


def test_vae_kl_term_is_the_closed_form_gaussian_kl_to_the_standard_normal() -> None:
    """``kl`` is KL(N(mu, sigma^2) || N(0, I)) summed over the latent and averaged over the
    batch, checked against torch.distributions; the encoder is set so that log sigma^2 is about
    -2, where every term of the closed form (mu^2 + sigma^2 - 1 - log sigma^2) matters."""
    algo, batch = _algorithm("vae")
    latent = algo.network.latent
    with torch.no_grad():
        algo.network.encoder[-1].bias[latent:].fill_(-2.0)  # the logvar half
        mu, logvar = algo.network.encode(batch["x"])
        terms = algo.losses(batch)
    assert float(logvar.mean()) < -1.5
    q = torch.distributions.Normal(mu, torch.exp(0.5 * logvar))
    p = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu))
    expected = torch.distributions.kl_divergence(q, p).sum() / len(mu)
    torch.testing.assert_close(terms["kl"], expected, rtol=1e-5, atol=1e-5)
    # the VAE's objective: recon + beta * KL (+ the joint head's cross entropy, weight 1)
    torch.testing.assert_close(terms["vae"], terms["recon"] + terms["kl"] + terms["ce"])


def test_asr_adversarial_loss_targets_the_least_likely_class() -> None:
    """Minderer et al.'s least-likely loss: the cross entropy towards the class the feature
    extractor finds least likely, i.e. per image logsumexp(logits) - min(logits), the largest
    cross entropy of any target class."""
    torch.manual_seed(0)  # a small classifier behind a fresh lens: fast on CPU
    config = TrainConfig(model="small_cnn", algorithm="asr", hparams={"lens_width": 4})
    algo = create_algorithm("asr", 3, config)
    batch = _batch(8)
    algo.eval()  # batch norm from running statistics: losses and predict see the same logits
    with torch.no_grad():
        terms = algo.losses(batch)
        logits = algo.predict(batch["x"])
    per_class = torch.logsumexp(logits, 1, keepdim=True) - logits  # CE towards each class
    torch.testing.assert_close(terms["adv"], per_class.max(1).values.mean())
    torch.testing.assert_close(terms["ce"], F.cross_entropy(logits, batch["y"]))
    assert float(terms["adv"]) > float(terms["ce"])


def test_factor_vae_total_correlation_is_the_discriminators_log_density_ratio() -> None:
    """Kim & Mnih's density-ratio trick: TC ~ E[log D(z) / (1 - D(z))], D(z) the probability
    that ``z`` is a code of q(z) (class 0 of the discriminator, as its loss labels codes). A
    discriminator sure of class 0 (logits +3, -3 for every z) estimates TC = 6, and the VAE's
    objective pays gamma (20) times it."""
    algo, batch = _algorithm("factor_vae")
    last = algo.discriminator.net[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor([3.0, -3.0]))
        terms = algo.losses(batch)
        d_loss = algo.discriminator_loss(terms["z"])
    torch.testing.assert_close(terms["tc"], torch.tensor(6.0))
    base = terms["recon"] + terms["kl"] + terms["ce"]  # beta 1, joint head with weight 1
    torch.testing.assert_close(terms["vae"] - base, torch.tensor(20.0 * 6.0), rtol=1e-5,
                               atol=1e-3)
    # codes labelled 0 (loss softplus(-6)), permuted codes 1 (softplus(6)), averaged
    expected = 0.5 * (F.softplus(torch.tensor(-6.0)) + F.softplus(torch.tensor(6.0)))
    torch.testing.assert_close(d_loss, expected)


def test_vae_log_variance_is_bounded_so_the_kl_stays_finite() -> None:
    """An encoder pushed far out (log sigma^2 = +-300) would make exp(logvar) inf or 0 and the KL
    term inf or NaN; the log-variance is clamped to [-20, 20], so the KL stays finite."""
    algo, batch = _algorithm("vae")
    latent = algo.network.latent
    for far, bound in ((300.0, 20.0), (-300.0, -20.0)):
        with torch.no_grad():
            algo.network.encoder[-1].bias[latent:].fill_(far)
            _, logvar = algo.network.encode(batch["x"])
            terms = algo.losses(batch)
        assert torch.all(logvar == bound)
        assert torch.isfinite(terms["kl"])
