"""Divisors, prime factors and powers of two of an axis length (the candidates of a split knob)."""

from __future__ import annotations

from tunecli.errors import SpaceError


def _require_positive(caller: str, n: int) -> None:
    """Raise SpaceError naming ``caller`` unless ``n`` is a positive integer."""
    if n < 1:
        raise SpaceError(f"{caller}: {n} is not a positive integer")


def get_factors(n: int) -> list[int]:
    """Return all divisors of ``n`` in ascending order (``12 -> [1, 2, 3, 4, 6, 12]``).

    Parameters
    ----------
    n : int
        A positive integer.

    Returns
    -------
    list of int
    """
    _require_positive("get_factors", n)
    divisors = [1]
    for prime, exponent in prime_factors(n):
        divisors = [d * prime**e for d in divisors for e in range(exponent + 1)]
    return sorted(divisors)


def prime_factors(n: int) -> list[tuple[int, int]]:
    """Return ``[(prime, exponent), ...]`` of ``n`` in ascending order (``12 -> [(2, 2), (3, 1)]``).

    Trial division that divides each prime out as it is found, so it stops at the square root of
    what is left: at most ~15,000 steps for any ``n`` below 2**31.

    Parameters
    ----------
    n : int
        A positive integer.

    Returns
    -------
    list of tuple
    """
    _require_positive("prime_factors", n)
    out: list[tuple[int, int]] = []
    rest = n

    def divide_out(prime: int) -> None:
        nonlocal rest
        exponent = 0
        while rest % prime == 0:
            rest //= prime
            exponent += 1
        if exponent:
            out.append((prime, exponent))

    divide_out(2)
    divide_out(3)
    candidate, step = 5, 2  # 6k - 1, 6k + 1
    while candidate * candidate <= rest:
        divide_out(candidate)
        candidate += step
        step = 6 - step
    if rest > 1:
        out.append((rest, 1))
    return out


def get_pow2s(n: int) -> list[int]:
    """Return the powers of two ``<= n`` in ascending order (``10 -> [1, 2, 4, 8]``).

    Parameters
    ----------
    n : int
        A positive integer.

    Returns
    -------
    list of int
    """
    _require_positive("get_pow2s", n)
    return [2**x for x in range(n.bit_length())]
