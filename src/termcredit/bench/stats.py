"""Statistics of the bench report: paired bootstrap confidence intervals for the difference
between two algorithms, the smallest difference the design can detect, and credit metrics
aggregated over seeds. Pure functions over plain data; every random draw is seeded.

Pairing: every algorithm of a seed is evaluated on the same episode slots (task, instance,
sample) and trained for the same update indices, so differences are taken slot by slot (or
update by update) and one resample serves both algorithms of the pair.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

REFERENCE = "depgpo"
ALPHA = 0.05
POWER = 0.80
N_BOOT = 10_000
MDE_FORMULA = ("MDE = (z_{1-α/2} + z_{power}) × SE, α = 0.05, power = 0.80, "
               "z_{0.975} + z_{0.80} = 1.960 + 0.842 = 2.802")
APRIORI_FORMULA = "MDE₀ = 2.802 × √(2·p·(1−p) / N), p = 0.5, N = paired episodes per algorithm"

Slot = tuple[str, int, int]


def run_dir_name(algo: str) -> str:
    """The run directory of an algorithm (variants such as ``depgpo[subtract_min=false]``
    included): a name without characters that shells or globs treat specially."""
    return (algo.replace("+", "_plus_").replace("[", "-").replace("]", "")
            .replace("=", "_").replace(",", "-"))


def plain(algo: str) -> str:
    """The algorithm a variant sets options of (``opd[scope=relevant]`` -> ``opd``)."""
    return algo.split("[", 1)[0]


def is_variant(algo: str, base: str = REFERENCE) -> bool:
    """An ablation of ``base``: its name with options in brackets."""
    return algo != base and plain(algo) == base


def cell(x: float | None, fmt: str = ".3f") -> str:
    """A report table's number ("—" for none)."""
    return "—" if x is None else format(x, fmt)


def z(q: float) -> float:
    return NormalDist().inv_cdf(q)


