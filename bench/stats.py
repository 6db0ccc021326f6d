"""Welch's t-test on raw timing samples, without SciPy."""
import math
import statistics


def _betacf(a, b, x):
    """Continued fraction for the regularized incomplete beta function
    (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1.0) < 1e-12:
            break
    return h


def betainc(a, b, x):
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def t_sf2(t, df):
    """Two-sided p-value of Student's t with df degrees of freedom."""
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def welch(a, b):
    """(t, df, p) of Welch's unequal-variance t-test; p=None when either
    side has fewer than two samples."""
    if len(a) < 2 or len(b) < 2:
        return None, None, None
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a), statistics.variance(b)
    se2 = va / len(a) + vb / len(b)
    if se2 == 0:
        return (math.inf if ma != mb else 0.0), None, (0.0 if ma != mb else 1.0)
    t = (mb - ma) / math.sqrt(se2)
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) +
                     (vb / len(b)) ** 2 / (len(b) - 1))
    return t, df, t_sf2(abs(t), df)


def significant(a, b, alpha=0.05):
    """A time difference counts when Welch's test says so AND the medians
    differ by more than the larger relative spread (the measured noise)."""
    t, df, p = welch(a, b)
    ma, mb = statistics.median(a), statistics.median(b)
    noise = max(rel_spread(a), rel_spread(b))
    diff = abs(mb - ma) / min(ma, mb) if min(ma, mb) > 0 else math.inf
    return {"p_value": None if p is None else round(p, 6),
            "noise_rel": round(noise, 4), "diff_rel": round(diff, 4),
            "significant": bool(p is not None and p < alpha and diff > noise)}


def rel_spread(xs):
    if len(xs) < 2:
        return 0.0
    m = statistics.median(xs)
    return statistics.stdev(xs) / m if m else 0.0
