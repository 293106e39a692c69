# Normwise relative force difference of f32 PMB forces against f64, for bond vectors from
# (B) f64 positions, difference rounded to f32 (the f32 kernels before), and
# (C) f32 positions relative to the body's centre (the f32 records now); u rounded to f32 in
# both, f32 arithmetic, the displacement of tests/gpu.rs (strain 1e-3, wave, translation).
# PMB nonlinear with unit weights, interior and corner nodes of lattices (3,000 random nodes
# and the corners per case). Needs numpy:  python3 scripts/f32_record_error.py
# (docs/results.md, GPU section: the f32 node records).
import numpy as np
rng = np.random.default_rng(1)
def run(dim, lo, hi, N, samples=3000):
    L = hi - lo
    dx = L / N
    delta = 3.015 * dx
    r = int(np.ceil(3.015))
    rng_off = np.arange(-r, r + 1)
    if dim == 3:
        off = np.array(np.meshgrid(rng_off, rng_off, rng_off, indexing="ij")).reshape(3, -1).T
    else:
        off = np.array(np.meshgrid(rng_off, rng_off, indexing="ij")).reshape(2, -1).T
        off = np.hstack([off, np.zeros((len(off), 1), int)])
    d2 = (off ** 2).sum(1)
    off = off[(d2 > 0) & (d2 * dx * dx <= delta * delta)]
    shape = (N, N, N if dim == 3 else 1)
    idx = rng.integers(0, N, size=(samples, 3))
    if dim == 2: idx[:, 2] = 0
    corners = np.array([[a, b, c] for a in (0, N - 1) for b in (0, N - 1) for c in ((0, N - 1) if dim == 3 else (0,))])
    idx = np.vstack([idx, corners])
    pos = lambda I: np.where(np.arange(3) < dim, lo + (I + 0.5) * dx, 0.0)
    centre = np.where(np.arange(3) < dim, 0.5 * (pos(np.zeros(3)) + pos(np.full(3, N - 1))), 0.0)
    def disp(x, eps=1e-3):
        wave = np.sin(x[..., 0] * 700.0) * np.cos(x[..., 1] * 500.0 + 0.3)
        c = np.stack([eps * (x[..., 0] + 0.4 * x[..., 1]) + 0.2 * eps * 1e-3 * wave + 1e-4,
                      eps * (0.7 * x[..., 1] - 0.2 * x[..., 2]) - 0.1 * eps * 1e-3 * wave - 2e-4,
                      eps * (0.5 * x[..., 2] + 0.3 * x[..., 0]) + 0.1 * eps * 1e-3 * wave], -1)
        if dim == 2: c[..., 2] = 0
        return c
    num_b = num_c = den = 0.0
    I = idx[:, None, :]
    J = I + off[None, :, :]
    inside = np.all((J >= 0) & (J < np.array(shape)), -1)
    xi_, xj_ = pos(I.astype(float)), pos(J.astype(float))
    ui, uj = disp(xi_), disp(xj_)
    # f64 reference
    def force(xi, eta, f32):
        t = np.float32 if f32 else np.float64
        xi = xi.astype(t); eta = eta.astype(t)
        x = np.sqrt((xi * xi).sum(-1))
        y = xi + eta
        ny = np.sqrt((y * y).sum(-1))
        s = (eta * (t(2) * xi + eta)).sum(-1) / (x * (ny + x))
        f = (s / ny)[..., None] * y
        f = np.where(inside[..., None], f, 0)
        return f.astype(np.float64).sum(1)
    fa = force(xj_ - xi_, uj - ui, False)
    ui32, uj32 = ui.astype(np.float32), uj.astype(np.float32)
    eta32 = (uj32 - ui32)
    fb = force((xj_ - xi_).astype(np.float32), eta32, True)
    xc = (xj_ - centre).astype(np.float32) - (xi_ - centre).astype(np.float32)
    fc = force(xc, eta32, True)
    n = lambda a: np.sqrt((a * a).sum())
    return n(fb - fa) / n(fa), n(fc - fa) / n(fa), n(fc - fb) / n(fb)
for name, dim, lo, hi, N in [("test 3D block 12^3", 3, -0.006, 0.006, 12), ("test 2D plate 40^2", 2, -0.02, 0.02, 40),
                             ("bench 3D block 4M (159^3)", 3, 0.0, 0.05, 159), ("bench 2D plate 1M (1000^2)", 2, -0.025, 0.025, 1000),
                             ("2D plate 20M (4472^2)", 2, -0.025, 0.025, 4472)]:
    b, c, cb = run(dim, lo, hi, N)
    print(f"{name:28s} before (f64 xi rounded) {b:.1e}   now (f32 records) {c:.1e}   now vs before {cb:.1e}")