def mde(se: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Smallest true difference found significant (two-sided ``alpha``) with probability
    ``power``, for an estimate with standard error ``se``."""
    return (z(1 - alpha / 2) + z(power)) * se


def apriori_mde(n: int, p: float = 0.5, alpha: float = ALPHA, power: float = POWER) -> float:
    """The design's MDE before any data: two success rates near ``p`` from ``n`` episodes each,
    treated as independent (pairing and seed variance ignored), so it is the episode noise
    alone; the bootstrap MDE adds seed-to-seed variance and credits the pairing."""
    return mde(math.sqrt(2 * p * (1 - p) / n), alpha, power) if n > 0 else math.inf


def _num(x: float) -> str:
    """Signed, with a true minus sign: "+0.040", "−0.030"."""
    return f"{x:+.3f}".replace("-", "−")


@dataclass(frozen=True)
class PairedDiff:
    """a − b: point estimate (mean over seeds of the mean paired difference), percentile CI."""

    estimate: float
    lo: float
    hi: float
    se: float
    seeds: int
    units: int  # paired episodes (or updates) over all seeds
    level: float = 0.95

    @property
    def mde(self) -> float:
        return mde(self.se, 1 - self.level)

    def verdict(self, a: str = "DepGPO") -> str:
        if self.lo > 0:
            return f"{a} better"
        if self.hi < 0:
            return f"{a} worse"
        return "not distinguishable"

    def text(self) -> str:
        return f"{_num(self.estimate)} [{_num(self.lo)}, {_num(self.hi)}]"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mde": self.mde}


def paired_bootstrap(xs: Sequence[Sequence[float]], ys: Sequence[Sequence[float]],
                     n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95,
                     ) -> PairedDiff:
    """Two-stage paired bootstrap of mean(x − y): ``xs[s][i]`` and ``ys[s][i]`` are the two
    algorithms' outcomes on unit i (episode slot or update) of seed s. Each resample draws
    seeds with replacement and, independently for every drawn copy, that seed's units with
    replacement; x and y share the drawn units. A seed with no paired unit is left out."""
    ds = [np.asarray(x, float) - np.asarray(y, float) for x, y in zip(xs, ys, strict=True)]
    ds = [d for d in ds if d.size]
    if not ds:
        raise ValueError("no paired unit in any seed")
    n_seeds = len(ds)
    estimate = float(np.mean([d.mean() for d in ds]))
    rng = np.random.default_rng(seed)
    picks = rng.integers(n_seeds, size=(n_boot, n_seeds))  # resampled seeds
    means = np.empty((n_boot, n_seeds))
    for s, d in enumerate(ds):
        # resampling units with replacement = multinomial counts over the distinct values of
        # d: the same distribution as drawing indices, at a fraction of the cost
        vals, counts = np.unique(d, return_counts=True)
        where = picks == s
        drawn = rng.multinomial(d.size, counts / d.size, size=int(where.sum()))
        means[where] = drawn @ vals / d.size
    boot = means.mean(axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = (float(v) for v in np.percentile(boot, [tail, 100 - tail]))
    if np.ptp(boot) == 0:  # resampling cannot move it: a CI of zero width at the estimate
        lo = hi = estimate
    return PairedDiff(estimate, lo, hi, float(boot.std(ddof=1)), n_seeds,
                      sum(d.size for d in ds), level)


def slot(ep: dict[str, Any]) -> Slot:
    return (str(ep["task"]), int(ep["instance"]), int(ep["sample"]))


def pair_episodes(a: Iterable[dict[str, Any]], b: Iterable[dict[str, Any]]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Success of the slots both algorithms evaluated, in slot order; a slot where either had
    an infrastructure failure is dropped for both (it says nothing about the policy)."""
    x, y = pair_many(a, b)
    return x, y


def pair_many(*runs: Iterable[dict[str, Any]]) -> list[np.ndarray]:
    """``pair_episodes`` for any number of algorithms: the slots every one evaluated without
    an infrastructure failure, in slot order, one success array per algorithm."""
    by_slot = [{slot(e): e for e in eps} for eps in runs]
    keys = sorted(k for k in set.intersection(*(set(d) for d in by_slot))
                  if not any(d[k].get("infra") for d in by_slot))
    return [np.array([float(d[k]["success"]) for k in keys]) for d in by_slot]


def train_success(rows: Iterable[dict[str, Any]]) -> dict[int, float]:
    """Training-rollout success rate by update index (step ≥ 0)."""
    return {int(r["step"]): float(r["success_rate"]) for r in rows
            if r.get("step", -1) >= 0 and "success_rate" in r}


def pair_updates(a: Iterable[dict[str, Any]], b: Iterable[dict[str, Any]]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Training success of the update indices both runs have, in update order."""
    sa, sb = train_success(a), train_success(b)
    keys = sorted(sa.keys() & sb.keys())
    return np.array([sa[k] for k in keys]), np.array([sb[k] for k in keys])


def auc(rows: Iterable[dict[str, Any]]) -> float | None:
    """Normalised area under the training success curve: the mean over updates of that
    update's rollout success rate (on-policy samples at temperature 1)."""
    s = train_success(rows)
    return float(np.mean(list(s.values()))) if s else None


def episode_stats(eps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Success (infra episodes left out), infra rate, and the mean steps and tokens of a
    successful episode (None without success)."""
    ok = [e for e in eps if not e.get("infra")]
    wins = [e for e in ok if e["success"]]
    return {
        "episodes": len(eps), "infra_episodes": len(eps) - len(ok),
        "infra_rate": (len(eps) - len(ok)) / len(eps) if eps else None,
        "success": len(wins) / len(ok) if ok else None,
        "steps_per_success": float(np.mean([e["steps"] for e in wins])) if wins else None,
        "tokens_per_success": float(np.mean([e["tokens"] for e in wins])) if wins else None,
    }


def mean_of(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.mean(vals)) if vals else None


def credit_keys(per_seed: Sequence[Sequence[dict[str, Any]]]) -> list[str]:
    return sorted({k for rows in per_seed for r in rows for k in r if k.startswith("credit/")})


def seed_mean(per_seed: Sequence[Sequence[dict[str, Any]]], key: str) -> float | None:
    """Mean over seeds of the per-seed mean over updates; updates without the key (e.g. no
    success, so no steps per success) are skipped."""
    return mean_of(mean_of(r.get(key) for r in rows if r.get("step", -1) >= 0)
                   for rows in per_seed)


def update_curve(per_seed: Sequence[Sequence[dict[str, Any]]], key: str) -> dict[str, list]:
    """Per update index: mean, min and max over the seeds that report ``key`` there."""
    by_step: dict[int, list[float]] = {}
    for rows in per_seed:
        for r in rows:
            if r.get("step", -1) >= 0 and r.get(key) is not None:
                by_step.setdefault(int(r["step"]), []).append(float(r[key]))
    steps = sorted(by_step)
    return {"steps": steps, "mean": [float(np.mean(by_step[s])) for s in steps],
            "min": [min(by_step[s]) for s in steps], "max": [max(by_step[s]) for s in steps]}


@dataclass
class Run:
    """One algorithm x seed: its metrics rows and, when written, the final evaluation's
    episodes and the shared start evaluation's episodes."""

    rows: list[dict[str, Any]]
    final: list[dict[str, Any]] | None
    start: list[dict[str, Any]] | None


def _diff(a: dict[int, Run], b: dict[int, Run], n_boot: int
          ) -> dict[str, PairedDiff | None]:
    """a − b, paired on the seeds both have: final success over shared episode slots, AUC
    over shared update indices; None where the run has no such data."""
    seeds = sorted(a.keys() & b.keys())
    fin = [pair_episodes(a[s].final, b[s].final) for s in seeds
           if a[s].final is not None and b[s].final is not None]
    upd = [pair_updates(a[s].rows, b[s].rows) for s in seeds]
    res: dict[str, Any] = {}
    for name, pairs in (("final", fin), ("auc", upd)):
        pairs = [p for p in pairs if p[0].size]
        res[name] = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs],
                                     n_boot=n_boot) if pairs else None
    return res


def reference(runs: dict[str, dict[int, Run]]) -> str:
    """What the report compares against the others: plain DepGPO, or on a tier that runs only
    DepGPO's shapes (``menu-sgd``) the first of them in the run's order."""
    if runs.get(REFERENCE):
        return REFERENCE
    return next((a for a, seeds in runs.items() if seeds and is_variant(a)), REFERENCE)


def compare(runs: dict[str, dict[int, Run]], ref: str | None = None,
            n_boot: int = N_BOOT) -> dict[str, Any]:
    """The reference (``reference``) minus every other algorithm that is not one of its
    variants (baselines), and every variant minus its plain algorithm where that ran too
    (ablations: DepGPO's own, and e.g. ``opd[scope=relevant]`` − ``opd``), with paired
    bootstrap CIs and MDEs."""
    ref = ref or reference(runs)
    if not runs.get(ref):
        return {"reference": ref, "baselines": {}, "ablations": {},
                "note": f"no {ref} run: no differences to report"}

    def entry(diffs: dict[str, PairedDiff | None], who: str, label: str) -> dict[str, Any]:
        f, a = diffs["final"], diffs["auc"]
        said = [f"{label}: " + (f"{f.text()}: {f.verdict(who)}" if f else
                                "no per-episode final evaluation")]
        if a:
            said.append(f"AUC {a.text()}: {a.verdict(who)}")
        return {**{k: (d.as_dict() if d else None) for k, d in diffs.items()},
                "sentence": "; ".join(said) + "."}

    base = {o: entry(_diff(runs[ref], runs[o], n_boot), "DepGPO", f"DepGPO − {o}")
            for o in runs if o != ref and not is_variant(o, ref)}
    abl = {v: entry(_diff(runs[v], runs[plain(v)], n_boot), v, f"{v} − {plain(v)}")
           for v in runs if is_variant(v, plain(v)) and runs.get(plain(v))}
    ref_eps = [episode_stats(r.final) for r in runs[ref].values() if r.final]
    n = sum(e["episodes"] - e["infra_episodes"] for e in ref_eps)
    mdes = [e["final"]["mde"] for e in base.values() if e["final"]]
    ceil, candidates = best_ceiling(runs)
    return {"reference": ref, "baselines": base, "ablations": abl, "n_boot": n_boot,
            "captured": captured(runs, ref, ceiling=ceil, n_boot=n_boot),
            # the same share for each of the reference's variants (e.g. blame on destroyers)
            "captured_variants": {v: got for v in runs if is_variant(v, ref)
                                  and (got := captured(runs, v, ceiling=ceil, n_boot=n_boot))
                                  is not None},
            "ceiling_candidates": candidates,
            "mde": {"formula": MDE_FORMULA, "apriori_formula": APRIORI_FORMULA,
                    "episodes_per_algorithm": n, "seeds": len(ref_eps),
                    "apriori_p05": apriori_mde(n) if n else None,
                    "bootstrap_median": float(np.median(mdes)) if mdes else None,
                    "bootstrap": {o: e["final"]["mde"] for o, e in base.items() if e["final"]}}}


CEILING, FLOOR = "oracle", "grpo"


def best_ceiling(runs: dict[str, dict[int, Run]]) -> tuple[str, dict[str, float]]:
    """The ceiling: of ``oracle`` and its variants (its other ground-truth weightings), the
    one with the highest final success (mean over seeds of each seed's mean); and each
    candidate's. Chosen on the same episodes it is compared on, so it can only sit higher
    than a ceiling fixed in advance, and ``captured`` lower. ``CEILING`` when none has a
    final evaluation."""
    means = {}
    for algo, seeds in runs.items():
        finals = [[float(e["success"]) for e in r.final if not e.get("infra")]
                  for r in seeds.values() if r.final]
        if plain(algo) == CEILING and finals and all(finals):
            means[algo] = float(np.mean([np.mean(f) for f in finals]))
    return (max(means, key=lambda a: (means[a], a == CEILING)) if means else CEILING), means


def ratio_bootstrap(num: Sequence[Sequence[float]], den: Sequence[Sequence[float]],
                    n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
                    ) -> dict[str, Any] | None:
    """mean(num) / mean(den) (means over seeds of per-seed means) with a percentile CI from
    the same two-stage paired bootstrap as ``paired_bootstrap``: a resample draws seeds, then
    each drawn seed's units, and both means read the same draws. The ratio exists only where
    the denominator is > 0: ``estimate`` is None when the point denominator is not, and the CI
    is taken over the resamples whose denominator is (``den_not_positive``: the share that
    were not). None without a unit."""
    pairs = [(np.asarray(n, float), np.asarray(d, float)) for n, d in zip(num, den, strict=True)]
    pairs = [(n, d) for n, d in pairs if n.size]
    if not pairs:
        return None
    k = len(pairs)
    n_mean = float(np.mean([n.mean() for n, _ in pairs]))
    d_mean = float(np.mean([d.mean() for _, d in pairs]))
    rng = np.random.default_rng(seed)
    picks = rng.integers(k, size=(n_boot, k))
    bn, bd = np.empty((n_boot, k)), np.empty((n_boot, k))
    for s, (n, d) in enumerate(pairs):
        where = picks == s
        counts = rng.multinomial(n.size, np.full(n.size, 1 / n.size), size=int(where.sum()))
        bn[where], bd[where] = counts @ n / n.size, counts @ d / n.size
    bn, bd = bn.mean(axis=1), bd.mean(axis=1)
    ok = bd > 0
    ratios = bn[ok] / bd[ok]
    tail = (1 - level) / 2 * 100
    lo, hi = ((float(v) for v in np.percentile(ratios, [tail, 100 - tail])) if ratios.size
              else (None, None))
    return {"estimate": n_mean / d_mean if d_mean > 0 else None, "lo": lo, "hi": hi,
            "numerator": n_mean, "denominator": d_mean, "seeds": k,
            "units": sum(n.size for n, _ in pairs), "level": level,
            "den_not_positive": float(1 - ok.mean())}


def captured(runs: dict[str, dict[int, Run]], ref: str = REFERENCE, floor: str = FLOOR,
             ceiling: str = CEILING, n_boot: int = N_BOOT) -> dict[str, Any] | None:
    """How much of the oracle's gain over GRPO DepGPO captures, in final success:
    (ref − floor) / (ceiling − floor), paired on the evaluation slots all three share, seed by
    seed; None unless all three have per-episode final evaluations."""
    seeds = sorted(set.intersection(*(set(runs.get(a, {})) for a in (ref, floor, ceiling))))
    triples = [pair_many(*(runs[a][s].final for a in (ref, floor, ceiling))) for s in seeds
               if all(runs[a][s].final is not None for a in (ref, floor, ceiling))]
    if not triples:
        return None
    got = ratio_bootstrap([x - y for x, y, _ in triples], [o - y for _, y, o in triples],
                          n_boot=n_boot)
    if got is None:
        return None
    # the ceiling's own gain over the floor, on the same slots: is there anything to capture?
    gain = paired_bootstrap([o for *_, o in triples], [y for _, y, _ in triples], n_boot=n_boot)
    return {"ref": ref, "floor": floor, "ceiling": ceiling, **got, "ceiling_gain": gain.as_dict()}
