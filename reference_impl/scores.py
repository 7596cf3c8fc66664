"""Score formulas: delayed-score packing with band bumps, priority scores, next-wake values.

Every value is an exact int or Fraction. `lua_number` models the one place where the real
scripts lose precision: Lua numbers are IEEE doubles, so integer arithmetic above 2**53 rounds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

#: Scores per millisecond band of the delayed zset (12 bits).
BAND = 0x1000
#: Multiplier that puts the priority tier above the 32-bit counter.
TIER = 0x100000000
#: Node's client-side priority limit; (2**21-1)*2**32 + 2**32-1 == 2**53-1.
PRIORITY_LIMIT = 2**21 - 1
#: Most delayed jobs one promotion sweep moves.
PROMOTE_BATCH = 1000
#: Largest integer every double represents exactly.
EXACT_LIMIT = 2**53


def lua_number(value: int) -> int:
    """The integer a Lua double holds after computing `value` (round half to even above 2**53)."""
    if -EXACT_LIMIT <= value <= EXACT_LIMIT:
        return value
    return int(float(value))


def fire_time(timestamp: int, delay: int) -> int:
    """`F`: the fire time in ms. Only a positive delay shifts it."""
    return timestamp + delay if delay > 0 else timestamp


def band_floor(fire: int) -> int:
    """Lowest score of the band owned by fire time `fire`."""
    return lua_number(fire * BAND)


def band_ceiling(fire: int) -> int:
    """Highest score of the band owned by fire time `fire`."""
    return lua_number(lua_number((fire + 1) * BAND) - 1)


@dataclass(frozen=True)
class DelayedScore:
    """A delayed insert: the zset score and the fire time written to the `delayed` event."""

    score: int
    fire: int


def delayed_score(existing: Iterable[int], timestamp: int, delay: int) -> DelayedScore:
    """Score for a new delayed job given the scores already in the delayed zset.

    The first job of a band gets the floor, each later one the band's top + 1, and once the
    ceiling is reached every further job gets the ceiling (saturation).
    """
    fire = fire_time(timestamp, delay)
    lo, hi = band_floor(fire), band_ceiling(fire)
    in_band = [s for s in existing if lo <= s <= hi]
    if not in_band:
        return DelayedScore(lo, fire)
    top = max(in_band)
    if top >= hi:
        return DelayedScore(hi, fire)
    return DelayedScore(lua_number(top + 1), fire)


def recover_fire(score: int) -> int:
    """The fire time a delayed score encodes: `floor(score / 4096)`."""
    return score // BAND


def band_position(score: int) -> int:
    """Where in its band a score sits (0 = floor)."""
    return score % BAND


def promote_bound(now: int) -> int:
    """Highest delayed score that a sweep at `now` promotes: the whole band of `now`."""
    return band_ceiling(now)


def priority_score(priority: int, counter: int) -> int:
    """Prioritized zset score for `priority` and the value `INCR pc` returned."""
    return lua_number(lua_number(priority * TIER) + counter % TIER)


def next_wake(head_score: int) -> Fraction:
    """Score of marker member "1": the delayed head divided by 4096, not floored."""
    return Fraction(head_score, BAND)


def next_wake_reply(head_score: int) -> int:
    """What moveToActive returns as the next fire time: head/4096 truncated to an integer."""
    return head_score // BAND


# --- before 5.8.6 (versions.BAND_BUMP) ------------------------------------------------------
#: The low bits a pre-5.8.6 delayed score carries (12 bits of a counter or job id).
LOW_BITS = 0xFFF


def legacy_delayed_score(fire: int, low: int) -> int:
    """A pre-5.8.6 delayed score: `fire * 4096 + (low & 0xfff)`, no band bump.

    Adds took `low` from the `id` counter's new value (custom ids too), and the Node client
    took it from the job id for changeDelay and moveToDelayed (`js_low_bits`).
    """
    return lua_number(lua_number(fire * BAND) + (low & LOW_BITS))


def js_low_bits(job_id: str) -> int:
    """`+jobId & 0xfff` in JavaScript: the id read as a Number, 0 when it is not one."""
    body = job_id.strip()
    try:
        number = int(body, 16) if body[:2].lower() == "0x" else float(body) if body else 0.0
    except ValueError:
        return 0
    if number != number or number in (float("inf"), float("-inf")):
        return 0
    return int(number) % 2**32 & LOW_BITS  # ToInt32 keeps the low 32 bits of the integer part


def client_score(job_id: str, fire: int) -> int:
    """The delayed score a pre-5.8.6 Node client computed for changeDelay and moveToDelayed:
    `fire * 0x1000 + (+jobId & 0xfff)` in doubles, or `fire` itself when it is not positive."""
    return legacy_delayed_score(fire, js_low_bits(job_id)) if fire > 0 else fire


def legacy_promote_bound(now: int) -> int:
    """Before 5.8.6 the sweep took scores up to `(now + 1) * 4096` inclusive."""
    return lua_number((now + 1) * BAND)


def int32_band(counter: int) -> int:
    """`bit.band(c, 0xffffffffffff)` in Lua BitOp (before 5.8.1): c as a signed 32-bit int."""
    low = counter % 2**32
    return low - 2**32 if low >= 2**31 else low


def legacy_priority_score(priority: int, counter: int) -> int:
    """A pre-5.8.1 prioritized score: the counter wrapped to a signed 32-bit int."""
    return lua_number(lua_number(priority * TIER) + int32_band(counter))


def lua_number_text(value: int | Fraction) -> str:
    """How Redis renders a Lua number passed to a command: `%.17g` of the double."""
    if isinstance(value, int) and -EXACT_LIMIT <= value <= EXACT_LIMIT:
        return str(value)
    return f"{float(value):.17g}"
