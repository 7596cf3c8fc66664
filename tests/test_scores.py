"""Score formulas (RESEARCH.md §3, §4, §5, §6).

Every expected value is a literal computed by hand from the protocol; the comment next to it
shows the arithmetic. T = 1700000000000 is the timestamp of the worked example (§9).
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl import scores
from reference_impl.scores import (
    band_ceiling,
    band_floor,
    band_position,
    delayed_score,
    fire_time,
    next_wake,
    next_wake_reply,
    priority_score,
    promote_bound,
    recover_fire,
)

T = 1700000000000
F = 1700000005000  # T + 5000
FLOOR = 6963200020480000  # (1700000000000+5000)*4096
CEIL = 6963200020484095  # (1700000000000+5001)*4096-1 = FLOOR + 4095


def test_constants() -> None:
    assert scores.BAND == 4096  # S = 0x1000
    assert scores.TIER == 4294967296  # 2^32
    assert scores.PRIORITY_LIMIT == 2097151  # 2^21-1
    assert scores.PROMOTE_BATCH == 1000
    assert scores.EXACT_LIMIT == 9007199254740992  # 2^53


class TestFireTime:
    def test_positive_delay_shifts(self) -> None:
        assert fire_time(T, 5000) == 1700000005000  # T+5000

    def test_zero_delay(self) -> None:
        assert fire_time(T, 0) == 1700000000000  # F = T

    def test_negative_delay_does_not_shift(self) -> None:
        # §3: opts.delay = -1000 gives F = T, not T-1000
        assert fire_time(T, -1000) == 1700000000000

    def test_delay_of_one(self) -> None:
        assert fire_time(T, 1) == 1700000000001


class TestBand:
    def test_floor(self) -> None:
        assert band_floor(F) == 6963200020480000  # 1700000005000*4096

    def test_ceiling(self) -> None:
        assert band_ceiling(F) == 6963200020484095  # 1700000005001*4096-1

    def test_band_zero(self) -> None:
        assert band_floor(0) == 0
        assert band_ceiling(0) == 4095  # 1*4096-1

    def test_band_of_T(self) -> None:
        assert band_floor(T) == 6963200000000000  # 1700000000000*4096
        assert band_ceiling(T) == 6963200000004095  # 1700000000001*4096-1


class TestDelayedScore:
    def test_empty_band_gets_floor(self) -> None:
        placed = delayed_score([], T, 5000)
        assert placed.score == 6963200020480000  # (T+5000)*4096
        assert placed.fire == 1700000005000

    def test_second_job_bumped(self) -> None:
        assert delayed_score([FLOOR], T, 5000).score == 6963200020480001  # FLOOR+1

    def test_third_job_bumped(self) -> None:
        assert delayed_score([FLOOR, FLOOR + 1], T, 5000).score == 6963200020480002  # FLOOR+2

    def test_band_shared_across_timestamps(self) -> None:
        # §3: different T, equal F share a band. T+10 with delay 4990 has F = T+5000.
        placed = delayed_score([FLOOR], T + 10, 4990)
        assert placed.score == 6963200020480001
        assert placed.fire == 1700000005000

    def test_gap_uses_top_plus_one_not_count(self) -> None:
        # two jobs in band at positions 0 and 5: top+1 = FLOOR+6, not FLOOR+2
        assert delayed_score([FLOOR, FLOOR + 5], T, 5000).score == 6963200020480006

    def test_gap_only_top_matters(self) -> None:
        # one job at position 100: top+1 = FLOOR+101
        assert delayed_score([FLOOR + 100], T, 5000).score == 6963200020480101

    def test_unordered_existing(self) -> None:
        assert delayed_score([FLOOR + 7, FLOOR, FLOOR + 3], T, 5000).score == 6963200020480008

    def test_4096th_job_gets_ceiling(self) -> None:
        existing = [FLOOR + i for i in range(4095)]  # positions 0..4094
        assert delayed_score(existing, T, 5000).score == 6963200020484095  # FLOOR+4095 = CEIL

    def test_4097th_job_saturates(self) -> None:
        existing = [FLOOR + i for i in range(4096)]  # positions 0..4095 (full band)
        assert delayed_score(existing, T, 5000).score == 6963200020484095  # CEIL again

    def test_ceiling_only_saturates(self) -> None:
        assert delayed_score([CEIL], T, 5000).score == 6963200020484095

    def test_neighbour_bands_ignored(self) -> None:
        # FLOOR-1 is the ceiling of band F-1, CEIL+1 the floor of band F+1
        existing = [FLOOR - 1, CEIL + 1, CEIL + 500, FLOOR - 4096]
        assert delayed_score(existing, T, 5000).score == 6963200020480000  # empty band: FLOOR

    def test_zero_delay_scores_timestamp(self) -> None:
        placed = delayed_score([], T, 0)
        assert placed.score == 6963200000000000  # T*4096
        assert placed.fire == 1700000000000

    def test_negative_delay_scores_timestamp(self) -> None:
        # §3: raw Lua with opts.delay = -1000 scores T*4096, not (T-1000)*4096
        placed = delayed_score([], T, -1000)
        assert placed.score == 6963200000000000
        assert placed.fire == 1700000000000

    def test_worked_example_job2(self) -> None:
        # §9: job 2 created at N = T+10 with delay 5000
        assert delayed_score([FLOOR, FLOOR + 1], T + 10, 5000).score == 6963200020520960
        # (1700000000010+5000)*4096


class TestPrecision:
    def test_last_exact_band(self) -> None:
        # F = 2^41-1 = 2199023255551: F*4096 = 2^53-4096 exact
        fire = 2199023255551
        first = delayed_score([], fire, 0)
        assert first.score == 9007199254736896  # 2^53 - 4096
        assert first.fire == 2199023255551
        second = delayed_score([first.score], fire, 0)
        assert second.score == 9007199254736897  # 2^53 - 4095, bump survives
        assert band_ceiling(fire) == 9007199254740991  # 2^41*4096 - 1 = 2^53 - 1

    def test_first_inexact_band_bump_rounds_away(self) -> None:
        # F = 2^41 = 2199023255552: F*4096 = 2^53. top+1 = 2^53+1 is a double tie between
        # 2^53 and 2^53+2 and rounds to even, 2^53. Both jobs score 2^53.
        fire = 2199023255552
        first = delayed_score([], fire, 0)
        assert first.score == 9007199254740992  # 2^53
        second = delayed_score([first.score], fire, 0)
        assert second.score == 9007199254740992  # 2^53+1 -> 2^53
        assert second.fire == 2199023255552

    def test_first_inexact_band_ceiling_rounds(self) -> None:
        # (2^41+1)*4096 = 2^53+4096 (exact, even); minus 1 = 2^53+4095 is a tie between
        # 2^53+4094 (odd mantissa) and 2^53+4096 (even mantissa) -> 2^53+4096
        assert band_ceiling(2199023255552) == 9007199254745088

    def test_lua_number(self) -> None:
        assert scores.lua_number(9007199254740992) == 9007199254740992  # 2^53 exact
        assert scores.lua_number(9007199254740993) == 9007199254740992  # 2^53+1 -> even
        assert scores.lua_number(9007199254740995) == 9007199254740996  # 2^53+3 -> 2^53+4
        assert scores.lua_number(-9007199254740993) == -9007199254740992


class TestRecovery:
    def test_recover_fire(self) -> None:
        assert recover_fire(6963200020480001) == 1700000005000  # floor(score/4096)
        assert recover_fire(6963200020484095) == 1700000005000  # the ceiling is still F
        assert recover_fire(6963200020484096) == 1700000005001  # next band

    def test_band_position(self) -> None:
        assert band_position(6963200020480000) == 0
        assert band_position(6963200020480001) == 1
        assert band_position(6963200020484095) == 4095

    def test_recover_last_exact_band(self) -> None:
        assert recover_fire(9007199254740991) == 2199023255551  # (2^53-1) // 4096 = 2^41-1
        assert band_position(9007199254740991) == 4095


class TestPromoteBound:
    def test_worked_example(self) -> None:
        # §9: sweep at T+5000 covers 0 … (T+5001)*4096-1
        assert promote_bound(1700000005000) == 6963200020484095

    def test_zero(self) -> None:
        assert promote_bound(0) == 4095  # (0+1)*4096-1

    def test_not_pre_586_bound(self) -> None:
        # pre-5.8.6 used (now+1)*4096 = 6963200020484096, which is the next band's floor
        assert promote_bound(1700000005000) != 6963200020484096


class TestPriorityScore:
    def test_shared_counter_example(self) -> None:
        # §5: priorities 1, 5, 1 with c = 1, 2, 3
        assert priority_score(1, 1) == 4294967297  # 2^32+1
        assert priority_score(5, 2) == 21474836482  # 5*2^32+2
        assert priority_score(1, 3) == 4294967299  # 2^32+3

    def test_shared_counter_order(self) -> None:
        # tier 1 stays FIFO around tier 5: order 5(c1), 7(c3), 6(c2) in §9
        assert priority_score(1, 1) < priority_score(1, 3) < priority_score(5, 2)

    def test_counter_wraps_at_2_32(self) -> None:
        assert priority_score(3, 4294967296) == 12884901888  # 3*2^32 + (2^32 mod 2^32 = 0)
        assert priority_score(3, 4294967297) == 12884901889  # 3*2^32 + 1
        assert priority_score(1, 4294967295) == 8589934591  # 2^32 + 2^32-1

    def test_limit_exact(self) -> None:
        # (2^21-1)*2^32 + 2^32-1 = 2^53-1
        assert priority_score(2097151, 4294967295) == 9007199254740991
        assert priority_score(2097151, 1) == 9007194959773697  # (2^21-1)*2^32 + 1

    def test_above_limit_rounds(self) -> None:
        # 2^21 * 2^32 = 2^53; +1 is a tie and rounds to even (2^53); +3 rounds up to 2^53+4
        assert priority_score(2097152, 1) == 9007199254740992
        assert priority_score(2097152, 2) == 9007199254740994  # 2^53+2 exact (even)
        assert priority_score(2097152, 3) == 9007199254740996
        # counters 1 and 2^32 (wraps to 0) both land on 2^53: FIFO is lost above the limit
        assert priority_score(2097152, 4294967296) == 9007199254740992


class TestNextWake:
    def test_fractional(self) -> None:
        # §4: head F*S+1 gives 1700000005000 + 1/4096
        assert next_wake(6963200020480001) == Fraction(6963200020480001, 4096)
        assert next_wake(6963200020480001) == 1700000005000 + Fraction(1, 4096)
        assert next_wake(6963200020480001) != 1700000005000

    def test_integral(self) -> None:
        assert next_wake(6963200020480000) == 1700000005000

    def test_reply_truncates(self) -> None:
        assert next_wake_reply(6963200020480001) == 1700000005000
        assert next_wake_reply(6963200020484095) == 1700000005000  # 4095/4096 truncated
        assert next_wake_reply(6963200020480000) == 1700000005000

    def test_reply_not_raw_head(self) -> None:
        # PR #204: the head must be divided by 4096
        # 1590182760000*4096 = 6513388584960000, remainder 82
        assert next_wake_reply(6513388584960082) == 1590182760000


# --- properties stated from the protocol -------------------------------------------------


@given(timestamp=st.integers(0, 2**40), delay=st.integers(1, 2**40 - 1))
def test_empty_band_score_recovers_fire(timestamp: int, delay: int) -> None:
    # §3: for F < 2^41, floor(score/4096) == F and the first job is at position 0
    fire = timestamp + delay
    placed = delayed_score([], timestamp, delay)
    assert placed.fire == fire
    assert placed.score // 4096 == fire
    assert placed.score % 4096 == 0


@given(timestamp=st.integers(0, 2**41 - 1), delay=st.integers(-(2**40), 0))
def test_non_positive_delay_uses_timestamp(timestamp: int, delay: int) -> None:
    placed = delayed_score([], timestamp, delay)
    assert placed.fire == timestamp
    assert placed.score == timestamp * 4096


@given(
    fire=st.integers(1, 2**41 - 2),
    k=st.integers(1, 4096),
    below=st.lists(st.integers(1, 4096), max_size=5),
    above=st.lists(st.integers(0, 4095), max_size=5),
)
def test_kth_job_in_band_gets_position_k_minus_1(
    fire: int, k: int, below: list[int], above: list[int]
) -> None:
    # §3: jobs 1..4096 in one band get positions 0..4095; neighbour bands do not count
    floor = fire * 4096
    existing = [floor + i for i in range(k - 1)]
    existing += [floor - b for b in below]  # band fire-1 (or lower)
    existing += [(fire + 1) * 4096 + a for a in above]  # band fire+1
    placed = delayed_score(existing, fire, 0)
    assert placed.score == floor + k - 1
    assert placed.score // 4096 == fire


# Each example scans a full band of 4096+ scores: slow on a loaded machine, and the deadline
# is no part of the fact checked.
@settings(deadline=None)
@given(fire=st.integers(0, 2**41 - 1), extra=st.integers(0, 50))
def test_saturated_band_stays_at_ceiling(fire: int, extra: int) -> None:
    # §3: job 4097 and later also get the ceiling (F+1)*4096-1
    ceiling = (fire + 1) * 4096 - 1
    existing = [fire * 4096 + i for i in range(4096)] + [ceiling] * extra
    assert delayed_score(existing, fire, 0).score == ceiling


@given(now=st.integers(0, 2**41 - 2))
def test_promote_bound_covers_whole_band(now: int) -> None:
    # §6: bound is (now+1)*4096-1; a score (now+1)*4096 (F = now+1) is excluded
    bound = promote_bound(now)
    assert bound == (now + 1) * 4096 - 1
    assert bound // 4096 == now
    assert bound % 4096 == 4095


@given(
    p1=st.integers(1, 2**21 - 1),
    p2=st.integers(1, 2**21 - 1),
    c1=st.integers(1, 2**32 - 1),
    c2=st.integers(1, 2**32 - 1),
)
def test_priority_order_across_tiers(p1: int, p2: int, c1: int, c2: int) -> None:
    # §5: lower P pops first; within a tier, lower c first (below the wrap and the limit)
    s1, s2 = priority_score(p1, c1), priority_score(p2, c2)
    if (p1, c1) < (p2, c2):
        assert s1 < s2
    elif (p1, c1) > (p2, c2):
        assert s1 > s2
    else:
        assert s1 == s2
    # the tier and counter are recoverable exactly while P <= 2^21-1
    assert divmod(s1, 2**32) == (p1, c1)


@given(head=st.integers(0, 2**53))
def test_next_wake_is_exact_division(head: int) -> None:
    # §4: marker "1" = head/4096 with no floor; the reply truncates it
    wake = next_wake(head)
    assert wake * 4096 == head
    reply = next_wake_reply(head)
    assert reply <= wake < reply + 1
    assert isinstance(reply, int)
