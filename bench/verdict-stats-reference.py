# Independent reference for dbdelta's moderated t test (limma's fitFDist + squeezeVar + moderated
# t, with the moderated variance never below the step's own), computed with mpmath at 30 digits
# (no code shared with dbdelta's Rust). Prints the numbers src/stats.rs's tests hold.
# Usage: python3 bench/verdict-stats-reference.py   (needs mpmath)
from mpmath import mp, mpf, log, exp, digamma, polygamma, findroot, sqrt, betainc, quad, inf
mp.dps = 30

def tcdf(t, df):
    # Student's t CDF via the regularized incomplete beta function.
    t = mpf(t); df = mpf(df)
    x = df / (df + t*t)
    tail = betainc(df/2, mpf(1)/2, 0, x, regularized=True) / 2
    return 1 - tail if t > 0 else tail

def tppf(p, df):
    lo, hi = mpf(-200), mpf(200)
    for _ in range(200):
        mid = (lo+hi)/2
        if tcdf(mid, df) < p: lo = mid
        else: hi = mid
    return (lo+hi)/2

def trigamma_inv(y):
    lo, hi = mpf('1e-8'), mpf('1e8')
    for _ in range(300):
        mid = sqrt(lo*hi)
        if polygamma(1, mid) > y: lo = mid
        else: hi = mid
    return sqrt(lo*hi)

def fit_prior(vars_dfs):
    ok = [(mpf(v), mpf(d)) for v, d in vars_dfs if v > 0]
    n = len(ok)
    e = [log(v) - digamma(d/2) + log(d/2) for v, d in ok]
    mean = sum(e)/n
    spread = sum((x-mean)**2 for x in e)/(n-1)
    excess = spread - sum(polygamma(1, d/2) for _, d in ok)/n
    if excess <= 0:
        return inf, exp(mean)
    d0 = 2*trigamma_inv(excess)
    return d0, exp(mean + digamma(d0/2) - log(d0/2))

def family(sets, looks=1, q=0.05, min_effect=0.02, power=0.8):
    tests = []
    for r in sets:
        if len(r) < 2: tests.append(None); continue
        l = [log(mpf(x)) for x in r]; n = len(l)
        m = sum(l)/n
        v = sum((x-m)**2 for x in l)/(n-1)
        tests.append((n, m, v))
    d0, s0 = fit_prior([(v, n-1) for (n, m, v) in [t for t in tests if t]])
    total = sum(n-1 for (n, m, v) in [t for t in tests if t])
    out = []
    for t in tests:
        if t is None: out.append(None); continue
        n, m, v = t
        d = n-1
        post = s0 if d0 == inf else (d0*s0 + d*v)/(d0+d)
        post = max(post, v)  # never below the step's own variance
        df = min(d0 + d, total, 2*d)  # capped at twice the step's own
        se = sqrt(post/n)
        tt = m/se
        p = 2*(1 - tcdf(abs(tt), df))
        out.append(dict(n=n, m=m, sd=sqrt(post), df=df, se=se, t=tt, p=p))
    return d0, s0, out

def detectable(se, df, alpha, min_effect=0.02, power=0.8):
    k = tppf(1 - alpha/2, df) + tppf(power, df)
    return exp(log(1 + mpf(min_effect)) + k*se) - 1

if __name__ == "__main__":
    fam = [
        [1.30, 1.25, 1.35, 1.28, 1.32],
        [1.010, 1.012, 1.008, 1.011, 1.009],
        [0.95, 1.08, 1.01, 0.97, 1.02],
        [0.80, 0.85, 0.78, 0.83, 0.81],
        [1.5, 3.0, 1.2, 2.5, 1.1],
        [1.1, 1.2],
        [1.05, 1.10, 1.02, 1.08, 1.04],
        [1.0, 1.01, 0.99, 1.0, 1.0],
        [0.9],
    ]
    d0, s0, out = family(fam)
    print("d0", mp.nstr(d0, 12), "s0^2", mp.nstr(s0, 12))
    for i, o in enumerate(out):
        if o: print(f"s{i+1}", "sd", mp.nstr(o['sd'],12), "df", mp.nstr(o['df'],12), "p", mp.nstr(o['p'],12))
    # BH by hand
    ps = [(o['p'], i) for i, o in enumerate(out) if o]
    m = len(ps)
    srt = sorted(ps)
    R = max([k+1 for k,(p,i) in enumerate(srt) if p <= (k+1)*0.05/m] or [0])
    print("R", R, "m", m)
    alpha = max(R,1)*mpf('0.05')/m
    for i, o in enumerate(out):
        if o: print(f"s{i+1}", "detectable", mp.nstr(detectable(o['se'], o['df'], alpha), 12))
    # A hand-checkable case: 2-repeat family of 6 steps
    fam2 = [[1.0, 1.02],[0.99,1.0],[1.01,0.98],[0.74,0.76],[1.03,1.0],[0.97,0.99]]
    d0, s0, out = family(fam2)
    print("fam2 d0", mp.nstr(d0, 12), "s0^2", mp.nstr(s0, 12))
    for i, o in enumerate(out):
        print(f"f{i+1}", "sd", mp.nstr(o['sd'],12), "df", mp.nstr(o['df'],12), "p", mp.nstr(o['p'],12))
    ps = [o['p'] for o in out]
    srt = sorted(ps); m=len(ps)
    R = max([k+1 for k,p in enumerate(srt) if p <= (k+1)*0.05/m] or [0])
    alpha = max(R,1)*mpf('0.05')/m
    print("R", R)
    for i, o in enumerate(out):
        print(f"f{i+1}", "detectable", mp.nstr(detectable(o['se'], o['df'], alpha), 12))
    # trigamma checks
    for x in [0.1, 0.5, 1, 2.5, 7, 30]:
        print("trigamma", x, mp.nstr(polygamma(1, x), 15))
    print("detectable looks=3 f4", mp.nstr(detectable(out[3]['se'], out[3]['df'], alpha/3), 12))
