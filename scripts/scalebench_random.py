"""scalebench's per-sample random streams in pure Python (workloads/registry.cpp sample_random: splitmix64 of the
seed and the sample, seeding a std::mt19937_64), with libstdc++'s std::normal_distribution (Marsaglia's polar
method on generate_canonical) and std::uniform_int_distribution (Lemire's multiply-and-reject, GCC 11 and later),
so pytorch_reference.py draws the same sentence lengths as scalebench's synthesize() and credits the same count
of non-padding tokens. Only the lengths are reproduced; the words themselves need not be the same."""
import math

MASK64 = (1 << 64) - 1
_N, _M = 312, 156
_UPPER, _LOWER = MASK64 & ~((1 << 31) - 1), (1 << 31) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


class Mt19937_64:
    """std::mt19937_64: seeding, twist and tempering as the C++ standard specifies them."""

    def __init__(self, seed):
        state = [seed & MASK64]
        for i in range(1, _N):
            previous = state[-1]
            state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i) & MASK64)
        self.state, self.index = state, _N

    def _twist(self):
        s = self.state
        for i in range(_N):
            x = (s[i] & _UPPER) | (s[(i + 1) % _N] & _LOWER)
            s[i] = s[(i + _M) % _N] ^ (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
        self.index = 0

    def __call__(self):
        if self.index >= _N:
            self._twist()
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & MASK64


def sample_random(seed, sample):
    return Mt19937_64(splitmix64(splitmix64(seed & MASK64) ^ (sample & MASK64)))


def canonical(generator):
    """std::generate_canonical<double, 53> on a 64-bit engine: one draw over 2^64, kept below 1."""
    value = float(generator()) / 18446744073709551616.0
    return value if value < 1.0 else math.nextafter(1.0, 0.0)


def normal(generator, mean, stddev):
    """A fresh std::normal_distribution's first value (the saved second one is discarded with the object)."""
    while True:
        x = 2.0 * canonical(generator) - 1.0
        y = 2.0 * canonical(generator) - 1.0
        r2 = x * x + y * y
        if r2 <= 1.0 and r2 != 0.0:
            break
    return y * math.sqrt(-2 * math.log(r2) / r2) * stddev + mean


def uniform_int(generator, low, high):
    """std::uniform_int_distribution<int64_t>(low, high) on a 64-bit engine."""
    span = high - low + 1
    product = generator() * span
    if product & MASK64 < span:
        threshold = (-span & MASK64) % span
        while product & MASK64 < threshold:
            product = generator() * span
    return low + (product >> 64)


def lround(x):
    """std::lround: halves away from zero."""
    whole = math.floor(abs(x))
    return int(math.copysign(whole + (1 if abs(x) - whole >= 0.5 else 0), x))


def sentence_length(generator, mean, time):
    """The translation workloads' draw_length: N(mean, 2.5) at full scale (time 32), N(time - 1.5, 1) tiny,
    rounded and clamped to [2, time]."""
    full = time == 32
    drawn = lround(normal(generator, mean if full else time - 1.5, 2.5 if full else 1.0))
    return int(min(max(drawn, 2), time))
