"""How well the eq. 4 bandwidth estimate predicts the next transfer's time.

The planner and the FOP scheduler use the estimate to predict *time* (bytes / rate), so that
is what we score. A synthetic link: the mean rate drifts in regimes (a lognormal step,
σ = 0.3, every 10 minutes on average) and each transfer sees that mean times lognormal noise
(σ = 0.35), with 5 % of transfers three times faster (cache hits) and 5 % three times slower
(congestion). Transfers come every 30 s on average; a test-file probe runs every 300 s.
Predictors, each asked just before every transfer: the harmonic mean of the last ≤ 5 transfers
in the period (eq. 4, ``BandwidthEstimator``), the arithmetic mean of the same samples, the
last sample, an EWMA (α = 0.3) and the last probe alone. Usage: ``python bench/sim_estimator.py``.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "core"))

import result_files  # noqa: E402
import sim_cli  # noqa: E402

from hycloud_core.control.bandwidth import BandwidthEstimator  # noqa: E402

MBIT = 1e6 / 8


def link_trace(rng: random.Random, hours: float) -> list[tuple[float, str, float]]:
    """(time, 'probe' | 'transfer', rate in bytes/s) events."""
    events, now, mean, next_shift, next_probe = [], 0.0, 50 * MBIT, 0.0, 0.0
    while now < hours * 3600:
        now += rng.expovariate(1 / 30)
        while next_shift <= now:
            mean *= rng.lognormvariate(0, 0.3)
            next_shift += rng.expovariate(1 / 600)
        while next_probe <= now:
            events.append((next_probe, "probe", mean * rng.lognormvariate(0, 0.35)))
            next_probe += 300
        rate = mean * rng.lognormvariate(0, 0.35)
        u = rng.random()
        rate *= 3 if u < 0.05 else 1 / 3 if u < 0.10 else 1
        events.append((now, "transfer", rate))
    return sorted(events)


def score(events: list[tuple[float, str, float]]) -> dict[str, dict[str, float]]:
    est = BandwidthEstimator(period_s=300)
    last: float | None = None
    ewma: float | None = None
    probe: float | None = None
    errors: dict[str, list[float]] = {
        k: [] for k in ("harmonic (eq. 4)", "arithmetic", "last", "ewma", "probe")
    }
    actual: list[float] = []  # time of each scored transfer, in units of 1/rate
    for t, kind, rate in events:
        if kind == "probe":
            est.record_probe(t, rate)
            probe = rate
            continue
        recent = [r for ts, r in est.samples if ts >= round((t - est.period_s) * 1000)]
        guesses = {
            "harmonic (eq. 4)": est.estimate(t),
            "arithmetic": statistics.fmean(recent) if recent else probe,
            "last": last or probe,
            "ewma": ewma or probe,
            "probe": probe,
        }
        if probe is not None:
            actual.append(1 / rate)
            for name, guess in guesses.items():
                errors[name].append(math.log(rate / guess))  # log(predicted time / actual time)
        est.record_transfer(t, round(rate * 10), 10.0)
        last = rate
        ewma = rate if ewma is None else 0.3 * rate + 0.7 * ewma
    return {name: summarise(errs, actual) for name, errs in errors.items()}


def summarise(log_ratios: list[float], actual: list[float]) -> dict[str, float]:
    """Per-transfer error, and the error of one estimate on the total time of the next ten.

    Planner and scheduler add many predicted times (a makespan, a queue), so the error of sums
    is what matters most; equal-sized transfers, so time is proportional to 1/rate.
    """
    predicted = [a * math.exp(e) for a, e in zip(actual, log_ratios, strict=True)]
    # One estimate, taken before transfer i, predicts the total of transfers i..i+9.
    batches = [abs(10 * predicted[i] / sum(actual[i : i + 10]) - 1) for i in range(0, len(actual) - 9, 10)]
    return {
        "mean_abs_time_error": statistics.fmean(abs(math.expm1(e)) for e in log_ratios),
        "median_abs_time_error": statistics.median(abs(math.expm1(e)) for e in log_ratios),
        "total_time_bias": sum(predicted) / sum(actual) - 1,
        "mean_abs_error_10_transfer_total": statistics.fmean(batches),
    }


def main() -> None:
    parser = sim_cli.parser(__doc__)
    parser.add_argument("--hours", type=float, default=200.0)
    args = parser.parse_args()
    events = link_trace(random.Random(args.seed), args.hours)
    res = {
        "seed": args.seed,
        "transfers": sum(k == "transfer" for _, k, _ in events),
        "predictors": score(events),
    }
    lines = [
        "# Predicting the next transfer time from past transfers",
        "",
        f"{res['transfers']} transfers over {args.hours:.0f} h of a drifting, noisy link (seed {args.seed}).",
        "",
        *result_files.table(
            [
                "predictor",
                "per transfer: mean abs. time error",
                "median",
                "total time bias",
                "error on 10-transfer totals",
            ],
            "lrrrr",
            (
                [
                    name,
                    f"{s['mean_abs_time_error']:.1%}",
                    f"{s['median_abs_time_error']:.1%}",
                    f"{s['total_time_bias']:+.1%}",
                    f"{s['mean_abs_error_10_transfer_total']:.1%}",
                ]
                for name, s in res["predictors"].items()
            ),
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    result_files.write("sim_estimator", res, text, args.out)


if __name__ == "__main__":
    main()
